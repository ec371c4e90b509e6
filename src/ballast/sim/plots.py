"""Charts of a run (matplotlib, the Agg backend: no display needed):

- :func:`plot_run`: every running broker's load over time with the shedding moves marked
  (triangles at the top: transfers and unloads; squares: splits) and the events as dashed
  lines; the standard deviation of broker loads against the target; the max load over its
  lower bound; topics without an owner.
- :func:`plot_comparison`: strategies side by side — standard deviation and max/bound over
  time, and bars of shedding moves, topic-seconds without an owner and convergence time.

PNG files carry no timestamp or software tag, so the same run draws the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ballast.atomic_files import replaced_whole
from ballast.chart_text import plain
from ballast.sim.runner import RunResult

_METADATA: dict[str, str | None] = {"Software": None}


def _save(figure: Figure, path: Path) -> Path:
    try:
        with replaced_whole(path) as partial:
            figure.savefig(partial, dpi=100, metadata=_METADATA, format="png")
    finally:
        plt.close(figure)
    return path


def _minutes(values: Sequence[float]) -> list[float]:
    return [v / 60.0 for v in values]


def _mark_events(axes: Axes, result: RunResult) -> None:
    for t_s, kind in result.event_times:
        axes.axvline(t_s / 60.0, color="0.5", linestyle="--", linewidth=0.8)
        axes.text(
            t_s / 60.0,
            1.0,
            f" {kind}",
            rotation=90,
            fontsize=7,
            va="top",
            transform=axes.get_xaxis_transform(),
            color="0.35",
        )


def plot_run(result: RunResult, path: Path) -> Path:
    """The chart of one run (see the module docstring)."""
    figure, (loads, spread, ratio, unowned) = plt.subplots(
        4, 1, figsize=(11, 10), sharex=True, gridspec_kw={"height_ratios": [3, 1.3, 1.3, 1]}
    )
    series: dict[str, tuple[list[float], list[float]]] = {}
    for record in result.brokers:
        times, values = series.setdefault(record.broker, ([], []))
        times.append(record.t_s / 60.0)
        values.append(record.load)
    colours = plt.get_cmap("tab20")
    for position, (broker, (times, values)) in enumerate(sorted(series.items())):
        loads.plot(
            times,
            values,
            linewidth=0.9,
            color=colours(position % 20),
            label=plain(broker) if len(series) <= 12 else None,
        )
    top = max((max(v) for _, v in series.values() if v), default=1.0)
    moves = [d for d in result.decisions if d.origin == "shedding"]
    splits = [d for d in result.decisions if d.action == "split"]
    if moves:
        loads.plot(
            [d.t_s / 60.0 for d in moves],
            [top * 1.04] * len(moves),
            "v",
            color="tab:red",
            markersize=4,
            label="shedding move",
        )
    if splits:
        loads.plot(
            [d.t_s / 60.0 for d in splits],
            [top * 1.08] * len(splits),
            "s",
            color="tab:purple",
            markersize=4,
            label="split",
        )
    _mark_events(loads, result)
    loads.set_ylabel("broker load")
    loads.set_title(f"{plain(result.scenario.name)} — {result.strategy} (seed {result.seed})")
    if loads.get_legend_handles_labels()[0]:  # none past 12 brokers with no move or split
        loads.legend(fontsize=7, loc="upper right", ncol=2)
    steps = result.steps
    minutes = _minutes([s.t_s for s in steps])
    spread.plot(minutes, [s.std for s in steps], color="tab:blue")
    spread.axhline(result.scenario.target_std, color="tab:green", linestyle=":", label="target")
    spread.set_ylabel("std dev")
    spread.legend(fontsize=7, loc="upper right")
    ratio.plot(minutes, [s.ratio for s in steps], color="tab:orange")
    ratio.axhline(1.1, color="tab:green", linestyle=":", label="1.1")
    ratio.set_ylabel("max / bound")
    ratio.legend(fontsize=7, loc="upper right")
    unowned.plot(minutes, [s.unowned_topics for s in steps], color="tab:gray")
    unowned.set_ylabel("topics unowned")
    unowned.set_xlabel("minutes")
    figure.tight_layout()
    return _save(figure, path)


def _convergence_bars(axes: Axes, names: list[str], seconds: list[float | None]) -> None:
    """Minutes until the std-dev stayed under the target; "never" where it did not."""
    minutes = [0.0 if value is None else value / 60 for value in seconds]
    axes.bar(names, minutes, color="tab:green")
    for position, value in enumerate(seconds):
        if value is None:
            axes.text(position, 0, "never", ha="center", va="bottom", fontsize=8)
    axes.set_title("minutes to converge after the last event")


def plot_comparison(
    results: Sequence[RunResult], summaries: Sequence[Mapping[str, Any]], path: Path
) -> Path:
    """Strategies side by side (see the module docstring)."""
    figure, axes = plt.subplot_mosaic(
        "SSSRRR;MMUUCC", figsize=(13, 8)
    )  # S(pread), R(atio) over time; M(oves), U(nowned), C(onverged) bars
    spread, ratio = axes["S"], axes["R"]
    for result in results:
        minutes = _minutes([s.t_s for s in result.steps])
        spread.plot(minutes, [s.std for s in result.steps], label=result.strategy)
        ratio.plot(minutes, [s.ratio for s in result.steps], label=result.strategy)
    if results:
        spread.axhline(results[0].scenario.target_std, color="0.3", linestyle=":")
        spread.set_title(f"{plain(results[0].scenario.name)}: std dev of broker load")
    ratio.axhline(1.1, color="0.3", linestyle=":")
    ratio.set_title("max load / lower bound")
    for axes_ in (spread, ratio):
        axes_.set_xlabel("minutes")
        axes_.legend(fontsize=8)
    names = [r.strategy for r in results]
    shed = [int(s["moves"]["shedding"]) for s in summaries]
    axes["M"].bar(names, shed, color="tab:red")
    axes["M"].set_title("shedding moves")
    seconds = [float(s["unownedTopicSeconds"]) for s in summaries]
    axes["U"].bar(names, seconds, color="tab:gray")
    axes["U"].set_title("topic-seconds without an owner")
    _convergence_bars(axes["C"], names, [s["convergenceS"] for s in summaries])
    for name in "MUC":
        axes[name].tick_params(axis="x", labelrotation=30, labelsize=8)
    figure.tight_layout()
    return _save(figure, path)
