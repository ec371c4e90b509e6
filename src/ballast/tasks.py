"""Named, supervised asyncio tasks (STYLE 11): every long-running concern runs in one task with
a name, and its owner learns when it dies instead of the error vanishing in a log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

DeathHandler = Callable[[str, BaseException], None]
T = TypeVar("T")


def spawn(
    name: str,
    coro: Coroutine[Any, Any, None],
    on_death: DeathHandler | None = None,
) -> asyncio.Task[None]:
    """Start ``coro`` as task ``name``; if it ends with an exception (not a cancellation),
    log it and call ``on_death(name, exc)``."""
    task = asyncio.get_running_loop().create_task(coro, name=name)

    def finished(done: asyncio.Task[None]) -> None:
        if done.cancelled():
            return
        exc = done.exception()
        if exc is None:
            return
        if not isinstance(exc, KeyboardInterrupt):  # Ctrl-C: the process is stopping, not failing
            log.error("task %s died", name, exc_info=exc)
        if on_death is not None:
            on_death(name, exc)

    task.add_done_callback(finished)
    return task


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel tasks and wait until they have finished (ignoring their outcome)."""
    live = [t for t in tasks if t is not None and not t.done()]
    for task in live:
        task.cancel()
    if live:
        await asyncio.gather(*live, return_exceptions=True)


async def gather_or_cancel(coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """The results of ``coros``, run concurrently, in their order. The first to fail cancels
    the others (and waits for them) and its exception is raised as it is, not in a group:
    nothing is left running behind the caller."""
    tasks = [asyncio.ensure_future(coro) for coro in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        await cancel_and_wait(*tasks)
        raise
