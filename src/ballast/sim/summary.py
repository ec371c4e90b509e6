"""The totals of a run: final and time-averaged balance, convergence, moves by origin, bounces,
topic-seconds without an owner, lookups, how fast new brokers got load, and the scenario's
expectations checked. A pure function of the run's record; JSON-ready, floats rounded to six
decimals so the file reads well (and stays byte-identical for the same run)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ballast.model.config import defaults
from ballast.sim import metrics
from ballast.sim.events import EVENT_KINDS
from ballast.sim.runner import RunResult, StepRecord
from ballast.sim.scenario import Expectations

# Every kind of event changes the brokers or the load: convergence counts from the last.
CONVERGENCE_EVENTS = frozenset(EVENT_KINDS)


def _round(value: float) -> float:
    return 0.0 if value == 0 else round(value, 6)


def changed_settings(result: RunResult) -> dict[str, Any]:
    """The run's settings that differ from the defaults."""
    base = defaults().values
    changed: dict[str, Any] = {}
    for key, value in sorted(result.settings.values.items()):
        if base.get(key) != value:
            changed[key] = list(value) if isinstance(value, tuple) else value
    return changed


def reference_time(result: RunResult) -> float:
    """Convergence is measured from the last event that disturbs the balance (0 if none)."""
    disturbing = [t for t, kind in result.event_times if kind in CONVERGENCE_EVENTS]
    return max(disturbing, default=0.0)


def steps_after_last_event(result: RunResult) -> list[StepRecord]:
    """The steps measured after the last event (every step, in a run without events). A step
    is measured before the events at its own time: the step at the event's time is the state
    before it, and counted it put the figures of the cluster before the event among those
    after it."""
    since = reference_time(result)
    if not any(kind in CONVERGENCE_EVENTS for _, kind in result.event_times):
        return list(result.steps)
    return [s for s in result.steps if s.t_s > since]


def _interval_s(result: RunResult) -> float:
    return result.settings.get_int("loadBalancerSheddingIntervalMinutes") * 60.0


def new_brokers(result: RunResult) -> list[dict[str, Any]]:
    """For each broker started after the beginning: when, and how long until it carried
    load (in seconds and in shedding cycles)."""
    times = sorted({b.t_s for b in result.brokers})
    by_time: dict[float, dict[str, float]] = {t: {} for t in times}
    for record in result.brokers:
        by_time[record.t_s][record.broker] = record.load
    timeline = [by_time[t] for t in times]
    interval = _interval_s(result)
    found: list[dict[str, Any]] = []
    for broker, starts in sorted(result.broker_starts.items()):
        for started in starts:
            if started <= 0:
                continue
            loaded = metrics.first_loaded(times, timeline, broker, started)
            after = None if loaded is None else loaded - started
            found.append(
                {
                    "broker": broker,
                    "startedS": _round(started),
                    "loadedAfterS": None if after is None else _round(after),
                    "cycles": None if after is None else math.ceil(after / interval - 1e-9),
                }
            )
    return found


def _after(after: list[StepRecord]) -> dict[str, float | None]:
    """The mean std-dev and ratio, and the largest std-dev, over the steps ``after`` the last
    event that had a broker and load (None if none had: a cluster without brokers, or whose
    brokers carry nothing yet — the first step, before any topic is placed — has no
    balance to measure)."""
    steps = [s for s in after if s.brokers > 0 and s.bound > 0]
    if not steps:
        return {"meanStd": None, "meanRatio": None, "maxStd": None}
    return {
        "meanStd": _round(sum(s.std for s in steps) / len(steps)),
        "meanRatio": _round(sum(s.ratio for s in steps) / len(steps)),
        "maxStd": max(_round(s.std) for s in steps),
    }


def _final(step: StepRecord) -> dict[str, Any]:
    """The load figures at the end; with no broker left only the lower bound is known."""

    def measured(value: float) -> float | None:
        return _round(value) if step.brokers > 0 else None

    return {
        "brokers": step.brokers,
        "meanLoad": measured(step.mean),
        "std": measured(step.std),
        "maxLoad": measured(step.maximum),
        "lowerBound": _round(step.bound),
        "ratio": measured(step.ratio),
    }


