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


def test_a_checked_run_is_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = parse_scenario(tomllib.loads(SCENARIO))
    retries: list[float] = []
    original = runner.check_settled

    async def counting(*args: Any, **kwargs: Any) -> None:
        clock = args[2]
        started = clock.monotonic()
        await original(*args, **kwargs)
        retries.append(clock.monotonic() - started)

    monkeypatch.setattr(runner, "check_settled", counting)
    checked = simulate(scenario, RunOptions(strategy="ballast", check_invariants=True))
    plain = simulate(scenario, RunOptions(strategy="ballast"))
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
