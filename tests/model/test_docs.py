"""The user docs list what the code has."""

from __future__ import annotations

from pathlib import Path

from ballast.model.config import SETTINGS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_configuration_doc_lists_every_setting() -> None:
    text = (DOCS / "configuration.md").read_text()
    missing = [s.key for s in SETTINGS if f"`{s.key}`" not in text]
    assert missing == []


def test_every_setting_is_defined_and_documented_once() -> None:
    keys = [s.key for s in SETTINGS]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []
    text = (DOCS / "configuration.md").read_text()
    twice = [key for key in keys if text.count(f"| `{key}` |") != 1]
    assert twice == []
