"""Report aggregates against numpy on the same numbers, and the rendered page."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.loaddata import ResourceWeights
from ballast.pipeline.report_render import (
    ClusterReport,
    imbalance_figure,
    namespace_figure,
    render_report,
    usage_figure,
)
from ballast.pipeline.schema import BROKERS, BUNDLES
from ballast.pipeline.transforms.report import (
    broker_load_over_time,
    broker_load_percentiles,
    namespace_load_from_partials,
    namespace_load_over_time,
    namespace_load_percentiles,
    namespace_partials,
    namespace_partials_of,
    percentile_of_sorted,
    top_namespaces,
)

from .helpers import frame, records

WEIGHTS = ResourceWeights()
# CPU percent per (snapshot, broker); bandwidth idle, so usage = cpu / 100.
CPU = {0: {"a": 10.0, "b": 30.0, "c": 80.0}, 1: {"a": 20.0, "b": 20.0}}
RATES = {0: {"a": 100.0, "b": 300.0, "c": 800.0}, 1: {"a": 500.0, "b": 500.0}}


def broker_rows() -> list[dict[str, object]]:
    return [
        {
            "snapshot_ms": s,
            "cluster": "c",
            "broker": b,
            "cpu_usage": cpu,
            "cpu_limit": 100.0,
            "msg_rate_in": RATES[s][b],
        }
        for s, per in CPU.items()
        for b, cpu in per.items()
    ]


@pytest.mark.spark
def test_broker_load_over_time(spark: SparkSession) -> None:
    rows = records(
        broker_load_over_time(frame(spark, BROKERS, broker_rows()), WEIGHTS), "snapshot_ms"
    )
    first = rows[0]
    usage = np.array([0.1, 0.3, 0.8])
    assert first["brokers"] == 3
    assert first["usage_p50"] == pytest.approx(np.percentile(usage, 50))
    assert first["usage_p90"] == pytest.approx(np.percentile(usage, 90))
    assert first["usage_p99"] == pytest.approx(np.percentile(usage, 99))
    assert first["usage_max"] == pytest.approx(0.8)
    assert first["usage_spread"] == pytest.approx(0.8 - usage.mean())
    rates = np.array([100.0, 300.0, 800.0])
    assert first["rate_peak_to_mean"] == pytest.approx(800.0 / rates.mean())
    assert first["rate_cv"] == pytest.approx(rates.std() / rates.mean())
    second = rows[1]
    assert (second["brokers"], second["rate_peak_to_mean"], second["rate_cv"]) == (2, 1.0, 0.0)


@pytest.mark.spark
def test_broker_percentiles_over_time(spark: SparkSession) -> None:
    rows = records(broker_load_percentiles(frame(spark, BROKERS, broker_rows()), WEIGHTS), "broker")
    assert [(r["broker"], r["snapshots"]) for r in rows] == [("a", 2), ("b", 2), ("c", 1)]
    a = rows[0]
    assert a["usage_p50"] == pytest.approx(0.15)
    assert a["usage_p95"] == pytest.approx(np.percentile([0.1, 0.2], 95))
    assert a["msg_rate_max"] == 500.0
    assert a["msg_rate_mean"] == 300.0


def same_double(a: float | None, b: float | None) -> bool:
    """Equal bit for bit (the sign of zero included), NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or (
        a == b and math.copysign(1, a) == math.copysign(1, b)
    )


@pytest.mark.spark
def test_percentile_of_sorted_values_equals_sparks_percentile(spark: SparkSession) -> None:
    rng = random.Random(11)
    specials = [0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, None, 1e300, 5e-324]
    rows = []
    for group in range(300):
        size = rng.choice([0, 1, 2, 3, 7, 40, 101])
        tied = rng.random() < 0.3  # many equal values
        for _ in range(size):
            if rng.random() < 0.1:
                value = rng.choice(specials)
            elif tied:
                value = float(rng.randrange(3))
            else:
                value = rng.uniform(-1e4, 1e6)
            rows.append((group, value))
    rows.append((300, None))  # a group with no values
    # One zero per group: which of two zeros of opposite signs sorts first is not defined.
    rows += [(301, -0.0), (301, 1.0), (302, -0.0), (302, -0.0), (302, 2.0)]
    values = spark.createDataFrame(rows, "g int, x double")
    levels = (0.0, 0.3, 0.5, 0.9, 0.95, 0.99, 1.0)
    result = values.groupBy("g").agg(
        F.percentile("x", list(levels)).alias("spark"),
        F.sort_array(F.collect_list("x")).alias("sorted"),
    )
    ours = result.select(
        "g", "spark", F.array(*(percentile_of_sorted(F.col("sorted"), v) for v in levels))
    ).collect()
    assert len(ours) == len({group for group, _ in rows})
    for group, expected, got in ours:
        assert all(
            same_double(e, g) for e, g in zip(expected or [None] * len(levels), got, strict=True)
        ), (group, expected, got)


