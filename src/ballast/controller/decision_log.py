"""The leader's record of its decisions: each one as a JSON-ready entry (what, which bundle,
from and to which broker, why, and what led to it), the last few hundred kept for the
console and the tests, every one told to the listeners (the simulator, the load history)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ballast.clock import Clock

DecisionListener = Callable[[Mapping[str, Any]], None]
CycleListener = Callable[[Mapping[str, Any]], None]
"""Hears the outcome of every shedding cycle of a leader (:func:`cycle_entry`)."""


def cycle_entry(at_ms: int, leader: str, moves: int, stats: Mapping[str, Any]) -> dict[str, Any]:
    """One shedding cycle for its listeners: when, whose, how many moves it proposed, and its
    outcome as the cycle reports it (``Success``, or ``Skip`` with the reason and detail —
    the strategy's own where it gave one: ``HitCount``, ``CoolDown``, ``NoLoadData``...), so
    that a cycle that moved nothing says why."""
    return {
        "at": at_ms,
        "leader": leader,
        "moves": moves,
        "outcome": str(stats.get("outcome", "")),
        "reason": str(stats.get("reason", "")),
        "detail": str(stats.get("detail", "")),
    }


KEPT = 1000  # at most this many entries; the older half goes when it is reached


class DecisionLog:
    """Recent decisions, oldest first, and the listeners that hear every one."""

    def __init__(
        self,
        clock: Clock,
        listeners: Sequence[DecisionListener] = (),
        cycle_listeners: Sequence[CycleListener] = (),
    ) -> None:
        self._clock = clock
        self._listeners = listeners
        self._cycle_listeners = cycle_listeners
        self.entries: list[dict[str, Any]] = []

    def cycle(self, leader: str, moves: int, stats: Mapping[str, Any]) -> None:
        """Tell the cycle listeners of a shedding cycle (:func:`cycle_entry`)."""
        if self._cycle_listeners:
            entry = cycle_entry(self._clock.wall_ms(), leader, moves, stats)
            for listener in self._cycle_listeners:
                listener(entry)

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
