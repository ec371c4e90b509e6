"""``ballast simulate``: replay a scenario through the real runtime on virtual time, measure
balance and cost, compare strategies. See ``docs/simulator.md``."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ballast.cli.common import fail, given_path, output_console
from ballast.cli.interrupts import NotedInterrupts
from ballast.file_lock import hold_exclusive
from ballast.model.config import ConfigError
from ballast.sim.invariants import InvariantViolation
from ballast.sim.output import (
    FORMATS,
    MANIFEST,
    remove_stale_runs,
    run_paths,
    write_json,
    write_run,
)
from ballast.sim.run_settings import effective_settings, replaced_by_profile, settings_warnings
from ballast.sim.runner import RunOptions, RunResult, SimulationError, simulate
from ballast.sim.scenario import Scenario, load_scenario
from ballast.sim.schema import ScenarioError, parse_duration
from ballast.sim.strategies import PROFILES, UnknownProfile, strategy_profile
from ballast.sim.summary import failed_expectations, summarize

# The scenario library of a source checkout (src/ballast/cli/simulate.py → the repository).
CHECKOUT_LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"


def library_dirs() -> list[Path]:
    """Where scenario names are looked up: ``scenarios/`` under the current directory, then
    the library of the checkout Ballast runs from."""
    found: list[Path] = []
    for directory in (Path("scenarios"), CHECKOUT_LIBRARY):
        if directory.is_dir() and all(directory.resolve() != d.resolve() for d in found):
            found.append(directory)
    return found


def find_scenario(text: str) -> Path:
    """A scenario file: the path given, or ``<name>.toml`` in one of :func:`library_dirs`
    (the name with or without its ``.toml``)."""
    if not text.strip():
        fail("the scenario is empty: give a scenario file or a library scenario's name")
    path = Path(text)
    if path.exists():
        if path.is_dir():
            fail(f"scenario {text} is a directory, not a scenario file")
        return path
    directories = library_dirs()
    for directory in directories:
        library = directory / (text if text.endswith(".toml") else f"{text}.toml")
        if "/" not in text and library.exists():
            return library
    names = sorted({p.stem for d in directories for p in d.glob("*.toml")})
    known = f"; the library has: {', '.join(names)}" if names else ""
    fail(f"scenario {text} not found (a file, or the name of a library scenario{known})")


def _strategies(strategy: str | None, compare: str | None) -> list[str | None]:
    if strategy is not None and compare is not None:
        fail("give --strategy or --compare, not both")
    names: list[str | None] = [strategy]
    if compare is not None:
        given = [n.strip() for n in compare.split(",")] if compare != "all" else list(PROFILES)
        chosen = [n for n in given if n]
        if not chosen:
            fail("--compare needs strategy names (or all)")
        if len(chosen) < len(given):
            fail(f'--compare "{compare}" has an empty name between its commas')
        if len(chosen) > 1 and "all" in chosen:
            fail("--compare all runs every profile: give it alone, or name the strategies")
        repeated = sorted({n for n in chosen if chosen.count(n) > 1})
        if repeated:
            # each run writes to --out/<strategy>: a second run of one would overwrite the first
            fail(f"--compare names {', '.join(repeated)} more than once")
        names = list(chosen)
    for name in names:
        if name is not None:
            try:
                strategy_profile(name)
            except UnknownProfile as exc:
                fail(str(exc))
    return names


def _number_or(text: str) -> float | str:
    """``text`` as a number of seconds where it is one (``90``), else as given (``"10m"``)."""
    try:
        return float(text)
    except ValueError:
        return text


def _out_path(text: str) -> Path:
    """``--out`` as a path; an empty one is refused (it would be the current directory)."""
    return Path(given_path(text, "--out", "the directory to write the results to"))


@contextlib.contextmanager
def _prepared_out(out: Path | None) -> Iterator[None]:
    """Make ``--out`` and write a file in it before any run, so that an unwritable directory
    fails in a moment, not after a long simulation whose results would then be lost; and hold
    its lock while the block runs: two runs writing there at once would mix their files."""
    if out is None:
        yield
        return
    if out.exists() and not out.is_dir():
        fail(f"--out {out} is a file, not a directory")
    if out.is_symlink() and not out.exists():
        fail(f"--out {out} is a broken symbolic link")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create --out {out}: {exc.strerror or exc}")
    try:
        with tempfile.TemporaryFile(dir=out):
            pass
        lock = hold_exclusive(out)
    except OSError as exc:
        fail(f"cannot write to --out {out}: {exc.strerror or exc}")
    if lock is None:
        fail(f"another ballast simulate is writing to --out {out}; wait for it, or give another")
    try:
        yield
    finally:
        os.close(lock)


def _check_settings(
    loaded: Scenario, names: list[str | None], overrides: tuple[str, ...]
) -> list[str]:
    """Each run's settings, before any run: a ``--set`` that a later strategy's profile
    contradicts fails now, not after the runs before it. The runs' strategy names."""
    labels: list[str] = []
    try:
        for warning in settings_warnings(loaded, overrides):
            print(f"warning: {warning}", file=sys.stderr)
    except ConfigError as exc:
        fail(str(exc))
    for name in names:
        try:
            labels.append(
                effective_settings(loaded, RunOptions(strategy=name, overrides=overrides))[1]
            )
            for replaced in replaced_by_profile(loaded, name) if name is not None else ():
                print(f"warning: {replaced}", file=sys.stderr)
        except ConfigError as exc:
            fail(str(exc))
    return labels