def namespace_bundle_rows() -> list[dict[str, object]]:
    return [
        {
            "snapshot_ms": s,
            "cluster": "c",
            "broker": "a",
            "bundle": f"{ns}/0x{i}_0x{i + 1}",
            "namespace": ns,
            "msg_rate_in": rate,
            "msg_rate_out": rate,
        }
        for s in (0, 1)
        for ns, rates in (("t/busy", [100.0, 300.0 * (s + 1)]), ("t/calm", [1.0]))
        for i, rate in enumerate(rates)
    ]


@pytest.mark.spark
def test_namespace_load(spark: SparkSession) -> None:
    series = namespace_load_over_time(frame(spark, BUNDLES, namespace_bundle_rows()))
    over_time = records(series, "namespace", "snapshot_ms")
    busy0 = over_time[0]
    assert (busy0["msg_rate"], busy0["bundles"]) == (800.0, 2)
    assert busy0["bundle_peak_to_mean"] == pytest.approx(600.0 / 400.0)
    stats = namespace_load_percentiles(series)
    rows = records(stats, "namespace")
    assert rows[0]["msg_rate_p50"] == pytest.approx(np.percentile([800.0, 1400.0], 50))
    assert rows[0]["msg_rate_max"] == 1400.0
    assert rows[1]["bundle_peak_to_mean_p95"] == 1.0
    assert [r["namespace"] for r in records(top_namespaces(stats, 1), "rank")] == ["t/busy"]


@pytest.mark.spark
def test_namespace_load_from_partial_aggregates(spark: SparkSession) -> None:
    rows = namespace_bundle_rows()
    rows += [{**r, "cluster": "d", "msg_rate_in": 2 * r["msg_rate_in"]} for r in rows]  # type: ignore[operator]
    bundles = frame(spark, BUNDLES, rows)
    expected = records(namespace_load_over_time(bundles), "cluster", "namespace", "snapshot_ms")
    for parts in (1, 3):  # rows of one namespace and snapshot spread over partial results
        partials = namespace_partials(bundles.repartition(parts))
        got = namespace_load_from_partials(partials)
        assert records(got, "cluster", "namespace", "snapshot_ms") == expected