def summarize(result: RunResult) -> dict[str, Any]:
    """The summary of a run (see the module docstring)."""
    scenario = result.scenario
    since = reference_time(result)
    after = steps_after_last_event(result)
    times = [s.t_s for s in after]
    # A step without brokers is not balanced: it must not count toward convergence.
    stds = [s.std if s.brokers > 0 else math.inf for s in after]
    converged = metrics.convergence_time(times, stds, scenario.target_std, since)
    grace_s = result.settings.get_int("loadBalancerSheddingGracePeriodMinutes") * 60.0
    arrivals = new_brokers(result)
    worst_cycles = [a["cycles"] for a in arrivals]
    body: dict[str, Any] = {
        "scenario": scenario.name,
        "description": scenario.description,
        "strategy": result.strategy,
        "seed": result.seed,
        "durationS": _round(scenario.duration_s),
        "stepS": _round(scenario.step_s),
        "targetStd": scenario.target_std,
        "settings": changed_settings(result),
        "notes": list(scenario.notes),
        "final": _final(result.steps[-1]),
        "afterLastEvent": {
            "fromS": _round(since),
            **_after(after),
        },
        "convergenceS": None if converged is None else _round(converged),
        "moves": {
            "shedding": metrics.shedding_moves(result.decisions),
            "splits": sum(1 for d in result.decisions if d.action == "split"),
            "byOrigin": metrics.moves_by_origin(result.decisions),
        },
        "bounces": metrics.count_bounces(result.decisions, grace_s),
        "unownedTopicSeconds": _round(result.unowned_topic_seconds),
        "lookups": {
            "clients": result.client_lookups,
            "clientFailures": result.failed_lookups,
            "brokers": result.lookups,
            "redirects": result.redirects,
        },
        "newBrokers": arrivals,
        "newBrokersLoadedWithinCycles": (
            None if not arrivals or None in worst_cycles else max(worst_cycles)
        ),
        "invariantChecks": result.invariant_checks,
    }
    body["expectations"] = check_expectations(scenario.expect, body)
    return body


def check_expectations(expect: Expectations, summary: Mapping[str, Any]) -> dict[str, Any]:
    """Each expectation the scenario states: what was expected, what happened, and whether it
    holds."""
    checks: dict[str, Any] = {}

    def at_most(name: str, limit: float | None, actual: float | None) -> None:
        if limit is not None:
            ok = actual is not None and actual <= limit
            checks[name] = {"expected": limit, "actual": actual, "ok": ok}

    final = summary["final"]
    at_most("finalStdMax", expect.final_std_max, final["std"])
    at_most("finalRatioMax", expect.final_ratio_max, final["ratio"])
    at_most("convergedWithinS", expect.converged_within_s, summary["convergenceS"])
    at_most("movesMax", expect.moves_max, summary["moves"]["shedding"])
    at_most("bouncesMax", expect.bounces_max, summary["bounces"])
    at_most(
        "newBrokersLoadedWithinCycles",
        expect.new_brokers_loaded_within_cycles,
        summary["newBrokersLoadedWithinCycles"],
    )
    if "newBrokersLoadedWithinCycles" in checks and not summary["newBrokers"]:
        checks["newBrokersLoadedWithinCycles"]["ok"] = True  # no broker joined: nothing to load
    at_most(
        "unownedTopicSecondsMax", expect.unowned_topic_seconds_max, summary["unownedTopicSeconds"]
    )
    if expect.moves_min is not None:
        actual = summary["moves"]["shedding"]
        checks["movesMin"] = {
            "expected": expect.moves_min,
            "actual": actual,
            "ok": actual >= expect.moves_min,
        }
    return checks


# Each expectation's summary field and the [expect] key a scenario file writes it with.
EXPECT_KEYS = {
    "finalStdMax": "final_std_max",
    "finalRatioMax": "final_ratio_max",
    "convergedWithinS": "converged_within",
    "movesMax": "moves_max",
    "movesMin": "moves_min",
    "bouncesMax": "bounces_max",
    "newBrokersLoadedWithinCycles": "new_brokers_loaded_within_cycles",
    "unownedTopicSecondsMax": "unowned_topic_seconds_max",
}


def failed_expectations(summary: Mapping[str, Any]) -> list[str]:
    """Readable lines for every expectation that does not hold, each named by its
    ``[expect]`` key and its summary field."""
    lines = []
    for name, check in summary["expectations"].items():
        if not check["ok"]:
            bound = "at least" if name == "movesMin" else "at most"
            actual = check["actual"]
            if actual is None:  # a load figure with no broker left, or a time never reached
                actual = "no brokers" if name in ("finalStdMax", "finalRatioMax") else "never"
            lines.append(
                f"{EXPECT_KEYS[name]} ({name}): expected {bound} {check['expected']}, got {actual}"
            )
    return lines
