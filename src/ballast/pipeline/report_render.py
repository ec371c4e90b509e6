"""Rendering the load report: PNG charts (matplotlib's Agg canvas, no display, no global
pyplot state) and one self-contained HTML page that links them.

Pure: small pandas frames in, bytes and text out. The report job computes the frames with
Spark and writes the files.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ballast.chart_text import plain

TOP_ROWS = 20


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """What the page shows for one cluster (frames from
    :mod:`ballast.pipeline.transforms.report`, restricted to the cluster):
    ``over_time`` (broker load over time), ``brokers`` (per-broker percentiles),
    ``namespaces`` (per-namespace percentiles), ``top_series`` (the busiest namespaces'
    load over time) and ``snapshot_ms`` (every snapshot time with a broker or bundle row,
    so a history of bundle rows alone still tells its span)."""

    cluster: str
    over_time: pd.DataFrame
    brokers: pd.DataFrame
    namespaces: pd.DataFrame
    top_series: pd.DataFrame
    snapshot_ms: tuple[int, ...]


def _times(frame: pd.DataFrame) -> pd.Series:
    return pd.to_datetime(frame["snapshot_ms"], unit="ms", utc=True)


def _marker(frame: pd.DataFrame) -> str | None:
    """A dot for a series of one point, which a line alone would not draw."""
    return "o" if len(frame) == 1 else None


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _finish(figure: Figure, times: pd.Series) -> Figure:
    """Lay out a chart over time: plain numbers on the value axes (no offset such as
    ``1e-5+1.717e-1`` for a flat series), and an hour either side of a lone snapshot, which
    would otherwise get an axis of years."""
    for axes in figure.axes:
        axes.ticklabel_format(axis="y", useOffset=False)
    if times.nunique() == 1:
        moment = times.iloc[0]
        figure.axes[0].set_xlim(moment - pd.Timedelta(hours=1), moment + pd.Timedelta(hours=1))
    figure.autofmt_xdate()
    figure.tight_layout()
    return figure


def usage_figure(over_time: pd.DataFrame, cluster: str) -> Figure:
    """Broker usage percentiles across brokers, over time, in percent; brokers reporting on
    a second axis."""
    figure = Figure(figsize=(10, 4.5))
    axes = figure.add_subplot()
    frame = over_time.sort_values("snapshot_ms")
    times = _times(frame)
    for column, label in (
        ("usage_max", "max"),
        ("usage_p99", "p99"),
        ("usage_p90", "p90"),
        ("usage_p50", "p50"),
    ):
        axes.plot(times, frame[column] * 100.0, label=label, linewidth=1.2, marker=_marker(frame))
    axes.set_ylabel("weighted max resource usage (%)")
    axes.set_title(f"{plain(cluster)}: broker load across brokers")
    axes.grid(True, alpha=0.3)
    counts = axes.twinx()
    counts.step(
        times,
        frame["brokers"],
        where="post",
        color="grey",
        alpha=0.5,
        label="brokers",
        marker=_marker(frame),
    )
    counts.set_ylim(bottom=0)  # a count from zero, so a flat line does not read as a swing
    counts.set_ylabel("brokers reporting")
    counts.yaxis.set_major_locator(MaxNLocator(integer=True))
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = counts.get_legend_handles_labels()
    axes.legend(handles + more_handles, labels + more_labels, loc="upper left", fontsize=8)
    return _finish(figure, times)


def imbalance_figure(over_time: pd.DataFrame, cluster: str) -> Figure:
    """Message-rate peak-to-mean and coefficient of variation, and usage spread."""
    figure = Figure(figsize=(10, 4.5))
    axes = figure.add_subplot()
    frame = over_time.sort_values("snapshot_ms")
    times = _times(frame)
    marker = _marker(frame)
    axes.plot(
        times, frame["rate_peak_to_mean"], label="msg rate max / mean", linewidth=1.2, marker=marker
    )
    axes.plot(times, frame["rate_cv"], label="msg rate std / mean", linewidth=1.2, marker=marker)
    axes.set_ylabel("ratio")
    axes.set_title(f"{plain(cluster)}: imbalance between brokers")
    axes.grid(True, alpha=0.3)
    spread = axes.twinx()
    spread.plot(
        times,
        frame["usage_spread"] * 100.0,
        color="tab:red",
        alpha=0.6,
        linewidth=1.0,
        label="usage max - mean (points)",
        marker=marker,
    )
    spread.set_ylabel("usage max - mean (percentage points)")
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = spread.get_legend_handles_labels()
    axes.legend(handles + more_handles, labels + more_labels, loc="upper left", fontsize=8)
    return _finish(figure, times)


def namespace_figure(top_series: pd.DataFrame, cluster: str) -> Figure:
    """The busiest namespaces' message rates over time."""
    figure = Figure(figsize=(10, 4.5))
    axes = figure.add_subplot()
    for namespace in sorted(str(n) for n in top_series["namespace"].unique()):
        series = top_series[top_series["namespace"] == namespace].sort_values("snapshot_ms")
        axes.plot(
            _times(series),
            series["msg_rate"],
            label=plain(namespace),
            linewidth=1.0,
            marker=_marker(series),
        )
    axes.set_ylabel("msg rate in + out (msg/s)")
    axes.set_title(f"{plain(cluster)}: busiest namespaces")
    axes.grid(True, alpha=0.3)
    if not top_series.empty:
        axes.legend(loc="upper left", fontsize=8, ncol=2)
    return _finish(figure, _times(top_series))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "cluster"


