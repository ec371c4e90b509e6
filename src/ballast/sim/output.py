"""Writing a run's outputs into a directory:

- ``summary.json``: :func:`ballast.sim.summary.summarize`;
- ``timeline.parquet`` (or ``.csv``): one row per step — the cluster's load figures, topics
  without an owner and the moves of that step;
- ``brokers.parquet``: one row per step and running broker — its load (from the traffic
  flowing through it), the load its last report claims, bundles, topics, rate, throughput;
- ``decisions.parquet``: every decision of the leaders (assignments, transfers, unloads,
  splits) with its time, origin and reason;
- ``cycles.parquet``: every shedding cycle of the leaders with the moves it proposed and its
  outcome, so that a cycle that moved nothing says why;
- ``loads.png``: every broker's load over time with the moves marked (:mod:`.plots`).

Column names are snake_case with units (``t_s``); every file is a pure function of the run, so
the same scenario, strategy and seed write the same bytes.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ballast.atomic_files import replaced_whole
from ballast.sim.metrics import Decision
from ballast.sim.runner import BrokerRecord, CycleRecord, RunResult, StepRecord

FORMATS = ("parquet", "csv")


def records_to_columns(records: Sequence[Any], fields: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [getattr(record, name) for record in records] for name in fields}


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def timeline_columns(result: RunResult) -> dict[str, list[Any]]:
    """The steps' figures; a figure a step without brokers does not have (NaN) is null."""
    columns = records_to_columns(result.steps, _fields(StepRecord))
    return {
        name: [None if isinstance(v, float) and math.isnan(v) else v for v in values]
        for name, values in columns.items()
    }


def broker_columns(result: RunResult) -> dict[str, list[Any]]:
    return records_to_columns(result.brokers, _fields(BrokerRecord))


def decision_columns(result: RunResult) -> dict[str, list[Any]]:
    return records_to_columns(result.decisions, _fields(Decision))


def cycle_columns(result: RunResult) -> dict[str, list[Any]]:
    return records_to_columns(result.cycles, _fields(CycleRecord))


def write_table(columns: Mapping[str, list[Any]], path: Path, fmt: str) -> Path:
    """Write ``columns`` to ``path`` (its suffix replaced by the format's), whole or not at
    all."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (valid: {', '.join(FORMATS)})")
    target = path.with_suffix(f".{fmt}")
    with replaced_whole(target) as partial:
        if fmt == "parquet":
            pq.write_table(pa.table(dict(columns)), partial, compression="zstd")
        else:
            names = list(columns)
            rows = zip(*(columns[n] for n in names), strict=True)
            with partial.open("w", newline="", encoding="utf-8") as out:
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(names)
                for row in rows:
                    writer.writerow(["" if v is None else v for v in row])
    return target


def write_json(value: Any, path: Path) -> Path:
    text = json.dumps(value, indent=2, sort_keys=False) + "\n"
    with replaced_whole(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return path


def run_paths(directory: Path, fmt: str, *, plots: bool) -> list[Path]:
    """The files :func:`write_run` writes into ``directory``: the summary, the timeline, broker
    and decision tables, and the chart when ``plots``."""
    tables = [
        directory / f"{name}.{fmt}" for name in ("timeline", "brokers", "decisions", "cycles")
    ]
    return [directory / "summary.json", *tables, *([directory / "loads.png"] if plots else [])]


def run_file_names() -> frozenset[str]:
    """The names of every file :func:`write_run` may write, in any format."""
    return frozenset(p.name for f in FORMATS for p in run_paths(Path(), f, plots=True))


COMPARISON_FILES = ("comparison.json", "comparison.png")


MANIFEST = ".ballast-simulate.json"
"""In ``--out``: the run folders the last ``ballast simulate`` wrote there."""


def remove_stale_runs(out: Path, labels: Sequence[str], *, compared: bool, plots: bool) -> None:
    """Remove what the last run into ``out`` left that this one does not write: the
    comparison files (without ``--compare``, or the chart with ``--no-plots``) and the run
    folders its manifest lists that this run did not write — a folder only while it holds
    nothing but a run's files, so that a copy or a folder of the user's is never touched.
    Then record this run's folders. One run at a time into the same ``out``."""
    kept = {"comparison.json", *(["comparison.png"] if plots else [])} if compared else set()
    for name in COMPARISON_FILES:
        if name not in kept and (out / name).is_file():
            (out / name).unlink()
    names = run_file_names()
    for label in sorted(set(_manifest_runs(out / MANIFEST)) - set(labels)):
        directory = out / label
        if directory.is_symlink() or not directory.is_dir():
            continue
        entries = list(directory.iterdir())
        if all(e.name in names and e.is_file() and not e.is_symlink() for e in entries):
            for entry in entries:
                entry.unlink()
            directory.rmdir()
    write_json({"runs": list(labels)}, out / MANIFEST)


def _manifest_runs(path: Path) -> list[str]:
    """The run folders a manifest lists; none if there is no readable one."""
    try:
        runs = json.loads(path.read_text(encoding="utf-8")).get("runs", [])
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(runs, list):  # a manifest edited by hand: nothing it names is trusted
        return []
    return [r for r in runs if isinstance(r, str) and r and "/" not in r and r not in (".", "..")]


def write_run(
    result: RunResult,
    summary: Mapping[str, Any],
    directory: Path,
    *,
    fmt: str = "parquet",
    plots: bool = True,
) -> list[Path]:
    """Write every output of one run into ``directory`` (created); returns the files. The
    outputs an earlier run left there that this one does not write (the other format's tables,
    a chart) are removed, so that the directory holds one run's results, not a mix."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = run_paths(directory, fmt, plots=plots)
    written = [
        write_json(summary, paths[0]),
        write_table(timeline_columns(result), paths[1], fmt),
        write_table(broker_columns(result), paths[2], fmt),
        write_table(decision_columns(result), paths[3], fmt),
        write_table(cycle_columns(result), paths[4], fmt),
    ]
    if plots:
        from ballast.sim.plots import plot_run  # matplotlib loads only when charts are drawn

        written.append(plot_run(result, paths[5]))
    every = {p for f in FORMATS for p in run_paths(directory, f, plots=True)}
    for stale in sorted(every - set(written)):
        if not stale.is_dir() or stale.is_symlink():  # a directory of that name is not ours
            stale.unlink(missing_ok=True)
    return written