def _check_targets(out: Path, labels: list[str], fmt: str, *, plots: bool, compared: bool) -> None:
    """Every path the outputs go to, before any run: a file where a run's directory goes, or
    a directory where a file goes, would otherwise fail the writing after the runs."""
    for label in labels:
        directory = out / label
        if directory.is_symlink() and not directory.exists():
            fail(f"cannot write to --out {out}: {directory} is a broken symbolic link")
        if directory.exists() and not directory.is_dir():
            fail(f"cannot write to --out {out}: {directory} is a file, not a directory")
    files = [path for label in labels for path in run_paths(out / label, fmt, plots=plots)]
    files.append(out / MANIFEST)
    if compared:
        files += [out / "comparison.json", *([out / "comparison.png"] if plots else [])]
    for path in files:
        if path.is_dir():
            fail(f"cannot write to --out {out}: {path} is a directory, not a file")


def _write_outputs(
    out: Path,
    results: list[RunResult],
    summaries: list[dict[str, Any]],
    fmt: str,
    *,
    plots: bool,
    compared: bool,
) -> None:
    for result, summary in zip(results, summaries, strict=True):
        write_run(result, summary, out / result.strategy, fmt=fmt, plots=plots)
    remove_stale_runs(out, [r.strategy for r in results], compared=compared, plots=plots)
    if compared:
        write_json(summaries, out / "comparison.json")
        if plots:
            from ballast.sim.plots import plot_comparison  # matplotlib only when drawing

            plot_comparison(results, summaries, out / "comparison.png")


def _figure(value: float | None, digits: int, unmeasured: str = "no brokers") -> str:
    """A load figure, or why there is none (the final figures: no broker left)."""
    return unmeasured if value is None else f"{value:.{digits}f}"


def _row(summary: dict[str, Any]) -> list[str]:
    final = summary["final"]
    converged = summary["convergenceS"]
    return [
        str(summary["strategy"]),
        _figure(final["std"], 3),
        _figure(final["ratio"], 2),
        # none: no step after the last event had a broker carrying load
        _figure(summary["afterLastEvent"]["meanStd"], 3, "no load"),
        "never" if converged is None else f"{converged:.0f} s",
        str(summary["moves"]["shedding"]),
        str(summary["bounces"]),
        f"{summary['unownedTopicSeconds']:.0f}",
        str(summary["lookups"]["clients"]),
    ]


def _print_table(scenario: Scenario, summaries: list[dict[str, Any]]) -> None:
    table = Table(title=f"{scenario.name} ({scenario.duration_s / 60:g} min)")
    for column in (
        "strategy",
        "final std",
        "max/bound",
        "mean std",
        "converged",
        "moves",
        "bounces",
        "unowned topic-s",
        "lookups",
    ):
        table.add_column(
            column,
            justify="left" if column == "strategy" else "right",
            no_wrap=column == "strategy",
        )
    for summary in summaries:
        table.add_row(*_row(summary))
    output_console().print(table)


def _run_all(
    loaded: Scenario, names: list[str | None], labels: list[str], base: RunOptions
) -> tuple[list[RunResult], list[dict[str, Any]]]:
    """Run each strategy in turn under a progress bar; the results and their summaries."""
    results: list[RunResult] = []
    summaries: list[dict[str, Any]] = []
    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,  # a log or a pipe gets no bar, not even its blank line
    ) as progress:
        for name, label in zip(names, labels, strict=True):
            task = progress.add_task(f"{loaded.name} · {label}", total=loaded.duration_s)

            def advance(now: float, _total: float, task: Any = task) -> None:
                progress.update(task, completed=now)

            options = dataclasses.replace(
                base,
                strategy=name,
                progress=advance,
                # side by side, each run keeps its own history (loadBalancerHistoryPath)
                history_subdir=label if len(names) > 1 else None,
            )
            try:
                result = simulate(loaded, options)
            except ConfigError as exc:
                fail(str(exc))
            except InvariantViolation as exc:
                fail(f"invariant broken ({label}): {exc}", code=1)
            except SimulationError as exc:
                fail(f"simulation failed ({label}): {exc}", code=1)
            results.append(result)
            summaries.append(summarize(result))
    return results, summaries


