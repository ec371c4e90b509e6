"""The user docs list what the code has."""

from __future__ import annotations

from pathlib import Path

from ballast.model.config import SETTINGS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_configuration_doc_lists_every_setting() -> None:
    text = (DOCS / "configuration.md").read_text()
    missing = [s.key for s in SETTINGS if f"`{s.key}`" not in text]
    assert missing == []
