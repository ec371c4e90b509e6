"""The leader's history recorder: one write in flight at most, failures counted, never
raised."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from typing import Any

import pytest

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


async def test_a_failed_write_is_counted_and_told_in_a_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The file system's refusal is one line with its reason and path (it was a traceback of
    three chained exceptions, every cycle); another failure keeps its traceback."""

    def refused(_data: LoadData, _ms: int) -> None:
        raise PermissionError(errno.EROFS, "Read-only file system", "/h/brokers")

    recorder = HistoryRecorder(HistorySink(write=refused, run_blocking=inline))
    recorder.record(LoadData(), 1)
    await recorder.close()
    assert (recorder.written, recorder.failed) == (0, 1)
    (line,) = caplog.records
    assert line.getMessage() == (
        "writing the history snapshot at 1 failed: Read-only file system: /h/brokers"
    )
    assert line.exc_info is None

    def broken(_data: LoadData, _ms: int) -> None:
        raise ValueError("a bug of the writer")

    caplog.clear()
    other = HistoryRecorder(HistorySink(write=broken, run_blocking=inline))
    other.record(LoadData(), 2)
    await other.close()
    assert other.failed == 1 and caplog.records[0].exc_info is not None
