"""The leader's load-history recorder: one snapshot of its view of the cluster per shedding
cycle, handed to a writer that runs off the event loop (setting ``loadBalancerHistoryPath``).

The controller knows nothing of the history's format: the writer — a blocking function of the
leader's :class:`~ballast.model.loaddata.LoadData` and the snapshot time — is injected from
above (the command-line shells build it from :mod:`ballast.pipeline.history`), and so is the
way to run blocking work (a thread by default; tests run it inline on virtual time).

Concurrency contract: :meth:`HistoryRecorder.record` is called from the event loop and returns
at once; at most one write is in flight. A cycle that comes while the previous write is still
running is skipped (counted and logged) rather than queued, so a slow disk never makes the
leader's memory grow. A failed write is logged and counted; it never reaches the controller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ballast.model.loaddata import LoadData

log = logging.getLogger(__name__)

T = TypeVar("T")

HistoryWriter = Callable[[LoadData, int], Any]
"""Write one snapshot (the leader's load data at ``snapshot_ms``, epoch ms). Blocking."""

BlockingRunner = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Run a blocking call without blocking the event loop and await its result."""


async def in_thread(call: Callable[[], T]) -> T:
    """The default :data:`BlockingRunner`: the loop's default thread pool."""
    return await asyncio.to_thread(call)


async def inline(call: Callable[[], T]) -> T:
    """A :data:`BlockingRunner` that runs the call on the loop (tests on virtual time)."""
    return call()


@dataclass(frozen=True, slots=True)
class HistorySink:
    """What a broker passes to each of its controllers: the writer and how to run it."""

    write: HistoryWriter
    run_blocking: BlockingRunner = in_thread


class HistoryRecorder:
    """Records the leader's snapshots for one leadership term (see the module docstring)."""

    def __init__(self, sink: HistorySink) -> None:
        self.sink = sink
        self.written = 0
        self.skipped = 0
        self.failed = 0
        self._pending: asyncio.Task[None] | None = None

    def record(self, load_data: LoadData, snapshot_ms: int) -> None:
        """Start writing one snapshot, unless the previous one is still being written."""
        if self._pending is not None and not self._pending.done():
            self.skipped += 1
            log.warning(
                "history snapshot at %d skipped: the previous write is running", snapshot_ms
            )
            return
        self._pending = asyncio.get_running_loop().create_task(
            self._write(load_data, snapshot_ms), name="history-write"
        )

    async def _write(self, load_data: LoadData, snapshot_ms: int) -> None:
        write = self.sink.write
        try:
            await self.sink.run_blocking(lambda: write(load_data, snapshot_ms))
        except OSError as exc:  # the file system refused: its reason is the whole story
            self.failed += 1
            log.error(
                "writing the history snapshot at %d failed: %s%s",
                snapshot_ms,
                exc.strerror or exc,
                f": {exc.filename}" if exc.filename else "",
            )
        except Exception:  # any other failure of the writer: log it whole, keep leading
            self.failed += 1
            log.exception("writing the history snapshot at %d failed", snapshot_ms)
        else:
            self.written += 1

    async def close(self) -> None:
        """Wait for the write in flight, if any (it is never cut half-way)."""
        if self._pending is not None:
            await asyncio.shield(self._pending)
