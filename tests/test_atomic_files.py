"""A file is replaced whole or not at all, through a symlink, and never renamed over a
device."""

from __future__ import annotations

from pathlib import Path

import pytest

from ballast.atomic_files import replaced_whole


def test_an_error_while_writing_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(OSError), replaced_whole(target) as partial:
        partial.write_text("half", encoding="utf-8")
        raise OSError("disk full")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    with replaced_whole(target) as partial:
        partial.write_text("new", encoding="utf-8")
    assert target.read_text(encoding="utf-8") == "new"


def test_a_symlink_stays_and_its_file_is_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with replaced_whole(link) as partial:
        partial.write_text("new", encoding="utf-8")
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new"


def test_a_device_is_written_into() -> None:
    with replaced_whole(Path("/dev/null")) as partial:
        assert partial == Path("/dev/null")
