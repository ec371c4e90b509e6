"""Copying a cluster's load into a scenario (``[copy]``): each source bundle becomes a
namespace whose simulated bundle reports the source's rates and throughput in again; stale,
idle and outbound-only bundles are handled and said; bad sources are named errors."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ballast.balance.snapshot_json import parse_snapshot
from ballast.broker.host_usage import BrokerCapacity, ModelledHostUsage
from ballast.model.bundles import BundleName
from ballast.model.loaddata import NamespaceBundleStats
from ballast.sim.copy import copied_namespace_name
from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import Scenario, load_scenario, parse_scenario
from ballast.sim.schema import ScenarioError
from ballast.sim.traffic import SimTraffic
from ballast.sim.workload import Workload

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"


def stats(rate_in: float, rate_out: float, size: float, topics: int, **counts: int) -> Any:
    return {
        "msgRateIn": rate_in,
        "msgRateOut": rate_out,
        "msgThroughputIn": rate_in * size,
        "msgThroughputOut": rate_out * size,
        "topics": topics,
        "producerCount": counts.get("producers", topics),
        "consumerCount": counts.get("consumers", topics),
    }


def long_term(rate_in: float, size: float, topics: int, samples: int = 10) -> Any:
    data = {
        "msgRateIn": rate_in,
        "msgRateOut": rate_in,
        "msgThroughputIn": rate_in * size,
        "msgThroughputOut": rate_in * size,
        "numSamples": samples,
        "maxSamples": 1000,
    }
    return {"shortTermData": data, "longTermData": data, "topics": topics}


def scenario_text(source: str, extra: str = "") -> str:
    return f'duration = "2m"\nstep = "15s"\n[copy]\nsource = "{source}"\n{extra}'


def copy_of(tmp_path: Path, snapshot: dict[str, Any], extra: str = "") -> Scenario:
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot), encoding="utf-8")
    return parse_scenario(tomllib.loads(scenario_text("snapshot.json", extra)), base_dir=tmp_path)


def simulated_stats(scenario: Scenario) -> dict[str, Any]:
    """Each namespace's bundle stats with every topic served and connected, through the
    simulator's own traffic source."""
    workload = Workload(scenario)
    traffic = SimTraffic(workload, lambda: 0.0)
    traffic.set_rates(workload.rates(0.0))
    found = {}
    for spec in scenario.namespaces:
        bundle = BundleName.parse(f"{spec.name}/0x00000000_0xffffffff")
        topics = np.array(
            [i for i, name in enumerate(workload.names) if str(name.namespace) == spec.name],
            dtype=np.int64,
        )
        traffic.serve(topics, bundle)
        traffic.connect(topics, 0)
        found[spec.name] = traffic.bundle_stats(bundle, workload.names)
    return found


def test_the_simulated_bundles_report_the_source_traffic_again() -> None:
    scenario = load_scenario_text(EXAMPLE)
    source = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    reported = {
        bundle: figures
        for broker in source["brokers"].values()
        for bundle, figures in broker["lastStats"].items()
    }
    assert scenario.brokers == len(source["brokers"])
    simulated = simulated_stats(scenario)
    assert set(simulated) == {copied_namespace_name("sim", b) for b in reported}
    for bundle, figures in reported.items():
        got = simulated[copied_namespace_name("sim", bundle)]
        assert got.topics == figures["topics"]
        for key, value in (
            ("msg_rate_in", figures["msgRateIn"]),
            ("msg_rate_out", figures["msgRateOut"]),
            ("msg_throughput_in", figures["msgThroughputIn"]),
        ):
            assert math.isclose(getattr(got, key), value, rel_tol=1e-9), (bundle, key)


def load_scenario_text(source: Path, extra: str = "") -> Scenario:
    return parse_scenario(tomllib.loads(scenario_text(str(source), extra)))


def test_the_multiplier_and_processes_apply_to_every_copied_bundle() -> None:
    plain = load_scenario_text(EXAMPLE)
    doubled = load_scenario_text(
        EXAMPLE,
        'rate_multiplier = 2.5\npopularity = 0.8\nprocesses = [{ kind = "diurnal" }]\n',
    )
    for one, other in zip(plain.namespaces, doubled.namespaces, strict=True):
        assert other.rate == pytest.approx(2.5 * one.rate)
        assert other.popularity == 0.8 and len(other.processes) == 1
        assert (other.size, other.fan_out, other.topics) == (one.size, one.fan_out, one.topics)


