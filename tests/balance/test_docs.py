"""The user docs keep up with the code: every reason kind, strategy and snapshot part."""

from __future__ import annotations

from pathlib import Path

from ballast.balance.decisions import ReasonKind
from ballast.balance.placement.strategies import PLACEMENT_STRATEGIES
from ballast.balance.shedding.registry import SHEDDERS
from ballast.balance.snapshot_json import KNOWN_KEYS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_decide_doc_lists_every_reason_kind_and_snapshot_part() -> None:
    text = (DOCS / "decide.md").read_text()
    assert [k.value for k in ReasonKind if f"`{k.value}`" not in text] == []
    assert [key for key in KNOWN_KEYS if f"`{key}" not in text] == []


def test_strategies_doc_covers_every_strategy() -> None:
    text = (DOCS / "strategies.md").read_text()
    assert [name for name in SHEDDERS if f"### {name}" not in text] == []
    assert [name for name in PLACEMENT_STRATEGIES if f"**{name}**" not in text] == []
