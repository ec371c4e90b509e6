"""A load history's broker churn as scenario events: a broker that leaves the history stops
(gracefully: its bundles are drained first, as a broker shut down on purpose does), and one
that joins starts, at the time of the first snapshot that shows it.

Ownership is not copied, so a simulated broker stands for a source broker only by its place:
the cluster's first brokers are the first snapshot's, in name order, and each broker that
joins later is the next one created. A selection of brokers by index (creation order, as in
``[[events]]``) then names the simulated broker of a source broker that leaves. The
scenario's own events take part in that order: brokers they add take the next indexes too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from ballast.broker.host_usage import BrokerCapacity
from ballast.sim.events import AddBrokers, BrokerSelection, Event, StopBrokers

# A joining broker's own capacity, or None for the cluster's.
CapacityOf = Callable[[str], BrokerCapacity | None]


@dataclass(frozen=True, slots=True)
class BrokerChange:
    """The brokers that joined and left the history's cluster at one snapshot, ``at_s``
    seconds after the first."""

    at_s: float
    joined: tuple[str, ...]
    left: tuple[str, ...]


def broker_changes(
    times_s: Sequence[float], present: Sequence[frozenset[str]]
) -> list[BrokerChange]:
    """The changes between consecutive snapshots (``present[i]``: the brokers that reported at
    ``times_s[i]``); a broker missing from one snapshot leaves and joins again."""
    changes = []
    for at_s, before, now in zip(times_s[1:], present, present[1:], strict=False):
        joined, left = tuple(sorted(now - before)), tuple(sorted(before - now))
        if joined or left:
            changes.append(BrokerChange(at_s, joined, left))
    return changes


def _cluster_capacity(_name: str) -> BrokerCapacity | None:
    return None


def with_churn(
    initial: Sequence[str],
    changes: Sequence[BrokerChange],
    events: Sequence[Event],
    capacity_of: CapacityOf = _cluster_capacity,
) -> tuple[Event, ...]:
    """The scenario's ``events`` (sorted by time) with the churn's, in time order (on a tie,
    the scenario's first, then the churn's starts before its stops, so that brokers replaced
    all at once have somewhere to drain to). ``initial``: the first snapshot's brokers, the
    cluster's brokers 0, 1, ... in name order; ``capacity_of``: a joining broker's
    capacity (by default the cluster's)."""
    index_of = {name: index for index, name in enumerate(sorted(initial))}
    created = len(index_of)
    merged: list[Event] = []
    pending = list(events)
    for change in changes:
        while pending and pending[0].at_s <= change.at_s:
            event = pending.pop(0)
            if isinstance(event.action, AddBrokers):
                created += event.action.count
            merged.append(event)
        gone = tuple(sorted(index_of.pop(name) for name in change.left if name in index_of))
        if change.joined:
            # in name order, as they take their indexes; alike brokers started by one event
            for capacity, alike in groupby(change.joined, key=capacity_of):
                merged.append(Event(change.at_s, AddBrokers(len(list(alike)), capacity)))
            for name in change.joined:
                index_of[name] = created
                created += 1
        if gone:
            merged.append(Event(change.at_s, StopBrokers(BrokerSelection(indexes=gone), True)))
    return (*merged, *pending)
