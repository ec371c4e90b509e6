"""Virtual time: an asyncio event loop whose clock jumps to the next timer whenever every task
is waiting, so minutes of cluster time run in milliseconds, deterministically.

Concurrency contract: one thread. The loop still polls its selector (without blocking) before
each jump, so callbacks from other threads (``call_soon_threadsafe``) and real sockets keep
working; but anything that waits on real time (a server in another process, a thread that
sleeps) races ahead of virtual time — run such code on a real loop instead.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from ballast.clock.base import Cancellable

T = TypeVar("T")

DEFAULT_START_WALL_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z: a fixed, readable origin


class _JumpingSelector(selectors.BaseSelector):
    """Wraps the loop's real selector. ``select`` never blocks while timers are pending:
    with no I/O ready it advances the loop's virtual time by the timeout instead."""

    def __init__(self, real: selectors.BaseSelector) -> None:
        self._real = real
        self.loop: VirtualTimeLoop | None = None

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            # Nothing scheduled at all: only another thread or real I/O can wake us.
            return self._real.select(None)
        assert self.loop is not None
        self.loop.advance(timeout)
        return []

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop on virtual time, starting at ``0.0`` seconds (wall ``start_wall_ms``)."""

    def __init__(self, start_wall_ms: int = DEFAULT_START_WALL_MS) -> None:
        selector = _JumpingSelector(selectors.DefaultSelector())
        super().__init__(selector)
        selector.loop = self
        self._virtual_now = 0.0
        self.start_wall_ms = start_wall_ms
        self.jumps = 0

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move virtual time forward (the selector does this when every task waits)."""
        if seconds < 0:
            raise ValueError("virtual time cannot go back")
        self._virtual_now += seconds
        self.jumps += 1


class VirtualClock:
    """The :class:`~ballast.clock.base.Clock` of a :class:`VirtualTimeLoop`."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._loop = loop

    def monotonic(self) -> float:
        return self._loop.time()

    def wall_ms(self) -> int:
        return self._loop.start_wall_ms + round(self._loop.time() * 1000)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        return self._loop.call_later(delay, callback)


def run_virtual(
    main: Callable[[VirtualClock], Coroutine[Any, Any, T]],
    *,
    start_wall_ms: int = DEFAULT_START_WALL_MS,
) -> T:
    """Run ``main(clock)`` to completion on a fresh virtual-time loop, then cancel what is left
    and close the loop."""
    loop = VirtualTimeLoop(start_wall_ms)
    try:
        return loop.run_until_complete(main(VirtualClock(loop)))
    finally:
        _cancel_all(loop)
        loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
