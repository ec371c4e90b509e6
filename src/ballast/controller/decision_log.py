"""The leader's record of its decisions: each one as a JSON-ready entry (what, which bundle,
from and to which broker, why, and what led to it), the last few hundred kept for the
console and the tests, every one told to the listeners (the simulator, the load history)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ballast.clock import Clock

DecisionListener = Callable[[Mapping[str, Any]], None]

KEPT = 1000  # at most this many entries; the older half goes when it is reached


class DecisionLog:
    """Recent decisions, oldest first, and the listeners that hear every one."""

    def __init__(self, clock: Clock, listeners: Sequence[DecisionListener] = ()) -> None:
        self._clock = clock
        self._listeners = listeners
        self.entries: list[dict[str, Any]] = []

    def record(
        self,
        action: str,
        bundle: str,
        source: str | None,
        destination: str | None,
        reason: str,
        *,
        origin: str,
    ) -> None:
        """Record a decision (``action``: assign, transfer, unload, split) and tell the
        listeners. ``origin`` says what led to it: ``lookup`` (placing an unowned bundle),
        ``failover`` (its broker left), ``shedding``, ``split`` (automatic), ``drain`` (a
        broker stopping) or ``admin``."""
        entry = {
            "at": self._clock.wall_ms(),
            "action": action,
            "bundle": bundle,
            "broker": source,
            "destination": destination,
            "reason": reason,
            "origin": origin,
        }
        self.entries.append(entry)
        if len(self.entries) > KEPT:
            del self.entries[: KEPT // 2]  # in place: readers hold this very list
        for listener in self._listeners:
            listener(entry)
