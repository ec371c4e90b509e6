"""The clock every Ballast component runs on: monotonic time for timers and deadlines, wall
time (epoch milliseconds) for timestamps that Pulsar stores, sleeping, and scheduling.

Components receive a :class:`Clock` as a constructor argument and never read the system clock
themselves (STYLE 4), so the same code runs on real time and on virtual time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Time as a component sees it. Must be used from the event loop's thread."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (the event loop's time)."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch, for stored timestamps (``lastUpdate``)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for ``seconds`` of this clock's time."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        """Run ``callback`` on the event loop after ``delay`` seconds of this clock's time."""
        ...


class SystemClock:
    """Real time: the running event loop's monotonic time and the system wall clock."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        return asyncio.get_running_loop().call_later(delay, callback)


def wall_clock_ms() -> int:
    """The system wall clock in epoch milliseconds, for command-line shells outside any loop
    (``ballast decide --now-ms`` default)."""
    return time.time_ns() // 1_000_000