def simulate_command(
    scenario: Annotated[
        str,
        typer.Argument(
            metavar="SCENARIO",
            help="Scenario file (TOML), or the name of one in scenarios/. Its workload is "
            "written out, or copied from a cluster's load snapshot or load history ([copy]; "
            "docs/simulator.md).",
        ),
    ],
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help=f"Strategy to run: {', '.join(PROFILES)}. Default: the one the settings name "
            "(loadBalancerLoadSheddingStrategy, threshold unless the scenario or --set change "
            "it).",
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option("--compare", help="Strategies to run side by side: A,B,... or all."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="Replace the scenario's seed (0 or more).")
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration",
            help='Run this long instead of the scenario\'s duration (90, "90s", "10m", "1h30m"; '
            "a whole number of its steps); events from then on are left out.",
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"
        ),
    ] = None,
    out_text: Annotated[
        str | None,
        typer.Option("--out", help="Directory for the summaries, timelines and charts."),
    ] = None,
    timeline_format: Annotated[
        str, typer.Option("--format", help="Timeline files: parquet or csv.")
    ] = "parquet",
    check_invariants: Annotated[
        bool, typer.Option("--check-invariants", help="Check the invariants at every step.")
    ] = False,
    check_expectations: Annotated[
        bool,
        typer.Option("--check-expectations", help="Exit 1 if the scenario's [expect] fails."),
    ] = False,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Draw PNG charts.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON.")] = False,
) -> None:
    """Replay a scenario through the real brokers, controller and strategies on virtual time;
    print the balance it reached and what it cost, and write timelines and charts."""
    if timeline_format not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}")
    try:
        cut = None if duration is None else parse_duration(_number_or(duration), "--duration")
        if cut is not None and cut <= 0:
            raise ScenarioError("--duration: must be above 0")
        loaded = load_scenario(find_scenario(scenario), duration_s=cut)
    except ScenarioError as exc:
        message: str = exc.args[0]
        # an option's error is said as one; the scenario file's as a ScenarioError
        fail(message if message.startswith("--") else str(exc))
    for note in loaded.notes:
        print(f"note: {note}", file=sys.stderr)
    names = _strategies(strategy, compare)
    labels = _check_settings(loaded, names, tuple(overrides or ()))
    out = None if out_text is None else _out_path(out_text)
    with _prepared_out(out):
        if out is not None:
            _check_targets(out, labels, timeline_format, plots=plots, compared=compare is not None)
        logging.getLogger("ballast").setLevel(logging.ERROR)
        base = RunOptions(
            seed=seed, overrides=tuple(overrides or ()), check_invariants=check_invariants
        )
        with NotedInterrupts() as interrupts:
            try:
                results, summaries = _run_all(loaded, names, labels, base)
            except KeyboardInterrupt:
                interrupts.seen = True
        if interrupts.seen:  # also when Python swallowed the KeyboardInterrupt
            where = "to --out" if out is not None else "of the results"
            fail(f"interrupted before the runs ended: nothing written {where}", code=130)
        if out is not None:
            try:
                _write_outputs(
                    out,
                    results,
                    summaries,
                    timeline_format,
                    plots=plots,
                    compared=compare is not None,
                )
            except OSError as exc:
                # The summaries still reach stdout below the error, so the run is not lost.
                typer.echo(f"error: cannot write to --out {out}: {exc}", err=True)
                typer.echo(json.dumps(summaries, indent=2))
                raise typer.Exit(1) from None
            except KeyboardInterrupt:
                fail(
                    f"interrupted while writing to --out {out}: its files are incomplete",
                    code=130,
                )
    if as_json:
        typer.echo(json.dumps(summaries if compare is not None else summaries[0], indent=2))
    else:
        _print_table(loaded, summaries)
    failures = [f"{s['strategy']}: {line}" for s in summaries for line in failed_expectations(s)]
    for line in failures:  # told either way; an exit status only when asked for
        typer.echo(f"expectation failed: {line}", err=True)
    if failures and check_expectations:
        raise typer.Exit(1)
