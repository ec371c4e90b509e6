"""Scenario files: a cluster, its workload, timed events and the outcome expected, in TOML
(read with the standard library's ``tomllib``). The full schema, with an example of every key,
is in ``docs/simulator.md``; :func:`parse_scenario` validates a file and names the key of the
first problem (``ScenarioError: events[2].add_brokers: must be at least 1``).

Durations are seconds (a number) or text with a unit: ``"90s"``, ``"5m"``, ``"2h"``, ``"1d"``,
``"1h30m"``. Every value is parsed here, once, into frozen dataclasses; nothing downstream
reads the TOML again.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ballast.broker.host_usage import BrokerCapacity
from ballast.model.bundles import MAX_CREATED_BUNDLES
from ballast.model.config import SETTINGS_BY_KEY, ConfigError, nearest_key
from ballast.model.config.loader import parse_value
from ballast.model.naming import InvalidNameError, NamespaceName, validate_tenant
from ballast.sim.churn import BrokerChange, with_churn
from ballast.sim.copy import (
    BrokerLimits,
    CopiedLoad,
    CopySpec,
    copied_namespace_name,
    copy_load,
    is_history,
    read_source,
)
from ballast.sim.events import (
    MAX_BROKERS,
    MAX_TOPICS,
    CreateNamespace,
    CreateTopics,
    Event,
    check_events,
)
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.processes import ProcessSpec, parse_process
from ballast.sim.scenario_events import parse_capacity, parse_event
from ballast.sim.schema import ScenarioError, Table

if TYPE_CHECKING:
    from ballast.sim.history_source import TopicGrowth

MAX_STEPS = 1_000_000
"""The most steps a run takes (a week at 1 s steps fits): each step is a round of reports and
measures, so a step far too small for its run would never end."""
MAX_SIZE_SIGMA = 5.0
"""The largest sigma of a namespace's log-normal message sizes (its median size is then
size * exp(-12.5), under a millionth of the mean)."""
MAX_DURATION_S = 366 * 86_400.0
"""The longest run: a year of cluster time. The brokers' own timers (reports, sessions) cost
about 4 µs of wall time per second of cluster time for each broker, whatever the step."""


@dataclass(frozen=True, slots=True)
class Expectations:
    """Outcomes a scenario test checks (None: not checked). ``final_*`` are measured at the
    end of the run; convergence is counted from the last event."""

    final_std_max: float | None = None
    final_ratio_max: float | None = None
    converged_within_s: float | None = None
    moves_max: int | None = None
    moves_min: int | None = None
    bounces_max: int | None = None
    new_brokers_loaded_within_cycles: int | None = None
    unowned_topic_seconds_max: float | None = None
    invariants: bool = True


@dataclass(frozen=True, slots=True)
class Scenario:
    """A whole scenario; see the module docstring."""

    name: str
    description: str
    duration_s: float
    step_s: float
    seed: int
    brokers: int
    capacity: BrokerCapacity
    namespaces: tuple[NamespaceSpec, ...]
    events: tuple[Event, ...] = ()
    settings: Mapping[str, object] = field(default_factory=dict)
    target_std: float = 0.05
    expect: Expectations = Expectations()
    tenant: str = "sim"
    notes: tuple[str, ...] = ()
    # the first brokers' own capacities (a copied cluster of mixed machines), by index
    capacities: tuple[BrokerCapacity, ...] = ()

    def capacity_of(self, index: int) -> BrokerCapacity:
        """The capacity of the broker started ``index``-th (from 0) at the start."""
        return self.capacities[index] if index < len(self.capacities) else self.capacity

    def settings_overrides(self) -> list[str]:
        """The ``[settings]`` table as ``key=value`` overrides."""
        return [f"{key}={setting_text(value)}" for key, value in self.settings.items()]


def setting_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _processes(table: Table) -> tuple[ProcessSpec, ...]:
    """A table's ``processes``: one process table or a list of them."""
    raw = table.raw("processes", [])
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise ScenarioError(f"{table.path('processes')}: expected a list of tables")
    return tuple(
        parse_process(Table(item, f"{table.path('processes')}[{i}]")) for i, item in enumerate(raw)
    )


