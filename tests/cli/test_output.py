"""Command output that goes to a pipe or a file is not cut to 80 columns."""

from __future__ import annotations

import pytest

from ballast.cli.common import PIPED_WIDTH, output_console


@pytest.mark.parametrize("stderr", [False, True])
def test_redirected_output_is_wide(stderr: bool, capsys: pytest.CaptureFixture[str]) -> None:
    console = output_console(stderr=stderr)
    assert not console.is_terminal and console.width == PIPED_WIDTH
    line = "x" * 150
    console.print(line)
    captured = capsys.readouterr()
    assert (captured.err if stderr else captured.out) == line + "\n"
