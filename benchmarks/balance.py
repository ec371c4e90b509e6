"""Balance: every strategy profile on every library scenario, side by side, in one run; and the
simulator's speed on a day of a large cluster.

    .venv/bin/python benchmarks/balance.py [--scenarios a,b,...] [--strategies a,b:k=v,...]
                                           [--out DIR] [--speed-only]

Each (scenario, strategy) pair is replayed through the real runtime on virtual time, exactly as
``ballast simulate SCENARIO --strategy NAME`` does, one after the other in this process. For
each it reports the final standard deviation of broker loads, the final max load over the lower
bound, the moves (shedding unloads and transfers, plus splits), the transfers off brokers that
drain before they stop, topic-seconds without an owner, the convergence time after the last
event, bounces (a bundle moved back within the grace period), how many shedding cycles new
brokers waited for load, and the wall seconds the run took. Then it checks Ballast's goals on
the same results (see ``check_goals``) and states which hold. Writes ``balance.md`` (the
tables) and ``balance.json`` (every summary, the goals and the timings) to ``--out``, and
prints the Markdown.

A strategy may carry settings: ``transfer:loadBalancerBrokerLoadTargetStd=0.05`` is Pulsar's
TransferShedder asked for the same std-dev as Ballast's goal (its default target is 0.25, so
on its defaults it stops moving long before that goal). By default the run includes that
variant beside every profile, so the moves of ``ballast`` can be compared with what
TransferShedder makes when it aims at the same balance.

The speed benchmark is the ``day-100-brokers`` row (24 h of 100 brokers, 10,000 bundles,
100,000 topics): its wall time with Ballast's strategy, against a target of 60 s.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ballast.model.config.loader import ConfigError, load_settings
from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import load_scenario
from ballast.sim.strategies import PROFILES
from ballast.sim.summary import summarize

REPO = Path(__file__).resolve().parent.parent
LIBRARY = REPO / "scenarios"
SPEED_SCENARIO = "day-100-brokers"
SPEED_TARGET_S = 60.0
OURS = "ballast"
REFERENCE = "transfer"
STD_GOAL = 0.05
# TransferShedder asked for the std-dev of Ballast's goal: its moves at the same target
REFERENCE_AT_GOAL = f"{REFERENCE}:loadBalancerBrokerLoadTargetStd={STD_GOAL}"
RATIO_GOAL = 1.10
SCALE_UP = "scale-up-5-to-10"
SCALE_UP_GOAL_S = 300.0
NEW_BROKER_CYCLES_GOAL = 2


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    strategy: str
    wall_s: float
    summary: dict[str, Any]

    @property
    def moves(self) -> int:
        moves = self.summary["moves"]
        return int(moves["shedding"]) + int(moves["splits"])

    @property
    def drains(self) -> int:
        """Transfers off brokers shut down with a drain: the events force them, but how
        many there are follows from where the strategy put the bundles before."""
        drain = self.summary["moves"]["byOrigin"].get("drain", {})
        return sum(int(count) for count in drain.values())


def parse_strategy(spec: str) -> tuple[str, tuple[str, ...]]:
    """``PROFILE`` or ``PROFILE:key=value:key=value``: the profile and its setting overrides."""
    profile, *settings = spec.split(":")
    overrides = tuple(item for item in settings if item)
    if profile not in PROFILES:
        raise SystemExit(f'error: unknown strategy "{profile}" (valid: {", ".join(PROFILES)})')
    try:
        load_settings(overrides=list(overrides), strict=True)
    except ConfigError as error:
        raise SystemExit(f'error: settings of "{spec}": {error}') from None
    return profile, overrides


def run_one(path: Path, strategy: str, profile: str, overrides: tuple[str, ...]) -> Row:
    """``strategy`` as given (the row's label), parsed into ``profile`` and ``overrides``."""
    scenario = load_scenario(path)
    gc.collect()
    started = time.perf_counter()
    result = simulate(scenario, RunOptions(strategy=profile, overrides=overrides))
    wall_s = time.perf_counter() - started
    summary = summarize(result)
    del result
    return Row(scenario.name, strategy, wall_s, summary)


def _cell_convergence(summary: dict[str, Any]) -> str:
    converged = summary["convergenceS"]
    return "never" if converged is None else f"{converged:.0f} s"


def _cell_cycles(summary: dict[str, Any]) -> str:
    if not summary["newBrokers"]:
        return "–"
    cycles = summary["newBrokersLoadedWithinCycles"]
    return "never" if cycles is None else str(cycles)


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| scenario | strategy | final std | max/bound | moves | drain transfers "
        "| unowned topic-s | converged | bounces | new-broker cycles | expect | wall s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for row in rows:
        summary = row.summary
        final = summary["final"]
        failed = [name for name, check in summary["expectations"].items() if not check["ok"]]
        expect = "ok" if not failed else "missed: " + ", ".join(failed)
        name = f"**{row.strategy}**" if row.strategy == OURS else row.strategy
        lines.append(
            f"| {row.scenario} | {name} | {final['std']:.3f} | {final['ratio']:.2f} "
            f"| {row.moves} | {row.drains} | {summary['unownedTopicSeconds']:,.0f} "
            f"| {_cell_convergence(summary)} | {summary['bounces']} | {_cell_cycles(summary)} "
            f"| {expect} | {row.wall_s:.1f} |"
        )
    return "\n".join(lines)


def check_goals(rows: list[Row]) -> list[dict[str, Any]]:
    """Ballast's goals, each with whether it holds and where it does not."""
    ours = {r.scenario: r for r in rows if r.strategy == OURS}
    reference = {r.scenario: r for r in rows if r.strategy == REFERENCE}
    goals: list[dict[str, Any]] = []

    def goal(name: str, misses: list[str], checked: int) -> None:
        met = None if checked == 0 else not misses
        goals.append({"goal": name, "met": met, "misses": misses})

    misses = [
        f"{s}: std {r.summary['final']['std']:.3f}"
        for s, r in ours.items()
        if r.summary["final"]["std"] > STD_GOAL
    ]
    goal(f"final std <= {STD_GOAL}", misses, len(ours))
    misses = [
        f"{s}: max/bound {r.summary['final']['ratio']:.2f}"
        for s, r in ours.items()
        if r.summary["final"]["ratio"] > RATIO_GOAL
    ]
    goal(f"final max load <= {RATIO_GOAL:.2f} x lower bound", misses, len(ours))
    if SCALE_UP in ours:
        converged = ours[SCALE_UP].summary["convergenceS"]
        misses = (
            []
            if converged is not None and converged < SCALE_UP_GOAL_S
            else [f"{SCALE_UP}: {_cell_convergence(ours[SCALE_UP].summary)}"]
        )
        goal(f"{SCALE_UP} rebalanced in < {SCALE_UP_GOAL_S:.0f} s", misses, 1)
    pairs = [(s, r, reference[s]) for s, r in ours.items() if s in reference]
    misses = [
        f"{s}: {r.moves} vs {ref.moves}{_reference_note(ref)}"
        for s, r, ref in pairs
        if r.moves > ref.moves
    ]
    goal(f"moves <= {REFERENCE}'s", misses, len(pairs))
    drained = [(s, r, ref) for s, r, ref in pairs if r.drains or ref.drains]
    misses = [
        f"{s}: {r.moves + r.drains} vs {ref.moves + ref.drains}{_reference_note(ref)}"
        for s, r, ref in drained
        if r.moves + r.drains > ref.moves + ref.drains
    ]
    goal(
        f"moves counting drain transfers <= {REFERENCE}'s where brokers drain (a measure "
        "beside the goal above)",
        misses,
        len(drained),
    )
    at_goal = {r.scenario: r for r in rows if r.strategy == REFERENCE_AT_GOAL}
    pairs = [(s, r, at_goal[s]) for s, r in ours.items() if s in at_goal]
    misses = [
        f"{s}: {r.moves} vs {ref.moves}{_reference_note(ref)}"
        for s, r, ref in pairs
        if r.moves > ref.moves
    ]
    goal(
        f"moves <= `{REFERENCE_AT_GOAL}`'s, TransferShedder aiming at the goal's std-dev "
        "(a measure beside the goal above)",
        misses,
        len(pairs),
    )
    misses = [f"{s}: {r.summary['bounces']}" for s, r in ours.items() if r.summary["bounces"]]
    goal("no bounces", misses, len(ours))
    arrivals = {s: r for s, r in ours.items() if r.summary["newBrokers"]}
    misses = [
        f"{s}: {_cell_cycles(r.summary)}"
        for s, r in arrivals.items()
        if r.summary["newBrokersLoadedWithinCycles"] is None
        or r.summary["newBrokersLoadedWithinCycles"] > NEW_BROKER_CYCLES_GOAL
    ]
    goal(f"new brokers loaded within {NEW_BROKER_CYCLES_GOAL} cycles", misses, len(arrivals))
    return goals


def _reference_note(reference: Row) -> str:
    failed = [n for n, check in reference.summary["expectations"].items() if not check["ok"]]
    return f" ({reference.strategy} missed {', '.join(failed)})" if failed else ""


def goals_markdown(goals: list[dict[str, Any]]) -> str:
    lines = [f"Goals of `{OURS}` on these runs:", ""]
    for item in goals:
        if item["met"] is None:
            status = "not checked (no run to judge it by)"
        elif item["met"]:
            status = "met"
        else:
            status = "NOT met (" + "; ".join(item["misses"]) + ")"
        lines.append(f"- {item['goal']}: {status}")
    return "\n".join(lines)


def speed_markdown(rows: list[Row]) -> str:
    found = [r for r in rows if r.scenario == SPEED_SCENARIO and r.strategy == OURS]
    if not found:
        return ""
    wall_s = found[0].wall_s
    verdict = "met" if wall_s <= SPEED_TARGET_S else "NOT met"
    return (
        f"Simulator speed: {SPEED_SCENARIO} with `{OURS}` took {wall_s:.1f} s wall "
        f"(target <= {SPEED_TARGET_S:.0f} s: {verdict})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", help="comma-separated names (default: all of scenarios/)")
    parser.add_argument(
        "--strategies",
        help="comma-separated profiles, each optionally with settings as "
        f"PROFILE:key=value:key=value (default: every profile and {REFERENCE_AT_GOAL})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/ballast-balance"),
        help="where balance.md and balance.json go (default: /tmp/ballast-balance)",
    )
    parser.add_argument(
        "--speed-only", action="store_true", help=f"only {SPEED_SCENARIO} with {OURS}"
    )
    args = parser.parse_args()
    logging.getLogger("ballast").setLevel(logging.ERROR)
    if args.speed_only:
        names, strategies = [SPEED_SCENARIO], [OURS]
    else:
        names = (
            args.scenarios.split(",")
            if args.scenarios
            else sorted(p.stem for p in LIBRARY.glob("*.toml"))
        )
        strategies = (
            args.strategies.split(",") if args.strategies else [*PROFILES, REFERENCE_AT_GOAL]
        )
    parsed = {strategy: parse_strategy(strategy) for strategy in strategies}  # all, before a run
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rows: list[Row] = []
    for name in names:
        for strategy in strategies:
            row = run_one(LIBRARY / f"{name}.toml", strategy, *parsed[strategy])
            rows.append(row)
            print(f"# {name} · {strategy}: {row.wall_s:.1f} s", flush=True)
    total_s = time.perf_counter() - started
    goals = check_goals(rows)
    machine = (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average {load_before:.1f} at the start; "
        f"{len(rows)} runs in {total_s:.0f} s"
    )
    text = "\n\n".join(
        part
        for part in (machine, markdown_table(rows), goals_markdown(goals), speed_markdown(rows))
        if part
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "balance.md").write_text(text + "\n", encoding="utf-8")
    body = {
        "machine": machine,
        "totalS": round(total_s, 1),
        "goals": goals,
        "runs": [
            {
                "scenario": r.scenario,
                "strategy": r.strategy,
                "wallS": round(r.wall_s, 2),
                "moves": r.moves,
                "summary": r.summary,
            }
            for r in rows
        ],
    }
    (args.out / "balance.json").write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
