"""The pipeline docs list what the code has."""

from __future__ import annotations

import re
from pathlib import Path

from ballast.pipeline.jobs import HISTORY_JOBS
from ballast.pipeline.schema import HISTORY_TABLES, SHED_DECISIONS, SPLIT_PLAN

ROOT = Path(__file__).resolve().parents[2]
PIPELINE_DOC = (ROOT / "docs" / "pipeline.md").read_text()


def section(heading: str) -> str:
    """The text from a ``####`` heading to the next heading."""
    start = PIPELINE_DOC.index(heading)
    following = re.search(r"\n#{2,4} ", PIPELINE_DOC[start + len(heading) :])
    end = start + len(heading) + following.start() if following else len(PIPELINE_DOC)
    return PIPELINE_DOC[start:end]


def test_every_history_column_is_documented_in_order() -> None:
    for table, heading in [(t, f"#### `{t.name}`") for t in HISTORY_TABLES] + [
        (SPLIT_PLAN, "#### Output: `split_plan`"),
        (SHED_DECISIONS, "#### Output: `shed_decisions`"),
    ]:
        text = section(heading)
        documented = re.findall(r"^\| `([a-z_]+)` \| (\S+) \|", text, flags=re.MULTILINE)
        assert documented == [(c.name, c.type.value) for c in table.columns], table.name


def test_every_job_and_command_is_documented() -> None:
    for name in [*HISTORY_JOBS, "generate", "import"]:
        assert f"ballast pipeline {name}" in PIPELINE_DOC or f"### `{name}`" in PIPELINE_DOC
    readme = (ROOT / "README.md").read_text()
    assert "`ballast pipeline " in readme and "docs/pipeline.md" in readme
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    assert "| pipeline | `ballast.pipeline` |" in architecture
