"""Rate and size changes through a whole run (Pulsar's load-simulation ``change``): a
``scale_rates`` event with ``size_factor`` makes the chosen topics' messages bigger, and the
brokers' reported load follows, bandwidth-bound here."""

from __future__ import annotations

import tomllib

from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import parse_scenario
from ballast.sim.summary import summarize

SCENARIO = """
duration = "6m"
step = "30s"
[settings]
loadBalancerSheddingEnabled = false
[cluster]
brokers = 2
[cluster.capacity]
nic_gbps = 0.01
[[namespaces]]
name = "ns"
bundles = 4
topics = 40
rate = 10
size = 1000
"""


def final_mean_load(extra: str) -> float:
    scenario = parse_scenario(tomllib.loads(SCENARIO + extra))
    return float(summarize(simulate(scenario, RunOptions()))["final"]["meanLoad"])


def test_bigger_messages_raise_the_bandwidth_bound_load() -> None:
    plain = final_mean_load("")
    bigger = final_mean_load('[[events]]\nat = "1m"\nscale_rates = { size_factor = 3 }\n')
    faster = final_mean_load('[[events]]\nat = "1m"\nscale_rates = { factor = 3 }\n')
    assert plain > 0
    # 40 topics × 10 msg/s × 1000 B in and out of a 10 Mbit/s NIC: the NIC is the load.
    assert bigger / plain > 2.5
    assert abs(bigger - faster) / faster < 0.1  # three times the bytes either way


def test_convergence_counts_from_topics_created_late() -> None:
    """create_topics adds load like scale_rates does: convergence counted from before it."""
    events = '[[events]]\nat = "1m"\nscale_rates = { factor = 2 }\n'
    events += '[[events]]\nat = "3m"\ncreate_topics = { namespace = "ns", count = 10 }\n'
    scenario = parse_scenario(tomllib.loads(SCENARIO + events))
    summary = summarize(simulate(scenario, RunOptions()))
    assert summary["afterLastEvent"]["fromS"] == 180
