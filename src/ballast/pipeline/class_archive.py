"""A class-data-sharing archive of the classes a pipeline job's JVM loads.

Each ``ballast pipeline`` command starts a JVM that loads and verifies some twenty thousand
classes from Spark's jars, several seconds of every run. Java's dynamic CDS archive
(``-XX:ArchiveClassesAtExit``, JEP 350) keeps them parsed and verified in one file that
later JVMs map in (``-XX:SharedArchiveFile``). ``scripts/install`` records it once by
running every job on a tiny synthetic history (``python -m ballast.pipeline.class_archive``);
sessions then use it when it is there. A stale archive (another Java, other jars) costs
nothing: the JVM checks it and, if it does not match, starts without it, silently.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Under the environment Ballast is installed in, beside its other data.
ARCHIVE_NAME = "spark-classes.jsa"


def default_archive() -> Path:
    """Where ``scripts/install`` puts the archive: inside the Python environment, so that it
    goes with the jars it was recorded from."""
    return Path(sys.prefix) / "share" / "ballast" / ARCHIVE_NAME


def java_option(name: str, path: Path) -> str:
    """``name=path`` as one JVM option in ``spark.driver.extraJavaOptions``, which Spark's
    launcher splits at spaces outside double quotes (a path with a space stays whole)."""
    quoted = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'{name}="{quoted}"'


def archive_java_options(archive: Path) -> str | None:
    """The driver JVM options that use ``archive``, or None if there is none."""
    return java_option("-XX:SharedArchiveFile", archive) if archive.is_file() else None


class RecordingFailed(RuntimeError):
    """The recording run did not end with an archive (its output says why)."""


def record(archive: Path, *, timeout_s: float = 900.0) -> None:
    """Record the archive: a child process runs every job on a tiny history with
    ``-XX:ArchiveClassesAtExit``; the file replaces ``archive`` only once complete."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ballast-cds-") as work:
        partial = Path(work) / ARCHIVE_NAME
        done = subprocess.run(
            [sys.executable, "-m", "ballast.pipeline.class_archive", "--run-jobs", str(partial)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if done.returncode != 0 or not partial.is_file():
            raise RecordingFailed(
                f"recording the class archive failed (exit {done.returncode}):\n"
                + done.stderr[-3000:]
            )
        os.replace(partial, archive)


def _run_jobs(partial: Path) -> None:
    """The recording run itself (in its own process: the JVM writes the archive when it
    exits, so this process waits for that)."""
    from pyspark import SparkContext

    from ballast.model.config import load_settings
    from ballast.pipeline.jobs import HISTORY_JOBS, load
    from ballast.pipeline.jobs.base import JobPaths
    from ballast.pipeline.jobs.generate import generate
    from ballast.pipeline.session import SessionOptions, build_session
    from ballast.pipeline.synthetic_spec import GenerateSpec

    options = SessionOptions(
        conf={"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={partial}"}
    )
    spark = build_session(options)
    settings = load_settings().settings
    with tempfile.TemporaryDirectory(prefix="ballast-cds-history-") as work:
        history = str(Path(work) / "history")
        # Tiny, but enough for every job to run its whole plan (topic rows, several brokers
        # and snapshots).
        generate(spark, GenerateSpec(brokers=4, bundles=16, namespaces=2, snapshots=6), history)
        for name in HISTORY_JOBS:
            out = str(Path(work) / "out" / name)
            load(name).run(spark, JobPaths(history=history, out=out), settings)
    gateway = SparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        # The gateway JVM exits when its stdin closes; the archive is written on the way out.
        process.stdin.close()
        process.wait(timeout=600)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m ballast.pipeline.class_archive",
        description="Record the pipeline's class-data-sharing archive (scripts/install does).",
    )
    parser.add_argument("--archive", type=Path, default=None, help="Where to write it.")
    parser.add_argument("--run-jobs", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_jobs is not None:
        _run_jobs(args.run_jobs)
        return
    target = args.archive or default_archive()
    try:
        record(target)
    except (RecordingFailed, subprocess.TimeoutExpired, OSError) as exc:
        sys.exit(f"error: {exc}")
    print(f"class archive: {target} ({target.stat().st_size / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
