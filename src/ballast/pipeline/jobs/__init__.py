"""The pipeline's jobs, registered by command name (STYLE 8).

History jobs read a history and write results; each lives in its own module with a
``run(spark, paths, settings)`` function. The registry holds only names, summaries and
module paths, so listing jobs (``ballast --help``) does not import Spark; :func:`load`
imports a job when it runs. ``generate`` (which writes a history) lives in :mod:`.generate`.

A job whose command takes options of its own (``shed``: the strategy, the scope, ``--apply``;
``time-averages``: ``--buckets``) says so with ``own_command``; the command line then defines
its command by hand.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ballast.pipeline.jobs.base import JobError, JobPaths, JobRunner, SettingsCheck


@dataclass(frozen=True, slots=True)
class JobEntry:
    """A registered history job: its command name, one-line summary and module, and whether
    its command is written by hand (``own_command``) instead of generated."""

    name: str
    summary: str
    module: str
    own_command: bool = False


HISTORY_JOBS: dict[str, JobEntry] = {
    entry.name: entry
    for entry in (
        JobEntry(
            "time-averages",
            "Bundle and broker time averages from the raw samples, equal to the leader's "
            "incremental updates.",
            "ballast.pipeline.jobs.time_averages",
            own_command=True,
        ),
        JobEntry(
            "split-plan",
            "Bundles above the split thresholds, and where to cut them from per-topic load.",
            "ballast.pipeline.jobs.split_plan",
        ),
        JobEntry(
            "report",
            "Per-broker and per-namespace load percentiles and imbalance over time, as an "
            "HTML page with PNG charts.",
            "ballast.pipeline.jobs.report",
        ),
        JobEntry(
            "shed",
            "A shedding strategy's decisions on each cluster's latest snapshot, equal to "
            "ballast decide shed; --apply sends them to a live cluster.",
            "ballast.pipeline.jobs.shed",
            own_command=True,
        ),
    )
}


@dataclass(frozen=True, slots=True)
class LoadedJob:
    """A job's ``run`` and its ``check_settings`` (which fails fast, before Spark starts,
    on settings the job cannot use; a no-op for jobs without one)."""

    run: JobRunner
    check_settings: SettingsCheck


def _no_check(settings: object) -> None:
    del settings


def load(name: str) -> LoadedJob:
    """A history job by command name; unknown names list the valid ones."""
    try:
        entry = HISTORY_JOBS[name]
    except KeyError:
        raise JobError(
            f'unknown pipeline job "{name}"; choose one of {", ".join(HISTORY_JOBS)}'
        ) from None
    module = importlib.import_module(entry.module)
    return LoadedJob(run=module.run, check_settings=getattr(module, "check_settings", _no_check))


__all__ = ["HISTORY_JOBS", "JobEntry", "JobError", "JobPaths", "LoadedJob", "load"]
