"""``time-averages``: every bundle's short- and long-term averages after all of its samples,
and each live broker's time averages, as Pulsar's leader would hold them.

Writes ``<out>/bundle_averages`` and ``<out>/broker_averages`` (Parquet, the history tables of
the same names, unpartitioned).

A bundle's averages need all of its samples in one place, so the job shuffles every sample of
the history. ``buckets`` > 1 folds the bundles in that many passes, each over the bundles of
one hash bucket: every pass reads the whole history but shuffles only its share of the
samples, for histories whose shuffle files would not fit the scratch disk in one pass.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.model.config import Settings
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary, require_paths
from ballast.pipeline.schema import BROKER_AVERAGES, BROKERS, BUNDLE_AVERAGES, BUNDLES, Table
from ballast.pipeline.sparkio import (
    latest_snapshots,
    read_history,
    read_output,
    table_path,
    write_output,
)
from ballast.pipeline.transforms.averages import (
    broker_time_averages,
    bundle_time_averages,
    rows_at,
)


def in_bucket(bundles: DataFrame, bucket: int, buckets: int) -> DataFrame:
    """The rows of the bundles in hash bucket ``bucket`` of ``buckets`` (every sample of a
    bundle falls in the same one)."""
    return bundles.filter(F.pmod(F.hash("cluster", "bundle"), F.lit(buckets)) == F.lit(bucket))


def write_bundle_averages(
    bundles: DataFrame, out: str, buckets: int, table: Table = BUNDLE_AVERAGES
) -> None:
    """Fold the samples of ``bundles`` into each bundle's averages and write them to
    ``<out>/<table>`` (``bundle_averages`` unless said), in ``buckets`` passes of one hash
    bucket each."""
    if buckets < 1:
        raise JobError(f"buckets must be at least 1, not {buckets}")
    for bucket in range(buckets):
        part = bundles if buckets == 1 else in_bucket(bundles, bucket, buckets)
        write_output(bundle_time_averages(part), out, table, append=bucket > 0)


def run(spark: SparkSession, paths: JobPaths, settings: Settings, *, buckets: int = 1) -> Summary:
    del settings  # the sample windows are Pulsar constants, not settings
    require_paths(spark, paths)
    brokers = read_history(spark, paths.history, BROKERS)
    bundles = read_history(spark, paths.history, BUNDLES)
    write_bundle_averages(bundles, paths.out, buckets)
    bundle_averages = read_output(spark, paths.out, BUNDLE_AVERAGES)
    # Only the latest snapshot's bundles decide a broker's sums: read just those.
    latest = rows_at(bundles, latest_snapshots(brokers))
    write_output(broker_time_averages(brokers, latest, bundle_averages), paths.out, BROKER_AVERAGES)
    return {
        "bundles": bundle_averages.count(),
        "brokers": read_output(spark, paths.out, BROKER_AVERAGES).count(),
        "buckets": buckets,
        "outputs": [
            table_path(paths.out, BUNDLE_AVERAGES),
            table_path(paths.out, BROKER_AVERAGES),
        ],
    }