@dataclass(frozen=True, slots=True)
class _Copied:
    """A ``[copy]`` read: the load, the notes for the user and, for a history replayed with
    its brokers, the first snapshot's brokers and their changes (:mod:`ballast.sim.churn`)."""

    load: CopiedLoad
    notes: tuple[str, ...]
    brokers: tuple[str, ...] = ()
    changes: tuple[BrokerChange, ...] = ()
    joiner_limits: Mapping[str, BrokerLimits] = field(default_factory=dict)
    growth: tuple[TopicGrowth, ...] = ()

    def replays_churn(self, brokers: int) -> bool:
        """Whether the history's brokers join and leave in the run: it has changes, and the
        cluster starts with its brokers (else their places would not match)."""
        return bool(self.changes) and brokers == len(self.brokers)


def _copy(table: Table, tenant: str, base_dir: Path | None) -> _Copied:
    """The ``[copy]`` table read and its source copied, with the notes for the user."""
    cluster = table.raw("cluster")
    if cluster is not None and not isinstance(cluster, str):
        raise ScenarioError(f"{table.path('cluster')}: expected a string")
    spec = CopySpec(
        source=table.text("source"),
        rate_multiplier=table.number("rate_multiplier", 1.0),
        popularity=table.number("popularity", 0.0),
        processes=_processes(table),
        capacity=table.flag("capacity", True),
        cluster=cluster,
        replay=table.flag("replay", True),
        replay_brokers=table.flag("replay_brokers", True),
    )
    table.finish()
    path = Path(spec.source).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    shown = str(path.resolve())
    if not is_history(path):
        for key in ("cluster", "replay", "replay_brokers"):
            if table.has(key):
                raise ScenarioError(f"{table.path(key)}: only for a load history source")
        parsed = read_source(path)
        copied = copy_load(parsed.snapshot, spec, tenant)
        return _Copied(copied, (*copied.notes(shown), *parsed.warnings))
    if not spec.replay and table.has("replay_brokers"):
        # without the replay the history's first snapshot is copied: no churn to replay
        raise ScenarioError(f"{table.path('replay_brokers')}: needs replay = true")
    # Imported here: the history reader brings pyarrow and PySpark's types (a second to
    # load), which only a history source needs.
    from ballast.sim.history_source import read_history

    history = read_history(
        path, spec.cluster, replay=spec.replay, replay_brokers=spec.replay_brokers
    )
    copied = copy_load(history.snapshot, spec, tenant, history.series, history.size_series)
    span = f"{history.snapshots} snapshots of cluster {history.cluster} over {history.span_s:g} s"
    said = f"replaying {span}" if spec.replay else f"the first of {span}"
    return _Copied(
        copied,
        (*copied.notes(shown), said),
        history.brokers,
        history.changes,
        history.joiner_limits,
        history.topic_growth,
    )


def _with_churn(
    read: _Copied,
    brokers: int,
    events: tuple[Event, ...],
    own: Callable[[BrokerCapacity], BrokerCapacity],
) -> tuple[tuple[Event, ...], str]:
    """The events with the history's broker churn, and what to tell the user; none when the
    cluster does not start with the history's brokers (their places would not match). A
    joining broker unlike the cluster's gets its own capacity (``own``: the scenario's
    ``[cluster.capacity]`` keys over the fitted one)."""
    joined = sum(len(change.joined) for change in read.changes)
    left = sum(len(change.left) for change in read.changes)
    if not read.replays_churn(brokers):
        return events, (
            f"brokers joining ({joined}) and leaving ({left}) not replayed: the cluster starts "
            f"with {brokers} brokers, the history with {len(read.brokers)}"
        )
    # a joiner unlike the cluster's machine starts with its own; the others with the cluster's
    fit = read.load.fit
    unlike: dict[str, BrokerCapacity] = {}
    if fit is not None:
        for name, limits in read.joiner_limits.items():
            capacity = fit.of(limits)
            if capacity != fit.alike:
                unlike[name] = own(capacity)
    mixed = f" ({len(unlike)} with a capacity of their own)" if unlike else ""
    said = f"replaying the brokers' churn: {joined} joining{mixed}, {left} leaving (gracefully)"
    return with_churn(read.brokers, read.changes, events, unlike.get), said