def _table(frame: pd.DataFrame, columns: Sequence[tuple[str, str, str]]) -> str:
    """An HTML table of ``frame``; ``columns`` are (column, heading, format) where format is
    ``pct`` (fraction shown as percent), ``num`` (1 decimal), ``ratio`` (2 decimals),
    ``int`` or ``text``."""
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in columns)
    body: list[str] = []
    for _, row in frame.iterrows():
        cells: list[str] = []
        for column, _, kind in columns:
            value = row[column]
            if value is None or (isinstance(value, float) and pd.isna(value)):
                text = ""
            elif kind == "pct":
                text = f"{float(value) * 100:.1f}%"
            elif kind == "num":
                text = f"{float(value):,.1f}"
            elif kind == "ratio":
                text = f"{float(value):.2f}"
            elif kind == "int":
                text = f"{int(value):,}"
            else:
                text = str(value)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; display: block; margin: 1em 0; }
"""


def _span(snapshot_ms: Sequence[int]) -> str:
    if not snapshot_ms:
        return "no snapshots"
    start, end = (
        pd.Timestamp(min(snapshot_ms), unit="ms", tz="UTC"),
        pd.Timestamp(max(snapshot_ms), unit="ms", tz="UTC"),
    )
    count = len(snapshot_ms)
    span = (
        f"{start:%Y-%m-%d %H:%M} UTC"
        if count == 1
        else f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    )
    return f"{span}, {count} snapshot{'' if count == 1 else 's'}"


def _unique(slug: str, taken: set[str]) -> str:
    """``slug``, or ``slug-2``, ``slug-3``... where another cluster's name made it already
    (``a/b`` and ``a_b`` both make ``a_b``): each cluster's charts keep files of their own."""
    unique, n = slug, 1
    while unique in taken:
        n += 1
        unique = f"{slug}-{n}"
    taken.add(unique)
    return unique


def render_report(reports: Sequence[ClusterReport], title: str) -> tuple[str, dict[str, bytes]]:
    """The HTML page and the PNG files it links (name -> bytes)."""
    images: dict[str, bytes] = {}
    sections: list[str] = []
    taken: set[str] = set()
    for report in reports:
        slug = _unique(_slug(report.cluster), taken)
        # A chart only where there are rows to draw: a history may hold bundle rows alone.
        charts: dict[str, bytes] = {}
        if not report.over_time.empty:
            charts[f"{slug}-usage.png"] = _png(usage_figure(report.over_time, report.cluster))
            charts[f"{slug}-imbalance.png"] = _png(
                imbalance_figure(report.over_time, report.cluster)
            )
        if not report.top_series.empty:
            charts[f"{slug}-namespaces.png"] = _png(
                namespace_figure(report.top_series, report.cluster)
            )
        images.update(charts)
        hottest = report.brokers.sort_values(["usage_p95", "broker"], ascending=[False, True]).head(
            TOP_ROWS
        )
        busiest = report.namespaces.sort_values(
            ["msg_rate_p95", "namespace"], ascending=[False, True]
        ).head(TOP_ROWS)
        broker_table = _table(
            hottest,
            (
                ("broker", "broker", "text"),
                ("snapshots", "snapshots", "int"),
                ("usage_p50", "usage p50", "pct"),
                ("usage_p95", "usage p95", "pct"),
                ("usage_p99", "usage p99", "pct"),
                ("usage_max", "usage max", "pct"),
                ("msg_rate_p50", "msg/s p50", "num"),
                ("msg_rate_p95", "msg/s p95", "num"),
                ("msg_rate_max", "msg/s max", "num"),
            ),
        )
        namespace_table = _table(
            busiest,
            (
                ("namespace", "namespace", "text"),
                ("bundles_max", "bundles", "int"),
                ("msg_rate_mean", "msg/s mean", "num"),
                ("msg_rate_p50", "msg/s p50", "num"),
                ("msg_rate_p95", "msg/s p95", "num"),
                ("msg_rate_p99", "msg/s p99", "num"),
                ("msg_rate_max", "msg/s max", "num"),
                ("bundle_peak_to_mean_p95", "bundle max/mean p95", "ratio"),
            ),
        )
        name = html.escape(report.cluster)
        sections.append(
            f"<h2>Cluster {name}</h2>"
            f"<p>{html.escape(_span(report.snapshot_ms))}; {len(report.brokers)} brokers, "
            f"{len(report.namespaces)} namespaces.</p>"
            + "".join(f'<img src="{file}" alt="{html.escape(file)}">' for file in charts)
            + f"<h3>Hottest brokers (by 95th percentile usage)</h3>{broker_table}"
            + f"<h3>Busiest namespaces (by 95th percentile msg rate)</h3>{namespace_table}"
        )
    if not sections:
        sections.append("<p>The history has no load reports.</p>")
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        "<p>Load is Pulsar's weighted max resource usage (CPU and bandwidth by default). "
        "Percentiles across brokers per snapshot, and per broker and namespace over time, "
        "are exact (linear interpolation). Full tables are in the CSV files next to this "
        "page.</p>" + "".join(sections) + "</body></html>"
    )
    return page, images
