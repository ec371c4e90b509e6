"""The ``[[events]]`` tables of a scenario file, and the broker capacities they and the
``[cluster]`` table give: parsed into :mod:`ballast.sim.events`' frozen dataclasses, naming the
key of the first problem."""

from __future__ import annotations

import math
from collections.abc import Callable

from ballast.broker.host_usage import BrokerCapacity
from ballast.sim.events import (
    EVENT_KINDS,
    MAX_BROKERS,
    MAX_TOPICS,
    PICKS,
    Action,
    AddBrokers,
    BrokerSelection,
    CrashBrokers,
    CreateNamespace,
    CreateTopics,
    Event,
    RestartBrokers,
    ScaleRates,
    StopBrokers,
)
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.schema import ScenarioError, Table, parse_duration


def parse_capacity(table: Table, base: BrokerCapacity) -> BrokerCapacity:
    capacity = BrokerCapacity(
        cores=table.number("cores", base.cores, minimum=0.001),
        cpu_per_msg_s=table.number("cpu_per_msg_us", base.cpu_per_msg_s * 1e6) / 1e6,
        cpu_per_byte_s=table.number("cpu_per_byte_ns", base.cpu_per_byte_s * 1e9) / 1e9,
        nic_bytes_per_s=table.number("nic_gbps", base.nic_bytes_per_s * 8 / 1e9, minimum=1e-6)
        * 1e9
        / 8,
        memory_mb=table.number("memory_mb", base.memory_mb, minimum=1.0),
        base_memory_mb=table.number("base_memory_mb", base.base_memory_mb),
        memory_per_topic_mb=table.number("memory_per_topic_mb", base.memory_per_topic_mb),
    )
    table.finish()
    return capacity


def _selection(table: Table, key: str = "brokers") -> BrokerSelection:
    value = table.raw(key)
    pick = table.text("pick", "last")
    if pick not in PICKS:
        raise ScenarioError(f"{table.path('pick')}: one of {', '.join(PICKS)}")
    counted = isinstance(value, int) and not isinstance(value, bool)
    if table.has("pick") and not counted:  # it would be ignored, silently
        raise ScenarioError(
            f"{table.path('pick')}: picks among a count of brokers ({key} = N), "
            "not a list of indexes or all"
        )
    if value == "all":
        return BrokerSelection(pick="all")
    if isinstance(value, list):
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
            raise ScenarioError(f"{table.path(key)}: expected broker indexes (0, 1, ...)")
        if not value:  # an empty selection would read as no selection: every broker
            raise ScenarioError(f"{table.path(key)}: an empty list selects no broker")
        twice = sorted({i for i in value if value.count(i) > 1})
        if twice:
            raise ScenarioError(f"{table.path(key)}: broker {twice[0]} is listed twice")
        return BrokerSelection(indexes=tuple(value))
    if counted:
        if value < 1:
            raise ScenarioError(f"{table.path(key)}: a count of brokers must be at least 1")
        return BrokerSelection(count=value, pick=pick)
    raise ScenarioError(f'{table.path(key)}: a count, a list of indexes or "all"')


# The keys an event of each kind may have besides its kind's own and ``at``: a key of
# another kind is named as such, not as unknown.
EVENT_OPTIONS = {
    "add_brokers": ("capacity",),
    "stop_brokers": ("graceful", "pick"),
    "crash_brokers": ("restart_after", "pick"),
    "restart_brokers": ("graceful", "down", "interval", "pick"),
}


def parse_event(
    table: Table,
    tenant: str,
    base: BrokerCapacity,
    parse_namespace: Callable[[Table, str], NamespaceSpec],
) -> Event:
    """One ``[[events]]`` table; ``base`` is the capacity added brokers get unless the event
    gives theirs, ``parse_namespace`` reads a ``create_namespace`` table."""
    at_s = table.duration("at")
    kinds = [k for k in EVENT_KINDS if table.has(k)]
    if len(kinds) != 1:
        found = f" (it has {' and '.join(kinds)})" if kinds else table.misspelt(EVENT_KINDS)
        if not found:
            strangers = sorted(set(table.data) - table.known)
            found = f" (it has {', '.join(strangers)}: no such key)" if strangers else ""
        raise ScenarioError(f"{table.where}: needs exactly one of {', '.join(EVENT_KINDS)}{found}")
    kind = kinds[0]
    action: Action
    if kind == "add_brokers":
        count = table.integer("add_brokers", minimum=1, maximum=MAX_BROKERS)
        capacity = parse_capacity(table.sub("capacity"), base) if table.has("capacity") else None
        action = AddBrokers(count, capacity)
    elif kind == "stop_brokers":
        action = StopBrokers(_selection(table, "stop_brokers"), table.flag("graceful", True))
    elif kind == "crash_brokers":
        restart = table.raw("restart_after")
        action = CrashBrokers(
            _selection(table, "crash_brokers"),
            None if restart is None else parse_duration(restart, table.path("restart_after")),
        )
    elif kind == "restart_brokers":
        action = RestartBrokers(
            _selection(table, "restart_brokers"),
            graceful=table.flag("graceful", True),
            down_s=table.duration("down", 10.0),
            interval_s=table.duration("interval", 0.0),
        )
    elif kind == "create_namespace":
        action = CreateNamespace(parse_namespace(table.sub("create_namespace"), tenant))
    elif kind == "create_topics":
        sub = table.sub("create_topics")
        namespace = sub.text("namespace")
        action = CreateTopics(
            namespace if "/" in namespace else f"{tenant}/{namespace}",
            sub.integer("count", minimum=1, maximum=MAX_TOPICS),
            idle=sub.flag("idle", False),
        )
        sub.finish()
    else:
        sub = table.sub("scale_rates")
        namespace = sub.raw("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise ScenarioError(f"{sub.path('namespace')}: expected a string")
        share = sub.number("share", 1.0, minimum=-math.inf)  # one message for the whole range
        if not 0 < share <= 1:
            raise ScenarioError(f"{sub.path('share')}: a fraction in (0, 1]")
        if sub.has("pick") and not sub.has("brokers"):
            raise ScenarioError(f"{sub.path('pick')}: needs brokers = N, the count it picks")
        brokers = _selection(sub, "brokers") if sub.has("brokers") else None
        if not sub.has("factor") and not sub.has("size_factor"):
            typo = sub.misspelt(("factor", "size_factor"))
            raise ScenarioError(f"{sub.path('factor')}: give factor, size_factor or both{typo}")
        size_factor = sub.number("size_factor", 1.0)
        if size_factor <= 0:
            raise ScenarioError(f"{sub.path('size_factor')}: must be above 0")
        action = ScaleRates(
            factor=sub.number("factor", 1.0),
            size_factor=size_factor,
            namespace=None
            if namespace is None
            else (namespace if "/" in namespace else f"{tenant}/{namespace}"),
            share=share,
            brokers=brokers,
        )
        sub.finish()
    for key in sorted(set(table.data) - table.used):
        owners = [k for k, options in EVENT_OPTIONS.items() if key in options]
        if owners:
            raise ScenarioError(
                f"{table.path(key)}: a key of {' and '.join(owners)} events, not of {kind}"
            )
    table.finish()
    return Event(at_s, action)
