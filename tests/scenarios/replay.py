"""Replaying a scenario for a test: the real runtime on virtual time, the invariants checked at
every step, and the summary the ``ballast simulate`` command would print."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import load_scenario
from ballast.sim.summary import failed_expectations, summarize

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "scenarios"
DATA = Path(__file__).resolve().parent / "data"


def replay(path: Path, strategy: str, *overrides: str) -> dict[str, Any]:
    """The summary of ``path`` run with ``strategy``; every step's invariants were checked
    (an :class:`~ballast.sim.invariants.InvariantViolation` propagates)."""
    logging.getLogger("ballast").setLevel(logging.ERROR)
    scenario = load_scenario(path)
    options = RunOptions(
        strategy=strategy, overrides=overrides, check_invariants=scenario.expect.invariants
    )
    summary = summarize(simulate(scenario, options))
    if scenario.expect.invariants:
        steps = round(scenario.duration_s / scenario.step_s) + 1
        assert summary["invariantChecks"] == steps
    return summary


def failures(summary: dict[str, Any]) -> list[str]:
    """The scenario's expectations that did not hold, as readable lines."""
    return failed_expectations(summary)
