"""``report``: per-broker and per-namespace load percentiles and imbalance over time, as an
HTML page with PNG charts and CSV tables, written to a local directory ``out``:

- ``index.html``, ``<cluster>-usage.png``, ``<cluster>-imbalance.png``,
  ``<cluster>-namespaces.png``;
- ``broker_load_over_time.csv``, ``broker_percentiles.csv``, ``namespace_percentiles.csv``.

Spark does the aggregation; only the aggregates (one row per snapshot, broker or namespace,
and the busiest namespaces' series) reach the driver. The bundle rows (most of the history)
are summed per namespace and snapshot in the tasks with pyarrow when the history is on a local
file system (:func:`ballast.pipeline.taskio.read_in_tasks`), and by Spark SQL elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from ballast.model.config import Settings
from ballast.model.config.components import resource_weights
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary, require_paths
from ballast.pipeline.report_render import ClusterReport, render_report
from ballast.pipeline.schema import BROKERS, BUNDLES
from ballast.pipeline.sparkio import read_history
from ballast.pipeline.taskio import local_files, local_root, read_in_tasks
from ballast.pipeline.transforms.report import (
    NAMESPACE_INPUT_COLUMNS,
    NAMESPACE_PARTIAL_SCHEMA,
    broker_load_over_time,
    broker_load_percentiles,
    namespace_load_from_partials,
    namespace_load_over_time,
    namespace_load_percentiles,
    namespace_partials_of,
    top_namespaces,
)

TOP_NAMESPACES = 8
TITLE = "Ballast load report"


def local_directory(out: str) -> Path:
    parsed = urlparse(out)
    if parsed.scheme not in ("", "file"):
        raise JobError(f"report writes files on the driver; {out} is not a local directory")
    return Path(parsed.path if parsed.scheme == "file" else out)


def _of(frame: pd.DataFrame, cluster: str) -> pd.DataFrame:
    return frame[frame["cluster"] == cluster].reset_index(drop=True)


def namespace_series(spark: SparkSession, history: str) -> DataFrame:
    """Per namespace and snapshot load (:func:`namespace_load_over_time`) of a history."""
    bundles = read_history(spark, history, BUNDLES)
    if local_root(spark, history) is None:
        return namespace_load_over_time(bundles)
    partials = read_in_tasks(
        spark,
        local_files(bundles),
        BUNDLES,
        NAMESPACE_INPUT_COLUMNS,
        namespace_partials_of,
        NAMESPACE_PARTIAL_SCHEMA,
    )
    return namespace_load_from_partials(partials)


def run(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
    directory = local_directory(paths.out)
    require_paths(spark, paths)
    weights = resource_weights(settings)
    brokers = read_history(spark, paths.history, BROKERS)
    over_time = broker_load_over_time(brokers, weights).toPandas()
    broker_table = broker_load_percentiles(brokers, weights).toPandas()
    series = namespace_series(spark, paths.history).cache()
    try:
        namespace_stats = namespace_load_percentiles(series)
        namespace_table = namespace_stats.toPandas()
        top = top_namespaces(namespace_stats, TOP_NAMESPACES)
        top_series = series.join(top, on=["cluster", "namespace"]).toPandas()
        bundle_times = series.select("cluster", "snapshot_ms").distinct().toPandas()
    finally:
        series.unpersist()
    times = pd.concat([over_time[["cluster", "snapshot_ms"]], bundle_times]).drop_duplicates()
    clusters = sorted(set(over_time["cluster"]) | set(namespace_table["cluster"]))
    reports = [
        ClusterReport(
            cluster=cluster,
            over_time=_of(over_time, cluster),
            brokers=_of(broker_table, cluster),
            namespaces=_of(namespace_table, cluster),
            top_series=_of(top_series, cluster),
            snapshot_ms=tuple(sorted(int(t) for t in _of(times, cluster)["snapshot_ms"])),
        )
        for cluster in clusters
    ]
    page, images = render_report(reports, TITLE)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "index.html").write_text(page, encoding="utf-8")
    for name, data in images.items():
        (directory / name).write_bytes(data)
    tables = {
        "broker_load_over_time.csv": over_time.sort_values(["cluster", "snapshot_ms"]),
        "broker_percentiles.csv": broker_table.sort_values(["cluster", "broker"]),
        "namespace_percentiles.csv": namespace_table.sort_values(["cluster", "namespace"]),
    }
    for name, table in tables.items():
        table.to_csv(directory / name, index=False)
    return {
        "clusters": clusters,
        "snapshots": len(times),
        "brokers": len(broker_table),
        "namespaces": len(namespace_table),
        "outputs": [str(directory / name) for name in ("index.html", *images, *tables)],
    }
