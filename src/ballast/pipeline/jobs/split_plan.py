"""``split-plan``: the bundles Pulsar's split rules select on each cluster's latest snapshot,
and where the configured algorithm (``defaultNamespaceBundleSplitAlgorithm``) cuts them.

Long-term averages come from the whole history (as ``time-averages`` computes them); cut
points from the latest per-topic load. Writes ``<out>/split_plan``.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.config import Settings, SplitConfig
from ballast.pipeline.jobs.base import JobError, JobPaths, Summary
from ballast.pipeline.schema import BROKERS, BUNDLES, SPLIT_PLAN, TOPICS
from ballast.pipeline.sparkio import read_history, read_output, table_path, write_output
from ballast.pipeline.transforms.averages import bundle_time_averages
from ballast.pipeline.transforms.split import PLAN_ALGORITHMS, split_plan


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
    plan = split_plan(brokers, bundles, bundle_time_averages(bundles), topics, config=config)
    write_output(plan, paths.out, SPLIT_PLAN)
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
