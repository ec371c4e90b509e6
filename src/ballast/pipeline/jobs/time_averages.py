"""``time-averages``: every bundle's short- and long-term averages after all of its samples,
and each live broker's time averages, as Pulsar's leader would hold them.

Writes ``<out>/bundle_averages`` and ``<out>/broker_averages`` (Parquet, the history tables of
the same names, unpartitioned).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from ballast.model.config import Settings
from ballast.pipeline.jobs.base import JobPaths, Summary
from ballast.pipeline.schema import BROKER_AVERAGES, BROKERS, BUNDLE_AVERAGES, BUNDLES
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


def run(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
    del settings  # the sample windows are Pulsar constants, not settings
    brokers = read_history(spark, paths.history, BROKERS)
    bundles = read_history(spark, paths.history, BUNDLES)
    write_output(bundle_time_averages(bundles), paths.out, BUNDLE_AVERAGES)
    bundle_averages = read_output(spark, paths.out, BUNDLE_AVERAGES)
    # Only the latest snapshot's bundles decide a broker's sums: read just those.
    latest = rows_at(bundles, latest_snapshots(brokers))
    write_output(broker_time_averages(brokers, latest, bundle_averages), paths.out, BROKER_AVERAGES)
    return {
        "bundles": bundle_averages.count(),
        "brokers": read_output(spark, paths.out, BROKER_AVERAGES).count(),
        "outputs": [
            table_path(paths.out, BUNDLE_AVERAGES),
            table_path(paths.out, BROKER_AVERAGES),
        ],
    }
