"""Scenario files: every key parsed into typed values, errors that name the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ballast.sim.events import (
    AddBrokers,
    CrashBrokers,
    CreateNamespace,
    CreateTopics,
    RestartBrokers,
    ScaleRates,
    StopBrokers,
)
from ballast.sim.processes import Bursts, Diurnal, HotSpot, RandomWalk
from ballast.sim.scenario import load_scenario, parse_scenario
from ballast.sim.schema import ScenarioError, parse_duration

FULL = """
name = "everything"
description = "every key once"
duration = "1h30m"
step = "15s"
seed = 7
tenant = "acme"

[settings]
loadBalancerSheddingIntervalMinutes = 2
loadBalancerAutoBundleSplitEnabled = false
loadBalancerSheddingExcludedNamespaces = ["acme/a", "acme/b"]

[cluster]
brokers = 3
[cluster.capacity]
cores = 8
cpu_per_msg_us = 10
cpu_per_byte_ns = 1
nic_gbps = 10
memory_mb = 4096

[metrics]
target_std = 0.04

[[namespaces]]
name = "orders"
bundles = 16
topics = 500
rate = 20
size = 2048
size_sigma = 0.5
fan_out = 2
producers = 2
consumers = 3
popularity = 1.1
anti_affinity_group = "g"
processes = [
  { kind = "diurnal", amplitude = 0.4, period = "12h", phase = "1h", jitter = "30m" },
  { kind = "bursts", every = "10m", duration = "1m", share = 0.2, factor = 3 },
  { kind = "random_walk", sigma = 0.1, min = 0.5, max = 2 },
  { kind = "hot_spot", share = 0.05, factor = 8, move_every = "20m" },
]

[[events]]
at = "10m"
add_brokers = 2
capacity = { cores = 16 }

[[events]]
at = "5m"
stop_brokers = 1
pick = "busiest"
graceful = false

[[events]]
at = "20m"
crash_brokers = [0, 2]
restart_after = "1m"

[[events]]
at = "30m"
restart_brokers = "all"
interval = "30s"
down = "5s"

[[events]]
at = "40m"
create_namespace = { name = "late", bundles = 4, topics = 10 }

[[events]]
at = "50m"
create_topics = { namespace = "orders", count = 100 }

[[events]]
at = "60m"
scale_rates = { factor = 2.5, namespace = "orders", share = 0.1 }

[[events]]
at = "70m"
scale_rates = { factor = 4, brokers = 1, pick = "first" }