def test_size_fan_out_and_connections_come_from_the_bundle(tmp_path: Path) -> None:
    snapshot = {
        "brokers": {
            "b1": {"lastStats": {"t/n/0x00000000_0xffffffff": stats(100.0, 300.0, 2000.0, 10)}},
            "b2": {},
        }
    }
    scenario = copy_of(tmp_path, snapshot, "[cluster]\nbrokers = 5\n")
    assert scenario.brokers == 5  # the scenario's own count wins over the source's 2
    (spec,) = scenario.namespaces
    assert spec.name == "sim/t.n.0x00000000_0xffffffff" and spec.bundles == 1
    assert (spec.topics, spec.rate, spec.size, spec.fan_out) == (10, 10.0, 2000.0, 3.0)
    assert (spec.producers, spec.consumers) == (1, 1)


def test_stale_idle_and_outbound_only_bundles(tmp_path: Path) -> None:
    snapshot = {
        "brokers": {
            "b1": {
                "lastStats": {
                    # a split's children, reported
                    "t/n/0x00000000_0x80000000": stats(10.0, 10.0, 100.0, 2),
                    "t/n/0x80000000_0xffffffff": stats(20.0, 20.0, 100.0, 2),
                    # consumers draining a backlog: nothing published
                    "t/drain/0x00000000_0xffffffff": stats(0.0, 50.0, 100.0, 3, producers=0),
                    # owned, but no topic and no traffic
                    "t/empty/0x00000000_0xffffffff": stats(0.0, 0.0, 1.0, 0),
                }
            }
        },
        "bundles": {
            # the parent's data, left behind by the split: overlaps both children
            "t/n/0x00000000_0xffffffff": long_term(30.0, 100.0, 4),
            # a bundle no broker reports (unloaded, not looked up since)
            "t/other/0x00000000_0xffffffff": long_term(5.0, 400.0, 0),
            # never sampled: Pulsar's default figures, not load
            "t/fresh/0x00000000_0xffffffff": long_term(50.0, 1000.0, 0, samples=0),
        },
    }
    scenario = copy_of(tmp_path, snapshot)
    names = [spec.name for spec in scenario.namespaces]
    assert names == [
        "sim/t.drain.0x00000000_0xffffffff",
        "sim/t.n.0x00000000_0x80000000",
        "sim/t.n.0x80000000_0xffffffff",
        "sim/t.other.0x00000000_0xffffffff",
    ]
    drain, _, _, other = scenario.namespaces
    assert (drain.topics, drain.rate, drain.producers, drain.consumers) == (3, 0.0, 0, 1)
    assert (other.topics, other.rate, other.size) == (1, 5.0, 400.0)
    notes = "\n".join(scenario.notes)
    assert "copied 4 bundles on 1 brokers" in notes
    assert "1 bundles had traffic out but none in" in notes
    assert "1 bundles without topics or traffic left out" in notes
    assert "1 bundles of bundle data left out" in notes