def _with_growth(
    read: _Copied, tenant: str, events: tuple[Event, ...]
) -> tuple[tuple[Event, ...], str]:
    """The events with the history's topic growth (idle topics added to the copied bundles'
    namespaces: the bundles' rates stay the history's), and what to tell the user."""
    copied = {spec.name for spec in read.load.namespaces}
    growth = [
        (g.at_s, name, g.count)
        for g in read.growth
        if (name := copied_namespace_name(tenant, g.bundle)) in copied
    ]
    added = [Event(at_s, CreateTopics(name, count, idle=True)) for at_s, name, count in growth]
    said = (
        f"replaying the topics' growth: {sum(count for _, _, count in growth)} topics added "
        f"to {len({name for _, name, _ in growth})} bundles, without traffic of their own (a "
        "count that falls is not replayed)"
    )
    return tuple(sorted((*events, *added), key=lambda event: event.at_s)), said


def _namespace(table: Table, tenant: str) -> NamespaceSpec:
    name = table.text("name")
    if not name:
        raise ScenarioError(f"{table.path('name')}: is empty")
    if "/" not in name:
        name = f"{tenant}/{name}"
    try:
        parsed = NamespaceName.parse(name)
    except InvalidNameError as exc:
        raise ScenarioError(f"{table.path('name')}: {exc}") from None
    if not parsed.is_v2:
        raise ScenarioError(f"{table.path('name')}: give a namespace as name or tenant/name")
    if parsed.tenant != tenant:
        raise ScenarioError(f"{table.path('name')}: namespaces belong to tenant {tenant!r}")
    if parsed.is_heartbeat:  # the cluster refuses to create one, as Pulsar's admin API does
        raise ScenarioError(
            f"{table.path('name')}: {parsed} is a broker's heartbeat namespace (pulsar/HOST:PORT), "
            "which only that broker holds"
        )
    processes = _processes(table)
    group = table.raw("anti_affinity_group")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise ScenarioError(f"{table.path('anti_affinity_group')}: expected a group name")
    spec = NamespaceSpec(
        name=name,
        bundles=table.integer("bundles", 4, minimum=1, maximum=MAX_CREATED_BUNDLES),
        topics=table.integer("topics", minimum=0, maximum=MAX_TOPICS),
        rate=table.number("rate", 10.0),
        size=table.number("size", 1024.0, minimum=1.0),
        # Sizes are log-normal with mean `size`: past this sigma nearly every topic's size is
        # a vanishing fraction of a byte while a few carry the mean (the median is
        # size * exp(-sigma^2 / 2)).
        size_sigma=table.number("size_sigma", 0.0, maximum=MAX_SIZE_SIGMA),
        fan_out=table.number("fan_out", 1.0),
        producers=table.integer("producers", 1),
        consumers=table.integer("consumers", 1),
        popularity=table.number("popularity", 0.0),
        processes=processes,
        anti_affinity_group=group,
        rate_max=table.number("rate_max") if table.has("rate_max") else None,
    )
    table.finish()
    if spec.rate_max is not None and spec.rate_max < spec.rate:
        raise ScenarioError(f"{table.path('rate_max')}: must be at least rate ({spec.rate:g})")
    if spec.producers == 0 and spec.rate > 0:
        raise ScenarioError(
            f"{table.path('producers')}: topics without producers publish nothing, but rate "
            f"is {spec.rate:g} (set rate = 0, or producers to 1 or more)"
        )
    if spec.consumers == 0 and spec.fan_out > 0:
        raise ScenarioError(
            f"{table.path('consumers')}: topics without consumers deliver nothing, but "
            f"fan_out is {spec.fan_out:g} (set fan_out = 0, or consumers to 1 or more)"
        )
    return spec


def _check_topics(namespaces: tuple[NamespaceSpec, ...], events: list[Event]) -> None:
    """Refuse more than ``MAX_TOPICS`` topics in all: the namespaces' and those the events
    create."""
    total = sum(ns.topics for ns in namespaces)
    if total > MAX_TOPICS:
        raise ScenarioError(
            f"namespaces: {total:,} topics in all; a run has at most {MAX_TOPICS:,}"
        )
    for index, event in enumerate(events):
        action = event.action
        if isinstance(action, CreateNamespace):
            total += action.namespace.topics
        elif isinstance(action, CreateTopics):
            total += action.count
        if total > MAX_TOPICS:
            raise ScenarioError(
                f"events[{index}].{event.kind}: {total:,} topics in all with it; a run has at "
                f"most {MAX_TOPICS:,}"
            )


