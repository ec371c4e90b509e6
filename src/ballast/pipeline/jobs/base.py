"""What every job shares: where it reads and writes, and the shape of a registered job.

A job is thin (STYLE 12): it reads history tables, checks them against the schema, calls
transforms and writes its output under ``out``. It returns a small summary (counts, paths)
that the command prints as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ballast.model.config import Settings


class JobError(ValueError):
    """A job cannot run with the given inputs (bad settings, empty history)."""


@dataclass(frozen=True, slots=True)
class JobPaths:
    """``history``: the history root to read; ``out``: the directory to write results to.
    Strings, so that any Hadoop file system URI works."""

    history: str
    out: str


Summary = Mapping[str, object]
JobRunner = Callable[["SparkSession", JobPaths, "Settings"], Summary]
SettingsCheck = Callable[["Settings"], None]


def require_paths(spark: SparkSession, paths: JobPaths) -> None:
    """Fail early, with the reason, when the history holds neither broker nor bundle rows
    or the output is a file, on a file system Spark has none for, the history itself or
    another history (a job would otherwise read an absent history as an empty one, fail with
    a Java stack after its reads, or replace a history's tables with its own)."""
    from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS
    from ballast.pipeline.sparkio import (
        require_apart,
        require_history,
        require_not_a_history,
        require_output_root,
    )

    require_history(spark, paths.history, (BROKERS, BUNDLES))
    require_output_root(spark, paths.out)
    require_apart(spark, paths.history, paths.out)
    require_not_a_history(spark, paths.out, (BROKERS, BUNDLES, TOPICS))