def test_a_nan_sample_makes_its_namespace_peak_nan_without_a_warning() -> None:
    """numpy's warning about the NaN went to the report's stderr, among its output."""
    rows = pa.table(
        {
            "cluster": ["c", "c", "c"],
            "namespace": ["t/a", "t/a", "t/b"],
            "snapshot_ms": pa.array([1, 1, 1], pa.int64()),
            "msg_rate_in": [math.nan, 1.0, 2.0],
            "msg_rate_out": [1.0, 1.0, 1.0],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partials = namespace_partials_of(rows).to_pylist()
    peaks = {p["namespace"]: p["bundle_rate_max"] for p in partials}
    assert math.isnan(peaks["t/a"]) and peaks["t/b"] == 3.0


def test_render_report_writes_charts_and_escaped_tables() -> None:
    times = [0, 60_000, 120_000]
    over_time = pd.DataFrame(
        {
            "snapshot_ms": times,
            "brokers": [3, 3, 2],
            "usage_p50": [0.2, 0.3, 0.4],
            "usage_p90": [0.5, 0.5, 0.6],
            "usage_p99": [0.7, 0.7, 0.8],
            "usage_max": [0.8, 0.9, 0.9],
            "usage_spread": [0.3, 0.4, 0.3],
            "rate_peak_to_mean": [1.5, 1.4, 1.2],
            "rate_cv": [0.4, 0.3, 0.2],
        }
    )
    brokers = pd.DataFrame(
        {
            "broker": ["<b>:1", "a:1"],
            "snapshots": [3, 3],
            **{c: [0.5, 0.9] for c in ("usage_p50", "usage_p95", "usage_p99", "usage_max")},
            **{c: [10.0, 20.0] for c in ("msg_rate_p50", "msg_rate_p95", "msg_rate_max")},
        }
    )
    namespaces = pd.DataFrame(
        {
            "namespace": ["t/a"],
            "bundles_max": [4],
            **{
                c: [1234.5]
                for c in (
                    "msg_rate_mean",
                    "msg_rate_p50",
                    "msg_rate_p95",
                    "msg_rate_p99",
                    "msg_rate_max",
                )
            },
            "bundle_peak_to_mean_p95": [2.5],
        }
    )
    series = pd.DataFrame({"snapshot_ms": times, "namespace": ["t/a"] * 3, "msg_rate": [1, 2, 3]})
    page, images = render_report(
        [ClusterReport("east/1", over_time, brokers, namespaces, series, tuple(times))],
        "Load & more",
    )
    assert sorted(images) == [
        "east_1-imbalance.png",
        "east_1-namespaces.png",
        "east_1-usage.png",
    ]
    assert all(data.startswith(b"\x89PNG\r\n\x1a\n") for data in images.values())
    assert "<title>Load &amp; more</title>" in page
    assert all(f'src="{name}"' in page for name in images)
    assert "&lt;b&gt;:1" in page and "<b>:1" not in page
    # hottest broker first, usage shown as percent, rates with separators
    assert page.index("a:1") < page.index("&lt;b&gt;:1")
    assert "90.0%" in page and "1,234.5" in page
    assert "1970-01-01 00:00 to 1970-01-01 00:02 UTC, 3 snapshots" in page
    # two clusters whose names make the same file name keep charts of their own
    _, twice = render_report(
        [
            ClusterReport(name, over_time, brokers, namespaces, series, tuple(times))
            for name in ("east/1", "east_1")
        ],
        "two",
    )
    assert sorted(twice) == sorted([*images, "east_1-2-imbalance.png", "east_1-2-namespaces.png",
                                    "east_1-2-usage.png"])  # fmt: skip


def test_dollar_signs_in_names_are_drawn_as_they_are() -> None:
    """Between two ``$`` matplotlib reads math: ``t$\\frac$/ns`` stopped the report with an
    internal error (a parse exception) and wrote nothing."""
    times = [0, 60_000]
    series = pd.DataFrame(
        {"snapshot_ms": times, "namespace": ["t$\\frac$/ns"] * 2, "msg_rate": [1.0, 2.0]}
    )
    figure = namespace_figure(series, "c$\\sqrt$")
    FigureCanvasAgg(figure).draw()
    assert figure.axes[0].get_title() == "c\\$\\sqrt\\$: busiest namespaces"
    legend = figure.axes[0].get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["t\\$\\frac\\$/ns"]


def test_a_report_of_one_snapshot_names_it_in_the_singular() -> None:
    over_time = pd.DataFrame(
        {
            "snapshot_ms": [60_000],
            "brokers": [2],
            **{c: [0.5] for c in ("usage_p50", "usage_p90", "usage_p99", "usage_max")},
            **{c: [0.1] for c in ("usage_spread", "rate_peak_to_mean", "rate_cv")},
        }
    )
    brokers = pd.DataFrame(columns=["broker", "usage_p95"])
    namespaces = pd.DataFrame(columns=["namespace", "msg_rate_p95"])
    series = pd.DataFrame({"snapshot_ms": [60_000], "namespace": ["t/a"], "msg_rate": [5.0]})
    report = ClusterReport("c", over_time, brokers, namespaces, series, (60_000,))
    page, images = render_report([report], "one")
    assert "1970-01-01 00:01 UTC, 1 snapshot;" in page
    assert len(images) == 3


def test_a_lone_snapshot_gets_an_axis_of_two_hours_and_plain_numbers() -> None:
    """One snapshot got an axis of years, and a flat series of 0.1717 an offset label
    ("1e-5+1.717e-1")."""
    over_time = pd.DataFrame(
        {
            "snapshot_ms": [1_795_541_599_091],
            "brokers": [2],
            **{c: [0.17171] for c in ("usage_p50", "usage_p90", "usage_p99", "usage_max")},
            **{c: [0.1] for c in ("usage_spread", "rate_peak_to_mean", "rate_cv")},
        }
    )
    series = pd.DataFrame(
        {"snapshot_ms": [1_795_541_599_091], "namespace": ["t/a"], "msg_rate": [5.0]}
    )
    for figure in (
        usage_figure(over_time, "c"),
        imbalance_figure(over_time, "c"),
        namespace_figure(series, "c"),
    ):
        low, high = figure.axes[0].get_xlim()  # matplotlib dates: days
        assert high - low == pytest.approx(2 / 24)
        for axes in figure.axes:
            formatter = axes.yaxis.get_major_formatter()
            assert formatter.get_useOffset() is False  # type: ignore[attr-defined]