def _expectations(table: Table) -> Expectations:
    def optional_number(key: str) -> float | None:
        return table.number(key) if table.has(key) else None

    def optional_int(key: str) -> int | None:
        return table.integer(key) if table.has(key) else None

    expect = Expectations(
        final_std_max=optional_number("final_std_max"),
        final_ratio_max=optional_number("final_ratio_max"),
        converged_within_s=table.duration("converged_within")
        if table.has("converged_within")
        else None,
        moves_max=optional_int("moves_max"),
        moves_min=optional_int("moves_min"),
        bounces_max=optional_int("bounces_max"),
        new_brokers_loaded_within_cycles=optional_int("new_brokers_loaded_within_cycles"),
        unowned_topic_seconds_max=optional_number("unowned_topic_seconds_max"),
        invariants=table.flag("invariants", True),
    )
    table.finish()
    low, high = expect.moves_min, expect.moves_max
    if low is not None and high is not None and low > high:  # no run could meet both
        raise ScenarioError(f"{table.path('moves_min')}: {low} is above moves_max ({high})")
    return expect


def parse_scenario(
    data: Mapping[str, Any],
    *,
    name: str = "scenario",
    base_dir: Path | None = None,
    duration_s: float | None = None,
) -> Scenario:
    """A scenario from parsed TOML; raises :class:`ScenarioError` naming the bad key. A
    ``[copy]`` table reads its source (relative paths from ``base_dir``, the scenario file's
    directory). ``duration_s`` replaces the file's duration (``--duration``): the events it
    leaves out, at or after the new end, are left out with a note."""
    root = Table(dict(data), "")
    tenant = root.text("tenant", "sim")
    try:
        validate_tenant(tenant)
    except InvalidNameError as exc:
        raise ScenarioError(f"tenant: {exc}") from None
    copied: CopiedLoad | None = None
    notes: tuple[str, ...] = ()
    read: _Copied | None = None
    if root.has("copy"):
        read = _copy(root.sub("copy"), tenant, base_dir)
        copied, notes = read.load, read.notes
    cluster = root.sub("cluster")
    brokers = cluster.integer(
        "brokers", copied.brokers if copied else None, minimum=1, maximum=MAX_BROKERS
    )
    base = copied.capacity if copied and copied.capacity else BrokerCapacity()

    def own(fitted: BrokerCapacity) -> BrokerCapacity:
        return parse_capacity(cluster.sub("capacity"), fitted)  # the scenario's keys win

    capacity = own(base)
    capacities = copied.capacities if copied else ()
    if capacities and brokers != len(capacities):
        notes = (
            *notes,
            f"the source's brokers differ in capacity, but the cluster starts with {brokers} "
            f"brokers, the source with {len(capacities)}: every broker has the median one's",
        )
        capacities = ()
    capacities = tuple(own(c) for c in capacities)
    cluster.finish()
    raw_namespaces = root.raw("namespaces", [])
    if not isinstance(raw_namespaces, list):
        raise ScenarioError("namespaces: expected a list of tables ([[namespaces]])")
    namespaces = (copied.namespaces if copied else ()) + tuple(
        _namespace(Table(item, f"namespaces[{i}]"), tenant) for i, item in enumerate(raw_namespaces)
    )
    raw_events = root.raw("events", [])
    if not isinstance(raw_events, list):
        raise ScenarioError("events: expected a list of tables ([[events]])")
    given = [
        parse_event(Table(item, f"events[{i}]"), tenant, capacity, _namespace)
        for i, item in enumerate(raw_events)
    ]
    cut = duration_s is not None
    if cut:
        root.raw("duration")  # replaced, but still a key of the file
    else:
        duration_s = root.duration("duration")
    assert duration_s is not None
    step_s = root.duration("step", 10.0)
    if step_s <= 0:
        raise ScenarioError("step: must be above 0")
    where = "--duration" if cut else "duration"
    steps = duration_s / step_s
    if duration_s <= 0:
        raise ScenarioError(f"{where}: must be above 0 (at least one step of {step_s:g} s)")
    if steps < 1 or abs(steps - round(steps)) > 1e-9 * steps:
        # The run records a step at every multiple of step up to duration; a duration that
        # is not one (or a step longer than the run) would end the timeline elsewhere.
        fits = max(1, math.floor(steps)) * step_s
        raise ScenarioError(
            f"{where}: {duration_s:g} s is not a whole number of {step_s:g} s steps "
            f"(for example {fits:g} s)"
        )
    if duration_s > MAX_DURATION_S:
        raise ScenarioError(
            f"{where}: {duration_s:g} s is longer than a year ({MAX_DURATION_S:g} s)"
        )
    if steps > MAX_STEPS:  # each step is a round of reports and measures: a tiny step never ends
        raise ScenarioError(
            f"{where}: {duration_s:g} s in steps of {step_s:g} s is {steps:,.0f} steps; "
            f"at most {MAX_STEPS:,} (a longer step, or a shorter run)"
        )
    _check_topics(namespaces, given)
    churn = read is not None and read.replays_churn(brokers)
    end_s = round(duration_s / step_s) * step_s  # the time of the run's last step
    check_events(
        given,
        None if churn else brokers,
        (ns.name for ns in namespaces),
        end_s,
        past_end_allowed=cut,
    )
    kept = [event for event in given if event.at_s < end_s]
    if len(kept) < len(given):
        left = len(given) - len(kept)
        notes = (*notes, f"--duration {duration_s:g} s leaves out {left} event(s) at or after it")
    events = tuple(sorted(kept, key=lambda event: event.at_s))
    if read is not None and read.changes:
        events, said = _with_churn(read, brokers, events, own)
        notes = (*notes, said)
    if read is not None and read.growth:
        events, said = _with_growth(read, tenant, events)
        notes = (*notes, said)
    settings = root.raw("settings", {})
    if not isinstance(settings, dict):
        raise ScenarioError("settings: expected a table of broker.conf keys")
    for key, value in settings.items():
        if key not in SETTINGS_BY_KEY:
            match = nearest_key(key)
            hint = f" (did you mean {match}?)" if match else ""
            raise ScenarioError(f"settings: unknown key {key}{hint}")
        if isinstance(value, dict):
            raise ScenarioError(f"settings.{key}: expected a value, not a table")
        try:  # checked here, so that a bad value is blamed on the file, not on --set
            parse_value(SETTINGS_BY_KEY[key], setting_text(value))
        except ConfigError as exc:
            raise ScenarioError(f"settings.{key}: {exc.args[0]}") from None
    metrics = root.sub("metrics")
    target_std = metrics.number("target_std", 0.05)
    metrics.finish()
    title = root.text("name", name)
    if not title.strip():
        raise ScenarioError("name: is empty (leave it out to name the scenario after its file)")
    scenario = Scenario(
        name=title,
        description=root.text("description", ""),
        duration_s=duration_s,
        step_s=step_s,
        seed=root.integer("seed", 1),
        brokers=brokers,
        capacity=capacity,
        namespaces=namespaces,
        events=events,
        settings=dict(settings),
        target_std=target_std,
        expect=_expectations(root.sub("expect")),
        tenant=tenant,
        notes=notes,
        capacities=capacities,
    )
    root.finish()
    names = [ns.name for ns in namespaces] + [
        e.action.namespace.name for e in events if isinstance(e.action, CreateNamespace)
    ]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        # a [[namespaces]] table, a create_namespace event or a copied namespace
        raise ScenarioError(f"namespaces: {twice[0]} is defined twice")
    return scenario


def load_scenario(path: Path, *, duration_s: float | None = None) -> Scenario:
    """Read and validate a scenario file (``duration_s``: see :func:`parse_scenario`)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is dropped
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
            "scenarios are TOML files, which are UTF-8"
        ) from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        hint = " (scenarios are TOML files)" if path.suffix.lower() in (".yaml", ".yml") else ""
        raise ScenarioError(f"{path}: {exc}{hint}") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
    return parse_scenario(data, name=path.stem, base_dir=path.parent, duration_s=duration_s)
