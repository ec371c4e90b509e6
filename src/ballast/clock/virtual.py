"""Virtual time: an asyncio event loop whose clock jumps to the next timer whenever every task
is waiting, so minutes of cluster time run in milliseconds, deterministically.

What runs next depends only on what was scheduled, not on timers that merely pass by: the
clock lands exactly on the timer it jumps to (not on a sum of jumps, which drifts by a rounding
error from one sequence of jumps to another), and timers due at the same instant fire in the
order they were set (asyncio's heap leaves their order to its shape, which every other timer
changes). So a reader that wakes now and then, such as the simulator's invariant checker,
leaves the run it watches as it was.

Concurrency contract: one thread. The loop still polls its selector (without blocking) before
each jump, so callbacks from other threads (``call_soon_threadsafe``) and real sockets keep
working; but anything that waits on real time (a server in another process, a thread that
sleeps) races ahead of virtual time — run such code on a real loop instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import selectors
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar, TypeVarTuple

from ballast.clock.base import Cancellable

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

DEFAULT_START_WALL_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z: a fixed, readable origin
# A jump ends this close to the next timer only by rounding (now + (when - now) != when).
_LANDING = 1e-6


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


class _SequencedTimer(asyncio.TimerHandle):
    """A timer that sorts after the timers due at the same instant that were set before it."""

    __slots__ = ("_sequence",)

    def __init__(
        self,
        when: float,
        callback: Callable[..., object],
        args: Sequence[Any],
        loop: asyncio.AbstractEventLoop,
        context: contextvars.Context | None,
        sequence: int,
    ) -> None:
        super().__init__(when, callback, args, loop, context)
        self._sequence = sequence

    def __lt__(self, other: asyncio.TimerHandle) -> bool:
        if isinstance(other, _SequencedTimer):
            return (self.when(), self._sequence) < (other.when(), other._sequence)
        return super().__lt__(other)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop on virtual time, starting at ``0.0`` seconds (wall ``start_wall_ms``)."""

    def __init__(self, start_wall_ms: int = DEFAULT_START_WALL_MS) -> None:
        selector = _JumpingSelector(selectors.DefaultSelector())
        super().__init__(selector)
        selector.loop = self
        self._virtual_now = 0.0
        self._timers_set = 0
        self.start_wall_ms = start_wall_ms
        self.jumps = 0

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move virtual time forward (the selector does this when every task waits)."""
        if seconds < 0:
            raise ValueError("virtual time cannot go back")
        target = self._virtual_now + seconds
        scheduled: list[asyncio.TimerHandle] = self._scheduled  # type: ignore[attr-defined]
        if scheduled and abs(scheduled[0].when() - target) <= _LANDING:
            target = scheduled[0].when()  # asyncio asked for the gap to it: land on it exactly
        self._virtual_now = target
        self.jumps += 1

    def call_at(
        self,
        when: float,
        callback: Callable[[*Ts], object],
        *args: *Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        """asyncio's ``call_at`` (which ``call_later`` and ``sleep`` use), with timers due at
        the same instant kept in the order they were set."""
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()  # type: ignore[attr-defined]
        self._timers_set += 1
        timer = _SequencedTimer(when, callback, args, self, context, self._timers_set)
        heapq.heappush(self._scheduled, timer)  # type: ignore[attr-defined]
        timer._scheduled = True  # type: ignore[attr-defined]  # counted if cancelled
        return timer


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
