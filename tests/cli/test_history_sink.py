"""``loadBalancerHistoryPath`` as ``ballast standalone`` and ``ballast broker`` read it."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from ballast.cli.history import history_sink
from ballast.model.config import load_settings
from ballast.pipeline.history import LeaderHistoryWriter


def test_no_path_no_history() -> None:
    assert history_sink(load_settings().settings) is None


def test_a_path_gives_the_leader_a_parquet_writer(tmp_path: Path) -> None:
    root = tmp_path / "history"
    settings = load_settings(
        overrides=[f"loadBalancerHistoryPath={root}", "clusterName=east"]
    ).settings
    sink = history_sink(settings)
    assert sink is not None
    assert sink.write == LeaderHistoryWriter(root, "east")
    assert root.is_dir()  # created at startup


def test_an_unwritable_path_stops_the_command(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    settings = load_settings(overrides=[f"loadBalancerHistoryPath={blocker}/history"]).settings
    with pytest.raises(typer.Exit):
        history_sink(settings)


def test_a_directory_that_cannot_be_written_in_stops_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It existed, so making it succeeded: then every cycle's write failed with a traceback
    in the log, and the run ended as if all were well."""
    settings = load_settings(overrides=["loadBalancerHistoryPath=/proc/1"]).settings
    with pytest.raises(typer.Exit):
        history_sink(settings)
    assert "loadBalancerHistoryPath /proc/1: cannot write in /proc/1" in capsys.readouterr().err
