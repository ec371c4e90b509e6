"""``split-plan``: the bundles Pulsar's split rules select on each cluster's latest snapshot,
and where the configured algorithm (``defaultNamespaceBundleSplitAlgorithm``) cuts them.

Long-term averages come from the whole history (as ``time-averages`` computes them), for the
bundles whose samples could take them over a limit; cut points from the latest per-topic
load. Writes ``<out>/split_plan``.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.config import Settings, SplitConfig
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary
from ballast.pipeline.schema import BROKERS, BUNDLES, SPLIT_PLAN, TOPICS
from ballast.pipeline.sparkio import (
    latest_snapshots,
    read_history,
    read_output,
    table_path,
    write_output,
)
from ballast.pipeline.transforms.averages import long_term_averages, rows_at
from ballast.pipeline.transforms.split import (
    PLAN_ALGORITHMS,
    averaged_bundles,
    split_candidates,
    split_points,
)


def check_settings(settings: Settings) -> None:
    algorithm = SplitConfig.from_settings(settings).default_algorithm
    if algorithm not in PLAN_ALGORITHMS:
        raise JobError(
            f"defaultNamespaceBundleSplitAlgorithm={algorithm} cannot plan automatic "
            f"splits; use one of {', '.join(PLAN_ALGORITHMS)}"
        )


def run(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
    check_settings(settings)
    config = SplitConfig.from_settings(settings)
    brokers = read_history(spark, paths.history, BROKERS)
    bundles = read_history(spark, paths.history, BUNDLES)
    topics = read_history(spark, paths.history, TOPICS)
    # The averages need every sample of a bundle (a shuffle of its history), so only the
    # bundles the rules could select are folded (averaged_bundles: most never come near a
    # limit), and only their long-term averages, the only ones the rules read. Those bundles
    # are found first and kept, so that the planner knows how few they usually are and
    # filters the history by them before the shuffle (a broadcast join) rather than after.
    # The plan reads the averages and the candidates several times: both are kept too.
    latest = rows_at(bundles, latest_snapshots(brokers))
    needed = averaged_bundles(bundles, latest, config).persist(StorageLevel.MEMORY_AND_DISK)
    needed.count()
    averages = long_term_averages(
        bundles.join(needed, on=["cluster", "bundle"], how="left_semi")
    ).persist(StorageLevel.MEMORY_AND_DISK)
    candidates = split_candidates(brokers, latest, averages, config).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        candidates.count()
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
