"""Copying a cluster's load into a scenario (``[copy]``): each source bundle becomes a
namespace whose simulated bundle reports the source's rates and throughput in again; stale,
idle and outbound-only bundles are handled and said; bad sources are named errors."""

from __future__ import annotations

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
