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


def _conf_text(value: object) -> str:
    """A default as broker.conf (and the docs' table) spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    return "(empty)" if value is None else str(value)


def test_configuration_doc_gives_every_default() -> None:
    text = (DOCS / "configuration.md").read_text()
    cells = {
        row.split("|")[1].strip(): row.split("|")[2].strip()
        for row in text.splitlines()
        if row.startswith("| `")
    }
    wrong = {
        s.key: (cells.get(f"`{s.key}`"), f"`{_conf_text(s.default)}`")
        for s in SETTINGS
        if cells.get(f"`{s.key}`") != f"`{_conf_text(s.default)}`"
    }
    assert wrong == {}
