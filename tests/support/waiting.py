"""Waiting on conditions instead of sleeping: poll on the test's clock (virtual or real)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ballast.clock import Clock


async def eventually(
    condition: Callable[[], bool] | Callable[[], Awaitable[bool]],
    clock: Clock,
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.01,
    what: str = "condition",
) -> None:
    """Return once ``condition()`` holds; AssertionError after ``timeout_s`` of clock time."""
    deadline = clock.monotonic() + timeout_s
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if clock.monotonic() >= deadline:
            raise AssertionError(f"{what} did not hold within {timeout_s} s")
        await clock.sleep(interval_s)
