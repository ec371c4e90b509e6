"""A load history as a ``[copy]`` source: its first snapshot copied, then each copied
bundle's rate following the history (split children summed, a snapshot without the bundle
keeping the rate before), through the simulator's own workload."""

from __future__ import annotations

import copy
import json
import math
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ballast.model.bundles import BundleName
from ballast.pipeline.history import write_snapshot
from ballast.pipeline.importer import ImportOptions, read_decide_snapshot
from ballast.sim.copy import copied_namespace_name
from ballast.sim.events import AddBrokers, CreateTopics, StopBrokers
from ballast.sim.history_source import TopicGrowth, _series, _topic_growth
from ballast.sim.processes import Recorded
from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import Scenario, parse_scenario
from ballast.sim.schema import ScenarioError
from ballast.sim.summary import summarize
from ballast.sim.traffic import SimTraffic
from ballast.sim.workload import Workload

T0 = 1_767_571_200_000  # 2026-01-05 00:00 UTC
A = "public/default/0x00000000_0x40000000"
B = "public/default/0x40000000_0x80000000"


def snapshot_file(tmp_path: Path, name: str, body: dict[str, Any]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def example_snapshot() -> dict[str, Any]:
    """The example load snapshot of the repository (three brokers, seven bundles)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"
    body: dict[str, Any] = json.loads(example.read_text(encoding="utf-8"))
    return body


def history_of(tmp_path: Path, bodies: Sequence[dict[str, Any]], cluster: str = "prod") -> Path:
    """A history (``tmp_path/history``) of ``bodies``, load snapshots a minute apart."""
    root = tmp_path / "history"
    for minute, body in enumerate(bodies):
        source = snapshot_file(tmp_path, f"s{minute}", body)
        options = ImportOptions(cluster, snapshot_ms=T0 + minute * 60_000)
        write_snapshot(root, read_decide_snapshot(source, options)[0])
    return root


def write_history(tmp_path: Path, cluster: str = "prod") -> Path:
    """Three snapshots a minute apart of a cluster whose A and B double, then A splits (its
    two halves at three times A's first rate in all) while B is reported by nobody."""
    first = example_snapshot()
    owner = next(b for b, r in first["brokers"].items() if A in r["lastStats"])
    holder = next(b for b, r in first["brokers"].items() if B in r["lastStats"])
    rate = first["brokers"][owner]["lastStats"][A]["msgRateIn"]
    second = copy.deepcopy(first)
    second["brokers"][owner]["lastStats"][A]["msgRateIn"] = 2 * rate
    second["brokers"][holder]["lastStats"][B]["msgRateIn"] *= 2
    third = copy.deepcopy(first)
    stats = third["brokers"][owner]["lastStats"].pop(A)
    for child in ("0x00000000_0x20000000", "0x20000000_0x40000000"):
        third["brokers"][owner]["lastStats"][f"public/default/{child}"] = {
            **stats,
            "msgRateIn": 1.5 * rate,
        }
    del third["brokers"][holder]["lastStats"][B]
    report = third["brokers"][holder]
    report["bundles"] = [b for b in report.get("bundles", []) if b != B]
    return history_of(tmp_path, (first, second, third), cluster)


def copy_of(root: Path, extra: str = "") -> Scenario:
    text = f'duration = "5m"\nstep = "30s"\n[copy]\nsource = "{root}"\n{extra}'
    return parse_scenario(tomllib.loads(text))


def recorded(scenario: Scenario, bundle: str) -> Recorded:
    name = copied_namespace_name("sim", bundle)
    (spec,) = [s for s in scenario.namespaces if s.name == name]
    (process,) = [p for p in spec.processes if isinstance(p, Recorded)]
    return process


def test_the_rates_follow_the_history(tmp_path: Path) -> None:
    scenario = copy_of(write_history(tmp_path))
    assert len(scenario.namespaces) == 7 and scenario.brokers == 3  # the first snapshot
    assert recorded(scenario, A) == Recorded((0.0, 60.0, 120.0), (1.0, 2.0, 3.0))
    assert recorded(scenario, B) == Recorded((0.0, 60.0, 120.0), (1.0, 2.0, 2.0))
    assert any("replaying 3 snapshots of cluster prod over 120 s" in n for n in scenario.notes)
    workload = Workload(scenario)
    topics = workload.topics_of(copied_namespace_name("sim", A))
    base = workload.rates(0.0)[topics].sum()
    assert workload.rates(30.0)[topics].sum() == pytest.approx(base)
    assert workload.rates(90.0)[topics].sum() == pytest.approx(2 * base)
    assert workload.rates(400.0)[topics].sum() == pytest.approx(3 * base)  # the last holds


def test_message_sizes_follow_the_history(tmp_path: Path) -> None:
    """A's rate doubles at the second snapshot with the same throughput (its messages
    halve); then its two children publish three times the first rate with twice the
    throughput. B's messages halve too, and keep that size once nobody reports B."""
    scenario = copy_of(write_history(tmp_path))
    sizes = {s.name: s.size_series for s in scenario.namespaces if s.size_series is not None}
    a, b = (sizes[copied_namespace_name("sim", bundle)] for bundle in (A, B))
    assert a is not None and b is not None
    assert a.times_s == (0.0, 60.0, 120.0)
    assert a.factors == pytest.approx((1.0, 0.5, 2 / 3))
    assert b.factors == pytest.approx((1.0, 0.5, 0.5))
    # Through the simulator's workload and traffic: A's throughput in at each snapshot's
    # time is the history's (the first, the same, then twice), its rate as it was.
    workload = Workload(scenario)
    traffic = SimTraffic(workload, lambda: 0.0)
    topics = workload.topics_of(copied_namespace_name("sim", A))
    bundle = BundleName.parse(f"{copied_namespace_name('sim', A)}/0x00000000_0xffffffff")
    traffic.serve(topics, bundle)
    traffic.connect(topics, 0)
    seen = []
    for t_s in (0.0, 90.0, 400.0):
        workload.follow_sizes(t_s)
        traffic.set_rates(workload.rates(t_s))
        stats = traffic.bundle_stats(bundle, ())
        seen.append((stats.msg_rate_in, stats.msg_throughput_in))
    (rate, throughput), *later = seen
    assert later == [
        (pytest.approx(2 * rate), pytest.approx(throughput)),
        (pytest.approx(3 * rate), pytest.approx(2 * throughput)),
    ]
    unreplayed = copy_of(write_history(tmp_path / "again"), "replay = false\n")
    assert all(s.size_series is None for s in unreplayed.namespaces)


def test_a_size_without_a_number_or_without_messages_keeps_the_one_before() -> None:
    rows = pa.table(
        {
            "snapshot_ms": [T0, T0 + 60_000, T0 + 120_000, T0 + 180_000],
            "bundle": [A] * 4,
            "msg_rate_in": [10.0, 10.0, 0.0, 10.0],
            "msg_throughput_in": [1000.0, math.nan, 0.0, 3000.0],
        }
    )
    series = _series(rows, T0, [A])
    assert series.rates[A].factors == (1.0, 1.0, 0.0, 1.0)
    assert series.sizes[A].factors == (1.0, 1.0, 1.0, 3.0)


def test_a_replay_runs_at_the_history_s_message_sizes(tmp_path: Path) -> None:
    """Run for real: at the end every broker's throughput adds up to the replayed rates at
    the replayed sizes (at the first snapshot's sizes it would be more: A's and B's
    messages halved)."""
    scenario = copy_of(write_history(tmp_path))
    result = simulate(scenario, RunOptions(strategy="ballast"))
    end = result.steps[-1]
    assert end.unowned_topics == 0
    final = [r for r in result.brokers if r.t_s == end.t_s]
    workload = Workload(scenario)
    rates = workload.rates(end.t_s)
    at_first = float(np.sum(rates * workload.size * (1 + workload.fan_out)))
    workload.follow_sizes(end.t_s)
    replayed = float(np.sum(rates * workload.size * (1 + workload.fan_out)))
    assert replayed < at_first
    assert sum(r.throughput for r in final) == pytest.approx(replayed)


def test_without_replay_only_the_first_snapshot_is_copied(tmp_path: Path) -> None:
    scenario = copy_of(write_history(tmp_path), "replay = false\n")
    assert all(not s.processes for s in scenario.namespaces)
    assert any("the first of 3 snapshots" in n for n in scenario.notes)
    rates = Workload(scenario).rates(90.0)
    assert np.array_equal(rates, Workload(scenario).rates(0.0))


def test_clusters_are_named(tmp_path: Path) -> None:
    root = write_history(tmp_path / "one", cluster="east")
    other = write_history(tmp_path / "two", cluster="west")
    for path in sorted(other.rglob("*.parquet")):  # both clusters in one history
        target = root / path.relative_to(other)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    clusters = r"copy\.cluster: the history holds clusters east, west"
    with pytest.raises(ScenarioError, match=clusters):
        copy_of(root)
    assert copy_of(root, 'cluster = "west"\n').brokers == 3
    with pytest.raises(ScenarioError, match="no broker rows of cluster north"):
        copy_of(root, 'cluster = "north"\n')


def test_history_keys_need_a_history(tmp_path: Path) -> None:
    source = snapshot_file(tmp_path, "snap", {"brokers": {"b1": {}}})
    with pytest.raises(ScenarioError, match=r"copy\.replay: only for a load history source"):
        copy_of(source, "replay = true\n")
    with pytest.raises(ScenarioError, match=r"copy\.replay_brokers: only for a load history"):
        copy_of(source, "replay_brokers = false\n")


def test_brokers_are_replayed_only_with_the_history(tmp_path: Path) -> None:
    """replay = false copies the first snapshot: a replay_brokers beside it was ignored."""
    with pytest.raises(ScenarioError, match=r"copy\.replay_brokers: needs replay = true"):
        copy_of(write_history(tmp_path), "replay = false\nreplay_brokers = true\n")


def test_a_bad_history_is_a_named_error(tmp_path: Path) -> None:
    root = write_history(tmp_path)
    first = sorted((root / "bundles").rglob("*.parquet"))[0]
    rows = pq.read_table(first)
    names = rows.column("bundle").to_pylist()
    names[0] = "not a bundle"
    pq.write_table(rows.set_column(rows.schema.get_field_index("bundle"), "bundle", [names]), first)
    with pytest.raises(ScenarioError, match=r"copy\.source: .*its first snapshot"):
        copy_of(root)
    empty = tmp_path / "empty-history"
    (empty / "bundles").mkdir(parents=True)  # a history root, but nothing written yet
    with pytest.raises(ScenarioError, match="the history has no broker rows"):
        copy_of(empty)


def write_churn_history(tmp_path: Path) -> tuple[Path, str]:
    """Four snapshots a minute apart: the example's three brokers, then one of them gone (the
    last by name; its bundles reported by nobody), then a new broker with nothing yet.
    Returns the history and the broker that left."""
    first = example_snapshot()
    leaving = sorted(first["brokers"])[-1]
    without = copy.deepcopy(first)
    del without["brokers"][leaving]
    joined = copy.deepcopy(without)
    newcomer = copy.deepcopy(first["brokers"][leaving])
    newcomer.update(lastStats={}, bundles=[], msgRateIn=0.0, msgRateOut=0.0)
    joined["brokers"]["10.0.0.9:8080"] = newcomer
    return history_of(tmp_path, (first, first, without, joined)), leaving


def test_brokers_join_and_leave_as_the_history_shows(tmp_path: Path) -> None:
    root, _ = write_churn_history(tmp_path)
    scenario = copy_of(root)
    assert scenario.brokers == 3
    stop, start = scenario.events
    assert (stop.at_s, start.at_s) == (120.0, 180.0)
    assert isinstance(stop.action, StopBrokers) and stop.action.graceful
    assert stop.action.brokers.indexes == (2,)  # the last of the first snapshot's, by name
    assert start.action == AddBrokers(1)
    assert any("replaying the brokers' churn: 1 joining, 1 leaving" in n for n in scenario.notes)
    # Run for real: the broker of index 2 is drained and stops, a fourth starts.
    result = simulate(scenario, RunOptions(strategy="ballast", check_invariants=True))
    drains = [d for d in result.decisions if d.origin == "drain"]
    assert drains and {(d.t_s >= 120.0, d.source) for d in drains} == {(True, "broker-002:8080")}
    summary = summarize(result)
    assert summary["notes"] == list(scenario.notes)  # kept with the results
    (new,) = summary["newBrokers"]
    assert (new["broker"], new["startedS"]) == ("broker-003:8080", 180.0)
    assert summary["final"]["brokers"] == 3 and new["loadedAfterS"] is not None


def test_events_on_a_replayed_churn_are_not_counted_against_the_first_brokers(
    tmp_path: Path,
) -> None:
    """The churn's brokers join after the scenario's events are read: a selection of index 3
    (the broker that joins at 180 s) is the user's to make."""
    root, _ = write_churn_history(tmp_path)
    scenario = copy_of(root, "[[events]]\nat = 200\nstop_brokers = [3]\n")
    assert [e.at_s for e in scenario.events] == [120.0, 180.0, 200.0]
    unreplayed = "replay_brokers = false\n[[events]]\nat = 200\nstop_brokers = [3]\n"
    with pytest.raises(ScenarioError, match=r"no broker has index 3 at 200 s \(3 started"):
        copy_of(write_churn_history(tmp_path / "again")[0], unreplayed)


def test_a_joining_broker_of_another_machine_starts_with_its_own_capacity(
    tmp_path: Path,
) -> None:
    """A broker that joins with twice the cores and NIC of the others starts with its own
    capacity (fitted as the first brokers' is); one like them gets the cluster's."""
    first = example_snapshot()
    like = copy.deepcopy(first["brokers"]["10.0.0.1:8080"])
    like.update(lastStats={}, bundles=[])
    bigger = copy.deepcopy(like)
    for resource in ("cpu", "bandwidthIn", "bandwidthOut"):
        bigger[resource]["limit"] *= 2
    second = copy.deepcopy(first)
    second["brokers"].update({"10.0.0.8:8080": bigger, "10.0.0.9:8080": like})
    scenario = copy_of(history_of(tmp_path, (first, second)))
    own, alike = scenario.events
    assert isinstance(own.action, AddBrokers) and isinstance(alike.action, AddBrokers)
    assert own.action.count == alike.action.count == 1
    assert alike.action.capacity is None  # the cluster's
    assert own.action.capacity is not None
    assert own.action.capacity.cores == 2 * scenario.capacity.cores
    assert own.action.capacity.nic_bytes_per_s == pytest.approx(
        2 * scenario.capacity.nic_bytes_per_s
    )
    assert own.action.capacity.cpu_per_msg_s == scenario.capacity.cpu_per_msg_s
    assert any("2 joining (1 with a capacity of their own)" in n for n in scenario.notes)


def test_brokers_stay_when_asked_or_when_the_cluster_differs(tmp_path: Path) -> None:
    root, _ = write_churn_history(tmp_path)
    assert copy_of(root, "replay_brokers = false\n").events == ()
    assert copy_of(root, "replay = false\n").events == ()
    resized = parse_scenario(
        tomllib.loads(
            f'duration = "5m"\nstep = "30s"\n[copy]\nsource = "{root}"\n[cluster]\nbrokers = 5\n'
        )
    )
    assert resized.events == ()
    assert any("not replayed: the cluster starts with 5 brokers" in n for n in resized.notes)


def test_brokers_replaced_all_at_once_drain_onto_their_successors(tmp_path: Path) -> None:
    first = example_snapshot()
    replaced = copy.deepcopy(first)
    replaced["brokers"] = {
        f"10.0.1.{i}:8080": report for i, report in enumerate(first["brokers"].values())
    }
    scenario = copy_of(history_of(tmp_path, (first, first, replaced)))
    start, stop = scenario.events
    assert start.action == AddBrokers(3)
    assert isinstance(stop.action, StopBrokers) and stop.action.brokers.indexes == (0, 1, 2)
    result = simulate(scenario, RunOptions(strategy="ballast", check_invariants=True))
    # The old brokers drain one after another (a bundle may pass through one that leaves
    # later); every bundle ends on a successor, and the leader never lost track (invariants).
    last = {d.bundle: d for d in result.decisions}  # a split's parent is gone after it
    homes = {d.destination for d in last.values() if d.action != "split"}
    assert any(d.origin == "drain" for d in result.decisions)
    assert homes and homes <= {"broker-003:8080", "broker-004:8080", "broker-005:8080"}
    assert summarize(result)["final"]["brokers"] == 3


def test_topic_counts_grow_past_their_highest_only() -> None:
    """A's topics rise, fall (not replayed: topics are not deleted) and rise past the old
    high; B, reported by two brokers in one snapshot, counts once; A's split children add up;
    a snapshot that shows nothing of B changes nothing."""
    a_low, a_high = "public/default/0x00000000_0x20000000", "public/default/0x20000000_0x40000000"
    rows = pa.table(
        {
            "snapshot_ms": [T0 + minute * 60_000 for minute in (0, 0, 1, 1, 1, 2, 3, 3, 4)],
            "bundle": [A, B, A, B, B, A, a_low, a_high, A],
            "topics": [10, 4, 15, 6, 6, 12, 9, 8, 20],
        }
    )
    assert _topic_growth(rows, T0, [A, B]) == (
        TopicGrowth(60.0, A, 5),
        TopicGrowth(60.0, B, 2),
        TopicGrowth(180.0, A, 2),  # the children's 17 over the high of 15
        TopicGrowth(240.0, A, 3),
    )
    # a bundle copied with no topics starts at one, as the copy gives it
    empty_first = pa.table({"snapshot_ms": [T0, T0 + 60_000], "bundle": [A, A], "topics": [0, 3]})
    assert _topic_growth(empty_first, T0, [A]) == (TopicGrowth(60.0, A, 2),)


def test_a_replay_adds_the_topics_the_history_gained(tmp_path: Path) -> None:
    """Replayed, bundle A gains 25 topics at the second snapshot: idle topics in its copied
    namespace, so its traffic stays the history's; a fall at the third is not replayed."""
    first = example_snapshot()
    owner = next(b for b, r in first["brokers"].items() if A in r["lastStats"])
    second, third = copy.deepcopy(first), copy.deepcopy(first)
    second["brokers"][owner]["lastStats"][A]["topics"] = 65
    third["brokers"][owner]["lastStats"][A]["topics"] = 50
    scenario = copy_of(history_of(tmp_path, (first, second, third)))
    name = copied_namespace_name("sim", A)
    assert [(e.at_s, e.action) for e in scenario.events] == [
        (60.0, CreateTopics(name, 25, idle=True))
    ]
    assert any("the topics' growth: 25 topics added to 1 bundles" in n for n in scenario.notes)
    unreplayed = copy_of(history_of(tmp_path / "again", (first, second)), "replay = false\n")
    assert unreplayed.events == ()
    # Run for real: the topics are there at the end, the throughput is the history's.
    result = simulate(scenario, RunOptions(strategy="ballast"))
    end = result.steps[-1].t_s
    initial = sum(spec.topics for spec in scenario.namespaces)

    def at(t_s: float) -> tuple[int, float]:
        rows = [r for r in result.brokers if r.t_s == t_s]
        return sum(r.topics for r in rows), sum(r.throughput for r in rows)

    before, after = at(30.0), at(end)
    assert before[0] == initial and after[0] == initial + 25
    assert after[1] == pytest.approx(before[1])
