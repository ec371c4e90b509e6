"""The entry point: Ctrl-C while the commands' modules load (numpy, pyarrow, the Pulsar client:
most of a second) is one line and exit 130, not a traceback from inside an import."""

from __future__ import annotations

import builtins
import sys
from typing import Any

import pytest

from ballast.cli import main


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