def test_a_dump_directory_is_a_source(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    (dump / "brokers").mkdir(parents=True)
    (dump / "bundle-data" / "t" / "n").mkdir(parents=True)
    (dump / "brokers" / "10.0.0.1:8080").write_text(
        json.dumps({"lastStats": {"t/n/0x00000000_0x80000000": stats(8.0, 8.0, 50.0, 4)}}),
        encoding="utf-8",
    )
    (dump / "bundle-data" / "t" / "n" / "0x80000000_0xffffffff.json").write_text(
        json.dumps(long_term(6.0, 10.0, 3)), encoding="utf-8"
    )
    scenario_file = tmp_path / "copied.toml"
    scenario_file.write_text(scenario_text("dump", "rate_multiplier = 2\n"), encoding="utf-8")
    (dump / "leader").write_text("{}", encoding="utf-8")
    scenario = load_scenario(scenario_file)  # "dump" is found beside the scenario file
    assert scenario.brokers == 1
    assert "leader: not part of a /loadbalance dump, skipped" in scenario.notes  # said, not lost
    assert [(s.topics, s.rate) for s in scenario.namespaces] == [(4, 4.0), (3, 4.0)]


@pytest.mark.parametrize(
    ("snapshot", "extra", "message"),
    [
        (None, "", "copy.source: "),
        ("{", "", "malformed snapshot"),
        ('{"brokers": {"b1": {"cpu": {"usage": "lots"}}}}', "", "cpu.usage"),
        ('{"brokers": {}}', "", "the snapshot has no brokers"),
        ('{"brokers": {"b1": {}}}', "rate_multiplier = -1\n", "copy.rate_multiplier"),
        ('{"brokers": {"b1": {}}}', "sorce = 1\n", "copy.sorce: unknown key"),
    ],
)
def test_bad_sources_name_the_problem(
    tmp_path: Path, snapshot: str | None, extra: str, message: str
) -> None:
    if snapshot is not None:
        (tmp_path / "snapshot.json").write_text(snapshot, encoding="utf-8")
    with pytest.raises(ScenarioError, match=message.replace(".", r"\.")):
        parse_scenario(tomllib.loads(scenario_text("snapshot.json", extra)), base_dir=tmp_path)


def test_the_capacity_makes_the_copy_as_loaded_as_the_source() -> None:
    """The modelled host usage of the copied traffic, broker by broker as the source placed
    it, adds up to the CPU and NIC use the source reports."""
    scenario = load_scenario_text(EXAMPLE)
    source = parse_snapshot(EXAMPLE.read_bytes()).snapshot
    capacity = scenario.capacity
    assert capacity.cores == 8.0 and capacity.memory_mb == 4096.0  # the brokers' limits
    model = ModelledHostUsage(capacity)
    cpu = bandwidth = 0.0
    for data in source.brokers.values():
        report = data.local_data
        stats = list(report.last_stats.values())
        total = NamespaceBundleStats(
            msg_rate_in=sum(s.msg_rate_in for s in stats),
            msg_rate_out=sum(s.msg_rate_out for s in stats),
            msg_throughput_in=sum(s.msg_throughput_in for s in stats),
            msg_throughput_out=sum(s.msg_throughput_out for s in stats),
        )
        usage = model.sample(total)
        cpu += usage.cpu.usage
        bandwidth += usage.bandwidth_in.usage / usage.bandwidth_in.limit
    reported = list(source.brokers.values())
    assert cpu == pytest.approx(sum(d.local_data.cpu.usage for d in reported))
    reported_in = sum(d.local_data.bandwidth_in.usage for d in reported) / sum(
        d.local_data.bandwidth_in.limit for d in reported
    )
    assert bandwidth / len(reported) == pytest.approx(reported_in)


def test_the_scenario_capacity_wins_and_can_be_left_alone(tmp_path: Path) -> None:
    own = load_scenario_text(EXAMPLE, "[cluster.capacity]\ncores = 2\n")
    fitted = load_scenario_text(EXAMPLE)
    assert own.capacity.cores == 2.0  # the scenario's key over the source's 8
    assert own.capacity.cpu_per_msg_s == fitted.capacity.cpu_per_msg_s  # the rest still fitted
    assert load_scenario_text(EXAMPLE, "capacity = false\n").capacity == BrokerCapacity()
    # A snapshot without host figures leaves the capacity as it is.
    bare = {"brokers": {"b1": {"lastStats": {"t/n/0x00000000_0xffffffff": stats(1, 1, 1, 1)}}}}
    assert copy_of(tmp_path, bare).capacity == BrokerCapacity()


def machine(cores: int, nic_kbits: float, bundles: dict[str, Any], throughput: float) -> Any:
    """A broker's report at half its CPU, its NIC filled by ``throughput`` bytes/s."""
    used_kbits = throughput * 8 / 1000
    return {
        "cpu": {"usage": cores * 50.0, "limit": cores * 100.0},
        "memory": {"usage": 1024.0, "limit": cores * 1024.0},
        "bandwidthIn": {"usage": used_kbits, "limit": nic_kbits},
        "bandwidthOut": {"usage": used_kbits, "limit": nic_kbits},
        "lastStats": bundles,
    }


def mixed_cluster(per_core: int = 1) -> dict[str, Any]:
    """Two machines, both at half their CPU: 4 cores and 1 Gbit/s NICs serving ``4 *
    per_core`` bundles, 8 cores and 10 Gbit/s serving twice as many, all alike."""
    one = stats(100.0, 100.0, 1000.0, 10)

    def bundles(first: int, count: int) -> dict[str, Any]:
        step = 0x100000000 // 64
        return {
            f"t/n/0x{i * step:08x}_0x{(i + 1) * step:08x}": one for i in range(first, first + count)
        }

    small, large = 4 * per_core, 8 * per_core
    return {
        "brokers": {
            "b1-small": machine(4, 1e6, bundles(0, small), small * 1e5),
            "b2-large": machine(8, 1e7, bundles(small, large), large * 1e5),
        }
    }


def test_brokers_of_different_machines_keep_their_own_capacity(tmp_path: Path) -> None:
    """Each copied broker has its own cores, memory and NIC, so that its traffic loads it as
    much as the source's broker reports (with one capacity for both, the small machine would
    show a third of its CPU used and the large two thirds)."""
    source = mixed_cluster()
    scenario = copy_of(tmp_path, source)
    small, large = scenario.capacities
    assert (small.cores, large.cores) == (4.0, 8.0)
    assert (small.memory_mb, large.memory_mb) == (4096.0, 8192.0)
    assert large.nic_bytes_per_s == pytest.approx(10 * small.nic_bytes_per_s)
    assert small.cpu_per_msg_s == large.cpu_per_msg_s == scenario.capacity.cpu_per_msg_s
    assert scenario.capacity_of(0) == small and scenario.capacity_of(2) == scenario.capacity
    assert any("capacities copied broker by broker (2 kinds)" in n for n in scenario.notes)
    simulated = simulated_stats(scenario)
    for index, name in enumerate(sorted(source["brokers"])):
        report = source["brokers"][name]
        served = [simulated[copied_namespace_name("sim", b)] for b in report["lastStats"]]
        usage = ModelledHostUsage(scenario.capacity_of(index)).sample(
            NamespaceBundleStats(
                msg_rate_in=sum(s.msg_rate_in for s in served),
                msg_rate_out=sum(s.msg_rate_out for s in served),
                msg_throughput_in=sum(s.msg_throughput_in for s in served),
                msg_throughput_out=sum(s.msg_throughput_out for s in served),
            )
        )
        assert usage.cpu.usage / usage.cpu.limit == pytest.approx(0.5)
        reported = report["bandwidthIn"]["usage"] / report["bandwidthIn"]["limit"]
        assert usage.bandwidth_in.usage / usage.bandwidth_in.limit == pytest.approx(reported)


def test_own_capacities_take_the_scenario_keys_and_need_the_source_brokers(
    tmp_path: Path,
) -> None:
    source = mixed_cluster()
    small, large = copy_of(tmp_path, source, "[cluster.capacity]\ncores = 2\n").capacities
    assert (small.cores, large.cores) == (2.0, 2.0)  # the scenario's key over both
    assert large.nic_bytes_per_s == pytest.approx(10 * small.nic_bytes_per_s)  # still their own
    resized = copy_of(tmp_path, source, "[cluster]\nbrokers = 3\n")
    assert resized.capacities == () and resized.capacity_of(0) == resized.capacity
    assert any("the cluster starts with 3 brokers, the source with 2" in n for n in resized.notes)
    assert copy_of(tmp_path, source, "capacity = false\n").capacities == ()
    assert load_scenario_text(EXAMPLE).capacities == ()  # the example's brokers are alike


def test_a_balanced_copy_of_mixed_machines_gives_the_larger_more_traffic(tmp_path: Path) -> None:
    """Run for real: balanced by load, the 8-core broker carries about twice the traffic of
    the 4-core one (alike, they would carry the same)."""
    scenario = copy_of(tmp_path, mixed_cluster(per_core=3))
    scenario = dataclasses.replace(scenario, duration_s=600.0)
    result = simulate(scenario, RunOptions(strategy="ballast", check_invariants=True))
    last = max(r.t_s for r in result.brokers)
    final = {r.broker: r for r in result.brokers if r.t_s == last}
    small, large = final["broker-000:8080"], final["broker-001:8080"]
    assert large.msg_rate >= 1.5 * small.msg_rate
    assert abs(large.load - small.load) < 0.1