[expect]
final_std_max = 0.05
final_ratio_max = 1.1
converged_within = "5m"
moves_max = 40
moves_min = 1
bounces_max = 0
new_brokers_loaded_within_cycles = 2
unowned_topic_seconds_max = 1000
invariants = true
"""


def test_every_key_is_parsed() -> None:
    scenario = parse_scenario(tomllib.loads(FULL))
    assert scenario.name == "everything" and scenario.tenant == "acme"
    assert (scenario.duration_s, scenario.step_s, scenario.seed) == (5400.0, 15.0, 7)
    assert scenario.target_std == 0.04
    assert scenario.capacity.cores == 8 and scenario.capacity.nic_bytes_per_s == 1.25e9
    assert scenario.capacity.cpu_per_msg_s == pytest.approx(10e-6)
    assert "loadBalancerSheddingExcludedNamespaces=acme/a,acme/b" in (scenario.settings_overrides())
    assert "loadBalancerAutoBundleSplitEnabled=false" in scenario.settings_overrides()
    (orders,) = scenario.namespaces
    assert orders.name == "acme/orders" and orders.anti_affinity_group == "g"
    assert (orders.bundles, orders.topics, orders.popularity, orders.fan_out) == (16, 500, 1.1, 2)
    assert [type(p) for p in orders.processes] == [Diurnal, Bursts, RandomWalk, HotSpot]
    assert orders.processes[0] == Diurnal(0.4, 43200.0, 3600.0, 1800.0)
    kinds = [(e.at_s, type(e.action)) for e in scenario.events]
    assert kinds == [  # sorted by time
        (300.0, StopBrokers),
        (600.0, AddBrokers),
        (1200.0, CrashBrokers),
        (1800.0, RestartBrokers),
        (2400.0, CreateNamespace),
        (3000.0, CreateTopics),
        (3600.0, ScaleRates),
        (4200.0, ScaleRates),
    ]
    stop = scenario.events[0].action
    assert isinstance(stop, StopBrokers) and not stop.graceful
    assert stop.brokers.count == 1 and stop.brokers.pick == "busiest"
    add = scenario.events[1].action
    assert isinstance(add, AddBrokers) and add.capacity is not None
    assert add.capacity.cores == 16 and add.capacity.memory_mb == 4096  # the rest inherited
    crash = scenario.events[2].action
    assert isinstance(crash, CrashBrokers) and crash.brokers.indexes == (0, 2)
    assert crash.restart_after_s == 60.0
    restart = scenario.events[3].action
    assert isinstance(restart, RestartBrokers) and restart.brokers.everyone
    assert (restart.interval_s, restart.down_s, restart.graceful) == (30.0, 5.0, True)
    created = scenario.events[4].action
    assert isinstance(created, CreateNamespace) and created.namespace.name == "acme/late"
    hot = scenario.events[7].action
    assert isinstance(hot, ScaleRates) and hot.brokers is not None and hot.factor == 4
    assert scenario.expect.converged_within_s == 300.0
    assert scenario.expect.new_brokers_loaded_within_cycles == 2


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (1.5, 1.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1d", 86400.0),
        ("250ms", 0.25),
        ("2h 5s", 7205.0),
    ],
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize(
    "text",
    # a text of 400 digits is read as infinity; 2e15 s is past any figure a scenario takes
    ["", "5x", "m5", "-3", True, -1, "1h-2m", "1" + "0" * 400 + "s", 2e15, "2000000000000000s"],
)
def test_bad_durations_name_the_key(text: object) -> None:
    with pytest.raises(ScenarioError, match=r"^ScenarioError: x: "):
        parse_duration(text, "x")


def test_a_run_is_at_most_a_year_whatever_its_step() -> None:
    """One step of a huge duration passes the steps' limit, but the brokers' own timers
    still run through every second of it."""
    year = 366 * 86_400
    text = f"duration = {year}\nstep = {year}\n[cluster]\nbrokers = 1\n"
    assert parse_scenario(tomllib.loads(text)).duration_s == year
    longer = text.replace(f"= {year}", f"= {2 * year}")
    with pytest.raises(ScenarioError, match=r"^ScenarioError: duration: .* longer than a year"):
        parse_scenario(tomllib.loads(longer))


MINIMAL = 'duration = "1m"\n[cluster]\nbrokers = 1\n'


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("colour = 1", "colour: unknown key"),
        (
            "[metrics]\ntarget_sd = 0.1",
            r"metrics.target_sd: unknown key \(did you mean target_std\?\)",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n[[events]]\nat = 1\n"
            "create_namespace = { name = 'n', topics = 1 }",
            r"events\[0\].create_namespace.name: namespace sim/n exists already at 1 s$",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n[[namespaces]]\nname = 'n'\ntopics = 2",
            r"namespaces: sim/n is defined twice",
        ),
        # keys only asked about (optional ones) are suggested too
        (
            "[expect]\nfinal_std = 0.1",
            r"expect.final_std: unknown key \(did you mean final_std_max",
        ),
        (
            "[[events]]\nat = 1\nadd_broker = 1",
            r"events\[0\]: needs exactly one of add_brokers, .*scale_rates "
            r"\(events\[0\].add_broker is no key: did you mean add_brokers\?\)",
        ),
        (
            "[[events]]\nat = 1\nadd_brokers = 1\nstop_brokers = 1",
            r"events\[0\]: needs exactly one of .* \(it has add_brokers and stop_brokers\)",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nanti_affinity_group = 5",
            r"namespaces\[0\].anti_affinity_group: expected a group name",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n"
            "processes = [{ kind = 'bursts', every = '5m', duration = '10m' }]",
            r"namespaces\[0\].processes\[0\].duration: must be more than 0 and at most every",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nproducers = 0",
            r"namespaces\[0\].producers: topics without producers publish nothing, but rate is 10",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nconsumers = 0",
            r"namespaces\[0\].consumers: topics without consumers deliver nothing",
        ),
        ("[[events]]\nat = 1\nadd_brokerz = 1", r"events\[0\]: needs exactly one of"),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nsize_sigma = 6",
            r"namespaces\[0\].size_sigma: must be at most 5$",
        ),
        # a key far from any kind is named; a typo of an option is suggested; a key of
        # another kind of event is named as such, not as unknown
        (
            "[[events]]\nat = 1\nbursts = 1",
            r"events\[0\]: needs exactly one of .* \(it has bursts: no such key\)",
        ),
        (
            "[[events]]\nat = 1\nscale_rates = { factr = 2 }",
            r"scale_rates.factor: give factor, size_factor or both "
            r"\(events\[0\].scale_rates.factr is no key: did you mean factor\?\)",
        ),
        (
            "[[events]]\nat = 1\nadd_brokers = 1\nrestart_after = '10s'",
            r"events\[0\].restart_after: a key of crash_brokers events, not of add_brokers$",
        ),
        (
            "[[events]]\nat = 1\nstop_brokers = 1\ninterval = '5s'",
            r"events\[0\].interval: a key of restart_brokers events, not of stop_brokers$",
        ),
        ("[[events]]\nat = 1\nadd_brokers = 0", r"events\[0\].add_brokers: must be at least 1"),
        ("[[events]]\nat = 1\nstop_brokers = 1\npick = 'heaviest'", r"events\[0\].pick: one of"),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nprocesses = [{ kind = 'sine' }]",
            r"namespaces\[0\].processes\[0\].kind: \"sine\" is not one of",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\npopularity = 'high'",
            r"namespaces\[0\].popularity: expected a number",
        ),
        (
            "[[namespaces]]\nname = 'other/n'\ntopics = 1",
            r"namespaces\[0\].name: namespaces belong to tenant",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nrate = 5\nrate_max = 4",
            r"namespaces\[0\].rate_max: must be at least rate \(5\)",
        ),
        (
            "[[events]]\nat = 1\nscale_rates = { namespace = 'n' }",
            r"events\[0\].scale_rates.factor: give factor, size_factor or both",
        ),
        (
            "[[events]]\nat = 1\nscale_rates = { size_factor = 0 }",
            r"events\[0\].scale_rates.size_factor: must be above 0",
        ),
        ("[expect]\nmoves_max = 1.5", "expect.moves_max: expected an integer"),
        (
            "[settings]\nloadBalancerSheddingIntervalMinutes = 'abc'",
            r'settings.loadBalancerSheddingIntervalMinutes: .*"abc" is not a valid integer$',
        ),
        (
            "[settings]\nloadBalancerSheddingExcludedNamespaces = { a = 1 }",
            r"settings.loadBalancerSheddingExcludedNamespaces: expected a value, not a table",
        ),
        ("[[events]]\nat = 1\nstop_brokers = []", r"stop_brokers: an empty list selects no"),
        ("[[events]]\nat = 1\nstop_brokers = [0, 0]", r"stop_brokers: broker 0 is listed twice"),
        (
            "[[events]]\nat = 1\nscale_rates = { factor = 2, brokers = [] }",
            r"scale_rates.brokers: an empty list selects no broker",
        ),
        (
            "[[events]]\nat = 1\nscale_rates = { factor = 2, pick = 'busiest' }",
            r"scale_rates.pick: needs brokers = N, the count it picks",
        ),
        (
            "[[events]]\nat = 1\nstop_brokers = [0]\npick = 'busiest'",
            r"events\[0\].pick: picks among a count of brokers \(stop_brokers = N\)",
        ),
        ("[[namespaces]]\nname = 'n'\ntopics = 1\nrate = nan", r"rate: expected a finite"),
        ("[[namespaces]]\nname = 'n'\ntopics = 1\nsize = inf", r"size: expected a finite"),
        ("[metrics]\ntarget_std = nan", r"metrics.target_std: expected a finite number, not nan"),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n"
            "processes = [{ kind = 'diurnal', period = 0 }]",
            r"processes\[0\].period: must be above 0",
        ),
        # each bound names its own key (they named only the process)
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n"
            "processes = [{ kind = 'hot_spot', move_every = 0 }]",
            r"processes\[0\].move_every: must be above 0",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n"
            "processes = [{ kind = 'bursts', every = '5m', duration = '1m', share = 2 }]",
            r"processes\[0\].share: must be in \(0, 1\], not 2",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\n"
            "processes = [{ kind = 'random_walk', min = 2 }]",
            r"processes\[0\].min: must be at most 1, not 2",
        ),
        (
            "[[namespaces]]\nname = 'x/y/z'\ntopics = 1",
            r"namespaces\[0\].name: give a namespace as name or tenant/name",
        ),
        (
            "[[namespaces]]\nname = 'bad name!'\ntopics = 1",
            r'namespaces\[0\].name: InvalidNamespaceName: namespace "bad name!" has characters',
        ),
        ("[[namespaces]]\nname = ''\ntopics = 1", r"namespaces\[0\].name: is empty"),
        ("[expect]\nmoves_min = 5\nmoves_max = 2", r"expect.moves_min: 5 is above moves_max \(2\)"),
        # "all" is a selection, not a pick: with a count it would ignore the count
        (
            "[[events]]\nat = 1\ncrash_brokers = 1\npick = 'all'",
            r"events\[0\].pick: one of first, last, busiest, random$",
        ),
        (
            "[[events]]\nat = 1\nstop_brokers = 0",
            r"stop_brokers: a count of brokers must be at least 1",
        ),
        (
            "[[events]]\nat = 1\nscale_rates = { factor = 2, share = -0.1 }",
            r"share: a fraction in \(0, 1\]",
        ),
        (
            "[[namespaces]]\nname = 'n'\ntopics = 1\nbundles = 2000000",
            r"bundles: must be at most 1,048,576",
        ),
        (
            "[[events]]\nat = 1\ncreate_namespace = { name = 'bad name', topics = 3 }",
            r"events\[0\].create_namespace.name: InvalidNamespaceName",
        ),
        (
            "[settings]\nloadBalancerSheddingIntervalMinute = 1",
            r"settings: unknown key loadBalancerSheddingIntervalMinute \(did you mean "
            r"loadBalancerSheddingIntervalMinutes\?\)",
        ),
    ],
)
def test_errors_name_the_key(extra: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(tomllib.loads(MINIMAL + extra))


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            "at = '2m'\nadd_brokers = 1",
            r"events\[0\].at: 120 s is not before the run's end \(60 s\)",
        ),
        # the run records its last step and stops: an event then would never happen
        ("at = 60\nadd_brokers = 1", r"events\[0\].at: 60 s is not before the run's end"),
        ("at = 1\nstop_brokers = 2", r"events\[0\].stop_brokers: 2 brokers, but at most 1 "),
        ("at = 1\ncrash_brokers = [1]", r"crash_brokers: no broker has index 1 at 1 s \(1 started"),
        (
            "at = 1\nscale_rates = { factor = 2, brokers = 3 }",
            r"events\[0\].scale_rates.brokers: 3 brokers, but at most 1 are running",
        ),
        (
            "at = 1\ncreate_topics = { namespace = 'n', count = 3 }",
            r"events\[0\].create_topics.namespace: no namespace sim/n at 1 s \(namespaces: none\)",
        ),
        # a namespace exists from the event that creates it on, not before
        (
            "at = 20\ncreate_namespace = { name = 'n', topics = 1 }\n"
            "[[events]]\nat = 10\nscale_rates = { namespace = 'n', factor = 2 }",
            r"events\[1\].scale_rates.namespace: no namespace sim/n at 10 s",
        ),
        # the second stop comes first in time: the broker it stops has not started yet
        (
            "at = 30\nadd_brokers = 1\n[[events]]\nat = 10\nrestart_brokers = [1]",
            r"events\[1\].restart_brokers: no broker has index 1 at 10 s",
        ),
        # one broker stopped for good leaves one; a crash that restarts keeps it counted
        (
            "at = 1\nadd_brokers = 1\n[[events]]\nat = 2\nstop_brokers = 1\n"
            "[[events]]\nat = 3\ncrash_brokers = 1\nrestart_after = 5\n"
            "[[events]]\nat = 4\nstop_brokers = 2",
            r"events\[3\].stop_brokers: 2 brokers, but at most 1 are running at 4 s",
        ),
        # stopped by "all", or by index, the brokers are counted off like a count's
        (
            "at = 1\nadd_brokers = 2\n[[events]]\nat = 2\nstop_brokers = 'all'\n"
            "[[events]]\nat = 3\ncrash_brokers = 1",
            r"events\[2\].crash_brokers: 1 brokers, but at most 0 are running at 3 s",
        ),
        (
            "at = 1\nadd_brokers = 2\n[[events]]\nat = 2\nstop_brokers = [0, 1]\n"
            "[[events]]\nat = 3\nstop_brokers = [1]\n[[events]]\nat = 4\nstop_brokers = 2",
            r"events\[3\].stop_brokers: 2 brokers, but at most 1 are running at 4 s",
        ),
        # a count picks among the running brokers: after [0], it stops two others
        (
            "at = 1\nadd_brokers = 2\n[[events]]\nat = 2\nstop_brokers = [0]\n"
            "[[events]]\nat = 3\nstop_brokers = 2\n[[events]]\nat = 4\nstop_brokers = 1",
            r"events\[3\].stop_brokers: 1 brokers, but at most 0 are running at 4 s",
        ),
    ],
)
def test_events_a_run_could_not_carry_out_are_refused(events: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(tomllib.loads(MINIMAL + "[[events]]\n" + events))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'duration = "1m"\n[cluster]\nbrokers = 10000001\n',
            r"cluster.brokers: must be at most 10,000$",
        ),
        (
            MINIMAL + "[[events]]\nat = 1\nadd_brokers = 20000",
            r"events\[0\].add_brokers: must be at most 10,000$",
        ),
        (
            'duration = "1m"\n[cluster]\nbrokers = 9000\n[[events]]\nat = 1\nadd_brokers = 999\n'
            "[[events]]\nat = 2\nadd_brokers = 2",
            r"events\[1\].add_brokers: up to 10,001 brokers would be running at 2 s; a run has "
            r"at most 10,000",
        ),
        (
            MINIMAL + "[[namespaces]]\nname = 'n'\ntopics = 1000000000",
            r"namespaces\[0\].topics: must be at most 10,000,000",
        ),
        (
            MINIMAL + "[[namespaces]]\nname = 'n'\ntopics = 6000000\n"
            "[[namespaces]]\nname = 'm'\ntopics = 6000000",
            r"namespaces: 12,000,000 topics in all; a run has at most 10,000,000",
        ),
        (
            MINIMAL + "[[namespaces]]\nname = 'n'\ntopics = 6000000\n[[events]]\nat = 1\n"
            "create_topics = { namespace = 'n', count = 3000000 }\n[[events]]\nat = 2\n"
            "create_namespace = { name = 'm', topics = 2000000 }",
            r"events\[1\].create_namespace: 11,000,000 topics in all with it; a run has at most "
            r"10,000,000",
        ),
    ],
)
def test_a_cluster_no_machine_could_simulate_is_refused(text: str, message: str) -> None:
    """Ten million brokers (a typo) ran out of memory after a minute of setup, and a run of a
    billion topics would have; the scenario is refused as it is read."""
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(tomllib.loads(text))


@pytest.mark.parametrize(
    ("top", "message"),
    [
        ('duration = "1m"\nstep = "2m"', r"duration: 60 s is not a whole number of 120 s steps"),
        ('duration = 0\nstep = "2m"', r"duration: must be above 0 \(at least one step of 120 s\)"),
        (
            'duration = "1m"\nstep = "7s"',
            r"60 s is not a whole number of 7 s steps \(for example 56 s\)",
        ),
        ("duration = nan", r"duration: a duration is a finite number, not nan"),
        # the cluster would refuse to create it, mid-run (pulsar/HOST:PORT is a broker's own)
        (
            "duration = 60\ntenant = 'pulsar'\n[[namespaces]]\nname = 'broker-000:8080'\n"
            "topics = 1",
            r"namespaces\[0\].name: pulsar/broker-000:8080 is a broker's heartbeat namespace",
        ),
        (
            "duration = 60\nname = ' '",
            r"name: is empty \(leave it out to name the scenario after its file\)",
        ),
        # a step far too small for its run would never end
        (
            'duration = "1m"\nstep = 1e-9',
            r"duration: 60 s in steps of 1e-09 s is 60,000,000,000 steps; at most 1,000,000",
        ),
        ('duration = "1m"\nstep = inf', r"step: a duration is a finite number, not inf"),
        (
            "duration = 60\ntenant = 'bad tenant'",
            r'tenant: InvalidNamespaceName: tenant "bad tenant" has characters outside',
        ),
    ],
)
def test_the_run_as_a_whole_is_checked(top: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(tomllib.loads(top + "\n[cluster]\nbrokers = 1\n"))


def test_the_run_ends_at_its_last_step() -> None:
    # 90 s in steps of 30 s: the run's steps are 0, 30, 60 and 90 s
    text = "duration = 90\nstep = 30\n[cluster]\nbrokers = 1\n[[events]]\nat = 90\nadd_brokers = 1"
    with pytest.raises(ScenarioError, match=r"90 s is not before the run's end \(90 s\)"):
        parse_scenario(tomllib.loads(text))
    assert parse_scenario(tomllib.loads(text.replace("at = 90", "at = 89"))).events[0].at_s == 89.0


def test_events_within_the_running_brokers_are_accepted() -> None:
    text = MINIMAL + (
        "[[events]]\nat = 1\nadd_brokers = 2\n"  # 3 running, indexes 0-2
        "[[events]]\nat = 2\ncrash_brokers = 1\nrestart_after = 5\n"
        "[[events]]\nat = 3\nrestart_brokers = [2]\n"
        "[[events]]\nat = 4\nstop_brokers = 3\n"  # the crashed one may be back: allowed
        "[[events]]\nat = 5\ncreate_namespace = { name = 'n', topics = 1 }\n"
        "[[events]]\nat = 5\ncreate_topics = { namespace = 'n', count = 2, idle = true }\n"
        "[[events]]\nat = 59\nstop_brokers = 'all'\n"  # within the last step
    )
    events = parse_scenario(tomllib.loads(text)).events
    assert CreateTopics("sim/n", 2, idle=True) in [e.action for e in events]
    assert [e.kind for e in events] == [
        "add_brokers", "crash_brokers", "restart_brokers", "stop_brokers", "create_namespace",
        "create_topics", "stop_brokers",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('duration = "1h"', r"^ScenarioError: cluster.brokers: missing$"),
        ("[cluster]\nbrokers = 1", r"^ScenarioError: duration: missing$"),
        (MINIMAL + "[[namespaces]]\ntopics = 1", r"^ScenarioError: namespaces\[0\].name: missing$"),
        # a misspelt key is the likelier mistake than a forgotten one: it is named
        (
            'duration = "1h"\n[cluster]\nbroker = 3',
            r"^ScenarioError: cluster.brokers: missing \(cluster.broker is no key; a typo of "
            r"brokers\?\)$",
        ),
    ],
)
def test_a_missing_key_is_named_missing(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(tomllib.loads(text))


def test_a_size_change_alone_keeps_the_rates() -> None:
    text = MINIMAL + "[[events]]\nat = 1\nscale_rates = { size_factor = 2, share = 0.5 }\n"
    (event,) = parse_scenario(tomllib.loads(text)).events
    assert isinstance(event.action, ScaleRates)
    assert (event.action.factor, event.action.size_factor, event.action.share) == (1.0, 2.0, 0.5)


def test_a_yaml_file_is_told_scenarios_are_toml(tmp_path: Path) -> None:
    path = tmp_path / "scale.yaml"
    path.write_text("duration: 10m\ncluster:\n  brokers: 3\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"\(scenarios are TOML files\)$"):
        load_scenario(path)


def test_a_file_that_is_not_utf8_is_told_so(tmp_path: Path) -> None:
    path = tmp_path / "utf16.toml"
    path.write_bytes(MINIMAL.encode("utf-16"))  # a Windows editor's "Unicode"
    with pytest.raises(
        ScenarioError, match=r"utf16.toml: not UTF-8 text \(byte 0xff at offset 0\)"
    ):
        load_scenario(path)


def test_brokers_stopped_by_count_and_by_index_may_be_the_same_ones() -> None:
    """The count's pick is the run's: a stop of [0] after a stop of 1 may have named the same
    broker, so one broker may still run and a last stop of 1 is not refused."""
    events = (
        "[[events]]\nat = 1\nadd_brokers = 1\n[[events]]\nat = 2\nstop_brokers = 1\n"
        "[[events]]\nat = 3\nstop_brokers = [0]\n[[events]]\nat = 4\nstop_brokers = 1"
    )
    assert len(parse_scenario(tomllib.loads(MINIMAL + events)).events) == 4


def test_a_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """TOML has no byte order mark, but Windows editors write one; it is dropped, as for
    broker.conf and snapshots."""
    path = tmp_path / "marked.toml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_scenario(path) == parse_scenario(tomllib.loads(MINIMAL), name="marked")
