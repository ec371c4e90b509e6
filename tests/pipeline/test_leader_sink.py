"""The leader's history sink built from ``loadBalancerHistoryPath``: made at startup, so a
path that cannot hold a history fails there with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from ballast.model.config import load_settings
from ballast.pipeline.leader_sink import HistoryPathError, leader_history_sink


def test_no_path_no_sink_and_a_missing_directory_is_made(tmp_path: Path) -> None:
    assert leader_history_sink(load_settings().settings) is None
    root = tmp_path / "a" / "history"
    sink = leader_history_sink(
        load_settings(overrides=[f"loadBalancerHistoryPath={root}"]).settings
    )
    assert sink is not None and root.is_dir()


def test_a_file_in_place_of_the_history_is_named_as_such(tmp_path: Path) -> None:
    """It said only "File exists"."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("kept")
    settings = load_settings(overrides=[f"loadBalancerHistoryPath={a_file}"]).settings
    with pytest.raises(HistoryPathError, match=r"notes\.txt is a file, not a directory$"):
        leader_history_sink(settings)
    assert a_file.read_text() == "kept"
