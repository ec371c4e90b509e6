"""``shed``: a shedding strategy's decisions on each cluster's latest snapshot, equal to
``ballast decide shed`` on the same snapshot.

Spark does the history-wide work: it finds each cluster's latest snapshot, takes the bundle
and broker time averages stored with it (the leader's history writer and the importers store
them) or, for a cluster whose latest snapshot has none, computes them from every sample as
``time-averages`` does (in ``--buckets`` passes, writing them to ``<out>/bundle_averages``);
then only that snapshot's rows reach the driver, which runs the strategy with the pure
``ballast.balance`` code (:mod:`ballast.pipeline.shedding` says why).

Writes ``<out>/shed_decisions``; the summary lists the decisions as ``ballast decide`` prints
them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.balance.decisions import decision_to_json
from ballast.model.codec import ModelError, json_safe
from ballast.model.config import Settings
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary, require_paths
from ballast.pipeline.jobs.time_averages import write_bundle_averages
from ballast.pipeline.schema import (
    BROKER_AVERAGES,
    BROKERS,
    BUNDLE_AVERAGES,
    BUNDLES,
    SHED_DECISIONS,
)
from ballast.pipeline.shedding import (
    ShedOptions,
    ShedOutcome,
    decision_rows,
    parse,
    shed,
    snapshot_object,
)
from ballast.pipeline.sparkio import (
    latest_snapshots,
    read_history,
    read_output,
    remove_output,
    table_path,
    write_output,
)
from ballast.pipeline.transforms.averages import broker_time_averages, rows_at

# The averages shed folds itself, in a table of its own: written as ``bundle_averages`` they
# replaced those time-averages wrote to the same --out for every cluster, beside that job's
# broker_averages of every cluster.
SHED_BUNDLE_AVERAGES = dataclasses.replace(BUNDLE_AVERAGES, name="shed_bundle_averages")


def check_settings(settings: Settings) -> None:
    from ballast.balance.shedding.registry import UnknownStrategy, shedding_strategy

    try:
        shedding_strategy(settings.get_str("loadBalancerLoadSheddingStrategy"))
    except UnknownStrategy as exc:
        raise JobError(str(exc)) from None


def run(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
    """The registered job: the configured strategy, the whole cycle, at snapshot time."""
    return shed_history(spark, paths, settings, ShedOptions())


def _in(clusters: set[str]) -> Any:
    return F.col("cluster").isin(sorted(clusters)) if clusters else F.lit(False)


def _clusters_with_rows(frame: DataFrame) -> set[str]:
    return {str(row["cluster"]) for row in frame.select("cluster").distinct().collect()}


def _rows_by_cluster(frame: DataFrame) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in frame.collect():
        grouped.setdefault(str(row["cluster"]), []).append(row.asDict())
    return grouped


def shed_history(
    spark: SparkSession,
    paths: JobPaths,
    settings: Settings,
    options: ShedOptions,
    *,
    cluster: str | None = None,
    buckets: int = 1,
) -> Summary:
    """Decide on the latest snapshot of ``cluster`` (None: of every cluster). Averages the
    history does not store are folded from every sample in ``buckets`` passes (see
    :func:`~ballast.pipeline.jobs.time_averages.write_bundle_averages`)."""
    require_paths(spark, paths)
    brokers = read_history(spark, paths.history, BROKERS)
    latest = latest_snapshots(brokers)
    if cluster is not None:
        if cluster not in latest:
            known = ", ".join(sorted(latest)) or "none"
            raise JobError(f'the history has no cluster "{cluster}" (clusters: {known})')
        latest = {cluster: latest[cluster]}
    if not latest:
        raise JobError(f"the history at {paths.history} has no broker rows")
    clusters = set(latest)
    bundles = read_history(spark, paths.history, BUNDLES).filter(_in(clusters))
    latest_brokers = rows_at(brokers, latest)
    latest_bundles = rows_at(bundles, latest)
    stored_bundle_averages = rows_at(read_history(spark, paths.history, BUNDLE_AVERAGES), latest)
    stored_broker_averages = rows_at(read_history(spark, paths.history, BROKER_AVERAGES), latest)
    with_bundle_averages = _clusters_with_rows(stored_bundle_averages)
    with_broker_averages = _clusters_with_rows(stored_broker_averages)
    averages = stored_bundle_averages.filter(_in(with_bundle_averages))
    outputs = []
    if clusters - with_bundle_averages:  # ``buckets`` passes over the whole history
        write_bundle_averages(
            bundles.filter(_in(clusters - with_bundle_averages)),
            paths.out,
            buckets,
            SHED_BUNDLE_AVERAGES,
        )
        averages = averages.unionByName(read_output(spark, paths.out, SHED_BUNDLE_AVERAGES))
        outputs.append(table_path(paths.out, SHED_BUNDLE_AVERAGES))
    else:  # every cluster's averages are stored: an earlier run's table is not of this one
        remove_output(spark, paths.out, SHED_BUNDLE_AVERAGES)
    averages = averages.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        broker_averages = stored_broker_averages.filter(_in(with_broker_averages))
        if clusters - with_broker_averages:
            missing = _in(clusters - with_broker_averages)
            broker_averages = broker_averages.unionByName(
                broker_time_averages(
                    latest_brokers.filter(missing), latest_bundles.filter(missing), averages
                )
            )
        rows = [
            _rows_by_cluster(frame)
            for frame in (latest_brokers, latest_bundles, averages, broker_averages)
        ]
    finally:
        averages.unpersist()
    outcomes: list[ShedOutcome] = []
    for name in sorted(clusters):
        obj = snapshot_object(*(part.get(name, []) for part in rows))
        try:
            snapshot = parse(obj)
        except ModelError as exc:  # a NaN sample (no statistics show it), a bad name
            raise JobError(
                f"the latest snapshot of cluster {name} holds a value the model refuses: {exc}"
            ) from None
        outcomes.append(shed(name, latest[name], snapshot, settings, options))
    decisions = [row for outcome in outcomes for row in decision_rows(outcome)]
    frame = spark.createDataFrame(decisions, SHED_DECISIONS.spark_schema())
    write_output(frame, paths.out, SHED_DECISIONS)
    return {
        "strategy": outcomes[0].strategy,
        "scope": options.scope.value,
        "clusters": {
            outcome.cluster: {
                "snapshotMs": outcome.snapshot_ms,
                "decisions": [decision_to_json(d) for d in outcome.decisions],
                "stats": json_safe(dict(outcome.stats)),
            }
            for outcome in outcomes
        },
        "outputs": [table_path(paths.out, SHED_DECISIONS), *outputs],
    }
