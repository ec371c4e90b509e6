"""The invariant checks of a run (``--check-invariants``) observe without changing it: a run
with them gives the figures of a run without them, even where the store lags and the checks
retry on timers of their own; and a violation they find ends the run."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from ballast.sim import runner
from ballast.sim.invariants import InvariantViolation
from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import parse_scenario
from ballast.sim.summary import summarize

# Brokers join, one crashes and comes back, rates wander: moves happen while steps are taken.
SCENARIO = """
duration = "5m"
step = "15s"
seed = 7
[cluster]
brokers = 3
[[namespaces]]
name = "a"
bundles = 16
topics = 400
rate = 20
rate_max = 80
processes = [ { kind = "random_walk", sigma = 0.5 } ]
[[events]]
at = "1m"
add_brokers = 2
[[events]]
at = "2m"
crash_brokers = 1
restart_after = "30s"
"""

# Every kind of event and rate process: lookups, moves and restarts fall on the same instants
# as other timers. Before timers due together fired in the order they were set, the checks'
# retry timers reordered them here, and `threshold` ended at std-dev 0.132 checked, 0.044 not.
BUSY = """
duration = "30m"
step = "15s"
seed = 5
tenant = "qa"
[settings]
loadBalancerSheddingIntervalMinutes = 1
loadBalancerSheddingExcludedNamespaces = ["qa/x", "qa/y"]
[cluster]
brokers = 4
[cluster.capacity]
cores = 8
cpu_per_msg_us = 20
cpu_per_byte_ns = 2
nic_gbps = 1
memory_mb = 8192
base_memory_mb = 512
memory_per_topic_mb = 0.05
[metrics]
target_std = 0.08
[[namespaces]]
name = "orders"
bundles = 16
topics = 800
rate = 20
rate_max = 40
size = 1024
size_sigma = 0.5
fan_out = 2.0
producers = 2
consumers = 2
popularity = 0.8
anti_affinity_group = "g"
processes = [
  { kind = "diurnal", amplitude = 0.4, period = "24h", phase = "1h", jitter = "30m" },
  { kind = "random_walk", sigma = 0.05, min = 0.8, max = 1.25 },
]
[[namespaces]]
name = "qa/clicks"
bundles = 8
topics = 400
rate = 10
processes = [
  { kind = "constant" },
  { kind = "bursts", every = "5m", duration = "1m", share = 0.2, factor = 4 },
  { kind = "hot_spot", share = 0.05, factor = 8, move_every = "3m" },
]
[[events]]
at = "2m"
add_brokers = 2
capacity = { cores = 16 }
[[events]]
at = "4m"
create_namespace = { name = "late", topics = 200, bundles = 4, rate = 5 }
[[events]]
at = "5m"
create_topics = { namespace = "late", count = 100 }
[[events]]
at = "5m30s"
create_topics = { namespace = "orders", count = 50, idle = true }
[[events]]
at = "6m"
scale_rates = { factor = 2, namespace = "orders", share = 0.2 }
[[events]]
at = "7m"
scale_rates = { factor = 3, brokers = 1, pick = "busiest" }
[[events]]
at = "8m"
scale_rates = { size_factor = 2, namespace = "clicks" }
[[events]]
at = "9m"
crash_brokers = 1
pick = "random"
restart_after = "1m"
[[events]]
at = "11m"
crash_brokers = [1]
[[events]]
at = "13m"
stop_brokers = 1
pick = "first"
graceful = false
[[events]]
at = "15m"
stop_brokers = [5]
graceful = true
[[events]]
at = "17m"
restart_brokers = "all"
interval = "20s"
down = "15s"
[[events]]
at = "20m"
restart_brokers = 2
graceful = false
pick = "last"
"""


@pytest.mark.parametrize(("text", "strategy"), [(SCENARIO, "ballast"), (BUSY, "threshold")])
def test_a_checked_run_is_the_same_run(
    monkeypatch: pytest.MonkeyPatch, text: str, strategy: str
) -> None:
    scenario = parse_scenario(tomllib.loads(text))
    retries: list[float] = []
    original = runner.check_settled

    async def counting(*args: Any, **kwargs: Any) -> None:
        clock = args[2]
        started = clock.monotonic()
        await original(*args, **kwargs)
        retries.append(clock.monotonic() - started)

    monkeypatch.setattr(runner, "check_settled", counting)
    checked = simulate(scenario, RunOptions(strategy=strategy, check_invariants=True))
    plain = simulate(scenario, RunOptions(strategy=strategy))
    assert any(waited > 0 for waited in retries)  # some check did wait for the store
    assert checked.invariant_checks == len(checked.steps) and plain.invariant_checks == 0
    assert checked.steps == plain.steps and checked.brokers == plain.brokers
    assert checked.decisions == plain.decisions
    first, second = summarize(checked), summarize(plain)
    first.pop("invariantChecks"), second.pop("invariantChecks")
    assert first == second


def test_a_violation_ends_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0

    async def failing_third(*_args: Any, **_kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise InvariantViolation("bundle t/a/0x0_0x1 owned twice")

    monkeypatch.setattr(runner, "check_settled", failing_third)
    scenario = parse_scenario(tomllib.loads(SCENARIO))
    with pytest.raises(InvariantViolation, match="owned twice"):
        simulate(scenario, RunOptions(check_invariants=True))
    assert calls == 3  # found at the third step's check, raised at the fourth step
