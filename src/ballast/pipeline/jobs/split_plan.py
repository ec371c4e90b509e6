"""``split-plan``: the bundles Pulsar's split rules select on each cluster's latest snapshot,
and where the configured algorithm (``defaultNamespaceBundleSplitAlgorithm``) cuts them.

Long-term averages come from the whole history (as ``time-averages`` computes them), for the
bundles whose samples could take them over a limit; cut points from the latest per-topic
load. Writes ``<out>/split_plan``.
"""

from __future__ import annotations

from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.model.config import Settings, SplitConfig
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary, require_paths
from ballast.pipeline.schema import BROKERS, BUNDLES, SPLIT_PLAN, TOPICS
from ballast.pipeline.sparkio import (
    latest_snapshots,
    read_history,
    read_output,
    table_path,
    write_output,
)
from ballast.pipeline.taskio import local_files, local_root, read_in_tasks
from ballast.pipeline.transforms.averages import (
    SAMPLE_COLUMNS,
    SAMPLE_LIST_SCHEMA,
    long_term_averages,
    merged_sample_lists,
    rows_at,
    sample_lists,
)
from ballast.pipeline.transforms.split import (
    PLAN_ALGORITHMS,
    averaged_bundles,
    busy_bundles,
    malformed_bundle,
    split_candidates,
    split_points,
)
from ballast.pipeline.transforms.split_rows import (
    BUSY_INPUT_COLUMNS,
    BUSY_SCHEMA,
    busy_keys_of,
    by_cluster,
    half_limits,
    sample_lists_of,
)


def check_settings(settings: Settings) -> None:
    algorithm = SplitConfig.from_settings(settings).default_algorithm
    if algorithm not in PLAN_ALGORITHMS:
        raise JobError(
            f"defaultNamespaceBundleSplitAlgorithm={algorithm} cannot plan automatic "
            f"splits; use one of {', '.join(PLAN_ALGORITHMS)}"
        )


def busy(spark: SparkSession, history: str, bundles: DataFrame, config: SplitConfig) -> DataFrame:
    """:func:`busy_bundles` of the history: found by Spark tasks reading the files with
    pyarrow on a local file system (most of the job's reading), by Spark SQL elsewhere."""
    if local_root(spark, history) is None:
        return busy_bundles(bundles, config)
    rate_half, size_half = half_limits(config)
    return read_in_tasks(
        spark,
        local_files(bundles),
        BUNDLES,
        BUSY_INPUT_COLUMNS,
        partial(busy_keys_of, rate_half=rate_half, size_half=size_half),
        BUSY_SCHEMA,
        plain_if_distinct=("bundle",),
    ).distinct()


def samples(spark: SparkSession, history: str, bundles: DataFrame, keys: DataFrame) -> DataFrame:
    """The sample lists (:func:`sample_lists`) of the bundles ``keys`` names (``cluster,
    bundle``), for the fold. On a local file system Spark tasks pick their rows out as they
    read the files and list them per bundle and file (the names go with the tasks'
    function, which PySpark broadcasts when it is large); elsewhere a semi-join with
    ``keys`` broadcast."""
    if local_root(spark, history) is None:
        return sample_lists(
            bundles.join(F.broadcast(keys), on=["cluster", "bundle"], how="left_semi")
        )
    names = by_cluster([(row["cluster"], row["bundle"]) for row in keys.collect()])
    pieces = read_in_tasks(
        spark,
        local_files(bundles),
        BUNDLES,
        SAMPLE_COLUMNS,
        partial(sample_lists_of, bundles=names),
        SAMPLE_LIST_SCHEMA,
        plain_if_distinct=("bundle",),
    )
    return merged_sample_lists(pieces)


def _check_names(candidates: DataFrame) -> None:
    """JobError naming a selected bundle whose name gives no range to cut (before Spark
    fails on it with its stack, or cuts a reversed range)."""
    bad = candidates.filter(malformed_bundle(F.col("bundle"))).select("cluster", "bundle").first()
    if bad is not None:
        raise JobError(
            f"the history's bundle {bad['bundle']!r} (cluster {bad['cluster']}) is no bundle "
            "name: <namespace>/0xLOWER_0xUPPER with LOWER < UPPER, in hex (a history another "
            "tool wrote?)"
        )


def run(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
    check_settings(settings)
    config = SplitConfig.from_settings(settings)
    require_paths(spark, paths)
    brokers = read_history(spark, paths.history, BROKERS)
    bundles = read_history(spark, paths.history, BUNDLES)
    topics = read_history(spark, paths.history, TOPICS)
    # The averages need every sample of a bundle (a shuffle of its history), so only the
    # bundles the rules could select are folded (averaged_bundles: most never come near a
    # limit), and only their long-term averages, the only ones the rules read. Those bundles
    # are found first and kept, so that the history is filtered by them before the shuffle
    # rather than after it. The plan reads the averages and the candidates several times:
    # both are kept too.
    latest = rows_at(bundles, latest_snapshots(brokers))
    needed = averaged_bundles(busy(spark, paths.history, bundles, config), latest, config)
    needed = needed.persist(StorageLevel.MEMORY_AND_DISK)
    needed.count()
    averages = long_term_averages(samples(spark, paths.history, bundles, needed)).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    candidates = split_candidates(brokers, latest, averages, config).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        candidates.count()
        _check_names(candidates)
        plan = split_points(candidates, topics, config.default_algorithm, config.flow_or_qps)
        write_output(plan, paths.out, SPLIT_PLAN)
    finally:
        candidates.unpersist()
        averages.unpersist()
        needed.unpersist()
    written = read_output(spark, paths.out, SPLIT_PLAN)
    counts = written.agg(
        F.count("*").alias("selected"),
        F.count(F.when(F.size("children") > 0, True)).alias("with_cut_points"),
    ).first()
    return {
        "algorithm": config.default_algorithm,
        "selected": int(counts["selected"]) if counts else 0,
        "withCutPoints": int(counts["with_cut_points"]) if counts else 0,
        "outputs": [table_path(paths.out, SPLIT_PLAN)],
    }
