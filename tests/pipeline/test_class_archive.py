"""The class-data-sharing archive: recorded by running every job, then mapped by a job's JVM."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ballast.pipeline.class_archive import default_archive, record

from .test_cli import GENERATE


def strictly(archive: Path) -> str:
    """Driver options that use ``archive`` or stop the JVM (-Xshare:on), rather than start
    it without the archive as it otherwise silently does."""
    return f"spark.driver.extraJavaOptions=-XX:SharedArchiveFile={archive} -Xshare:on"


@pytest.mark.spark
@pytest.mark.integration
def test_a_recorded_archive_is_mapped_by_a_jobs_jvm(tmp_path: Path) -> None:
    from tests.conftest import run_ballast

    # The one scripts/install recorded (which .ci/run runs first, from a fresh checkout: the
    # current code's), else one recorded here: a recording runs every job, about a minute.
    archive = default_archive()
    if not archive.is_file():
        archive = tmp_path / "share" / "spark-classes.jsa"
        record(archive)
    assert archive.stat().st_size > 10 * 2**20
    history = tmp_path / "history"
    generated = run_ballast("pipeline", "generate", "--out", str(history), *GENERATE)
    assert generated.returncode == 0, generated.stderr[-2000:]
    report = ("pipeline", "report", "--history", str(history), "--out", str(tmp_path / "r"))
    mapped = run_ballast(*report, "--conf", strictly(archive))
    assert mapped.returncode == 0, mapped.stderr[-2000:]
    garbage = tmp_path / "garbage.jsa"
    garbage.write_bytes(b"not an archive")
    refused = run_ballast(*report, "--conf", strictly(garbage))  # the check above can fail
    assert refused.returncode == 2 and "processing the shared archive file" in refused.stderr


def test_the_archive_lives_in_the_environment() -> None:
    assert default_archive().is_relative_to(sys.prefix)
