"""The leader's history recorder: one write in flight at most, failures counted, never
raised."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ballast.controller.history import HistoryRecorder, HistorySink, inline
from ballast.model.loaddata import LoadData


async def test_a_cycle_during_a_slow_write_is_skipped_not_queued() -> None:
    release = asyncio.Event()
    written: list[int] = []

    async def slow(call: Callable[[], Any]) -> Any:
        await release.wait()
        return call()

    recorder = HistoryRecorder(
        HistorySink(write=lambda _data, ms: written.append(ms), run_blocking=slow)
    )
    recorder.record(LoadData(), 1)
    recorder.record(LoadData(), 2)  # the first is still being written
    release.set()
    await recorder.close()
    recorder.record(LoadData(), 3)
    await recorder.close()
    assert written == [1, 3]
    assert (recorder.written, recorder.skipped, recorder.failed) == (2, 1, 0)


async def test_a_failed_write_is_counted() -> None:
    def broken(_data: LoadData, _ms: int) -> None:
        raise PermissionError("read-only file system")

    recorder = HistoryRecorder(HistorySink(write=broken, run_blocking=inline))
    recorder.record(LoadData(), 1)
    await recorder.close()
    assert (recorder.written, recorder.failed) == (0, 1)
