"""A scenario's timed events: what each does (frozen dataclasses, parsed from ``[[events]]`` by
:mod:`ballast.sim.scenario` and carried out by the runner) and the check that refuses, when a
scenario is read, an event the run could not carry out as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ballast.broker.host_usage import BrokerCapacity
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.schema import ScenarioError


@dataclass(frozen=True, slots=True)
class BrokerSelection:
    """Which brokers an event acts on: explicit indexes (creation order, from 0), or
    ``count`` brokers picked by ``pick`` — ``first``/``last`` (by creation), ``busiest``
    (most load now), ``random`` (the scenario's seed) — or ``all``."""

    indexes: tuple[int, ...] = ()
    count: int = 0
    pick: str = "last"

    @property
    def everyone(self) -> bool:
        return self.pick == "all"


PICKS = ("first", "last", "busiest", "random")
"""What a scenario's ``pick`` may say (``all`` is a selection of its own, never a pick)."""


@dataclass(frozen=True, slots=True)
class AddBrokers:
    count: int
    capacity: BrokerCapacity | None = None


@dataclass(frozen=True, slots=True)
class StopBrokers:
    """Stop brokers for good: gracefully (controlled shutdown: drained first) or not."""

    brokers: BrokerSelection
    graceful: bool = True


@dataclass(frozen=True, slots=True)
class CrashBrokers:
    """``kill -9``: the session expires after the timeout; with ``restart_after`` the broker
    comes back (a new incarnation) that long after the crash."""

    brokers: BrokerSelection
    restart_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class RestartBrokers:
    """Restart brokers one after the other, ``interval_s`` apart (0: all at once): each stops
    (gracefully or not) and starts again ``down_s`` later."""

    brokers: BrokerSelection
    graceful: bool = True
    down_s: float = 10.0
    interval_s: float = 0.0


@dataclass(frozen=True, slots=True)
class CreateNamespace:
    namespace: NamespaceSpec


@dataclass(frozen=True, slots=True)
class CreateTopics:
    """``count`` more topics of a namespace: publishing as the namespace's spec says, or, when
    ``idle``, counted as topics with their connections but carrying no traffic."""

    namespace: str
    count: int
    idle: bool = False


@dataclass(frozen=True, slots=True)
class ScaleRates:
    """Multiply the rates of some topics by ``factor`` and their message sizes by
    ``size_factor`` from now on: of a namespace (or all), optionally only the ``share`` most
    popular, or only those served now by the selected brokers (a hot broker)."""

    factor: float
    namespace: str | None = None
    share: float = 1.0
    brokers: BrokerSelection | None = None
    size_factor: float = 1.0


Action = (
    AddBrokers | StopBrokers | CrashBrokers | RestartBrokers | CreateNamespace | CreateTopics
) | ScaleRates


@dataclass(frozen=True, slots=True)
class Event:
    at_s: float
    action: Action

    @property
    def kind(self) -> str:
        return ACTION_NAMES[type(self.action)]


ACTION_NAMES: dict[type, str] = {
    AddBrokers: "add_brokers",
    StopBrokers: "stop_brokers",
    CrashBrokers: "crash_brokers",
    RestartBrokers: "restart_brokers",
    CreateNamespace: "create_namespace",
    CreateTopics: "create_topics",
    ScaleRates: "scale_rates",
}
EVENT_KINDS = tuple(ACTION_NAMES.values())
"""The keys of an ``[[events]]`` table that say what it does: exactly one per event."""


# At most this many brokers running at once, and topics in all, in a run: past them a scenario
# is a typo, not a cluster. A simulated broker holds about 1.3 MB and a step's work grows with
# the square of their count (each broker follows every other's reports); a topic about 2.7 KB
# (docs/simulator.md).
MAX_BROKERS = 10_000
MAX_TOPICS = 10_000_000


def check_events(
    events: Sequence[Event],
    brokers: int | None,
    namespaces: Iterable[str],
    end_s: float,
    *,
    past_end_allowed: bool = False,
) -> None:
    """Refuse (:class:`ScenarioError`) the events a run could not carry out as written: one
    at or after the end of the run (``end_s``, its last step: the run records it and stops),
    one on a namespace that does not exist by then, and a selection of more brokers than can be
    running then or of an index no broker has yet (the run picks among the running brokers
    only). The counts are upper bounds: a broker restarting, or crashed to come back, counts
    as running, and the brokers a count picked are unknown until the run, so brokers stopped
    by count and by index (or ``all``) may be the same ones — only a selection that cannot be
    met is refused, and so are adds that could make more than ``MAX_BROKERS`` run at once.
    ``brokers`` None: the brokers are not known from the events alone (a replayed history's
    churn adds and stops more), so selections are not checked. ``past_end_allowed``: events
    at or after the end are passed over instead (a run cut short leaves them out)."""
    started = brokers if brokers is not None else 0
    # The fewest brokers that can be stopped for good by then. A count picks among the
    # running brokers, so it adds to those already gone; indexes may name brokers a count
    # picked, so they add only what no count can have covered.
    gone = 0
    gone_by_index: set[int] = set()  # stopped for good by index, or by "all"

    def running() -> int:
        return started - gone

    known = set(namespaces)
    order = sorted(range(len(events)), key=lambda i: events[i].at_s)  # stable: file order
    for i in order:
        event = events[i]
        when = f"{event.at_s:g} s"
        if event.at_s >= end_s:
            if past_end_allowed:
                continue
            raise ScenarioError(f"events[{i}].at: {when} is not before the run's end ({end_s:g} s)")
        action = event.action
        if isinstance(action, CreateNamespace):
            if action.namespace.name in known:
                raise ScenarioError(
                    f"events[{i}].create_namespace.name: namespace {action.namespace.name} "
                    f"exists already at {when}"
                )
            known.add(action.namespace.name)
            continue
        namespace = action.namespace if isinstance(action, CreateTopics | ScaleRates) else None
        if namespace is not None and namespace not in known:
            raise ScenarioError(
                f"events[{i}].{event.kind}.namespace: no namespace {namespace} at {when} "
                f"(namespaces: {', '.join(sorted(known)) or 'none'})"
            )
        if isinstance(action, AddBrokers):
            started += action.count
            if brokers is not None and running() > MAX_BROKERS:
                raise ScenarioError(
                    f"events[{i}].add_brokers: up to {running():,} brokers would be running at "
                    f"{when}; a run has at most {MAX_BROKERS:,}"
                )
            continue
        if isinstance(action, StopBrokers | CrashBrokers | RestartBrokers):
            selection: BrokerSelection | None = action.brokers
            where = f"events[{i}].{event.kind}"
        elif isinstance(action, ScaleRates):
            selection, where = action.brokers, f"events[{i}].scale_rates.brokers"
        else:
            continue
        if selection is None or brokers is None:
            continue
        for_good = isinstance(action, StopBrokers) or (
            isinstance(action, CrashBrokers) and action.restart_after_s is None
        )
        if selection.everyone:
            if for_good:
                gone_by_index.update(range(started))
                gone = started
            continue
        if selection.indexes:
            late = [index for index in selection.indexes if index >= started]
            if late:
                raise ScenarioError(
                    f"{where}: no broker has index {late[0]} at {when} ({started} started by "
                    f"then, indexes 0 to {started - 1})"
                )
            if for_good:  # one already down is passed over by the run, and counted once here
                gone_by_index.update(selection.indexes)
                gone = max(gone, len(gone_by_index))
            continue
        if selection.count > running():
            raise ScenarioError(
                f"{where}: {selection.count} brokers, but at most {running()} are running at {when}"
            )
        if for_good:
            gone += selection.count
