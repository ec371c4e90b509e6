"""The entry point: Ctrl-C while the commands' modules load (numpy, pyarrow, the Pulsar client:
most of a second) is one line and exit 130, not a traceback from inside an import; a failed
write of the output is one line naming the system's reason."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from typing import Any

import pytest

from ballast.cli import main
from tests.conftest import REPO


def test_ctrl_c_while_the_app_loads_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def interrupted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ballast.cli.app":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.delenv("BALLAST_DEBUG", raising=False)
    monkeypatch.delitem(sys.modules, "ballast.cli.app", raising=False)
    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as stopped:
        main.run()
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "ballast: interrupted\n"


@pytest.mark.parametrize(
    "args",
    [
        ["config", "show"],  # written at once
        ["bundle", "ranges", "--count", "100000"],  # written in chunks as it is worked out
    ],
)
def test_a_full_output_device_is_named_not_an_internal_error(args: list[str]) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "BALLAST_DEBUG"}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "ballast", *args],
            stdout=full, stderr=subprocess.PIPE, text=True, env=environ, timeout=120, cwd=REPO,
            check=False,
        )  # fmt: skip
    assert result.returncode == 1
    # One line: no second complaint from the interpreter's flush of stdout at exit.
    assert result.stderr == "ballast: cannot write the output: No space left on device\n"
