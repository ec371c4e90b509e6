"""The entry point: Ctrl-C while the commands' modules load (numpy, pyarrow, the Pulsar client:
most of a second) is one line and exit 130, not a traceback from inside an import; a failed
write of the output is one line naming the system's reason, as is a closed standard input or
output."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import typer

from ballast.cli import main
from ballast.cli.common import fail
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


def _exit_of(
    command: Callable[[], None], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[object, str]:
    """The exit code and stderr of the entry point running an app of ``command`` alone."""

    def build(_only: str | None) -> typer.Typer:
        app = typer.Typer()
        app.command()(command)
        return app

    monkeypatch.delenv("BALLAST_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["ballast"])
    monkeypatch.setattr("ballast.cli.app.build_app", build)
    with pytest.raises(SystemExit) as stopped:
        main.run()
    return stopped.value.code, capsys.readouterr().err


def test_ctrl_c_a_command_lets_through_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Typer turned it into exit 130 without a word (a load into ZooKeeper stopped halfway,
    silently)."""

    def interrupted() -> None:
        raise KeyboardInterrupt

    assert _exit_of(interrupted, monkeypatch, capsys) == (130, "ballast: interrupted\n")


def test_a_command_that_tells_its_own_interruption_is_not_told_twice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            fail("interrupted: nothing written", code=130)

    told = _exit_of(interrupted, monkeypatch, capsys)
    assert told == (130, "error: interrupted: nothing written\n")


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


def _closing(fd: int) -> Callable[[], None]:
    """Close ``fd`` in the child before it runs, as a shell's ``>&-`` or ``<&-`` does."""
    return lambda: os.close(fd)


@pytest.mark.parametrize(
    ("fd", "args", "code", "said"),
    [
        (1, ["decide", "shed", "examples/cluster-snapshot.json", "--now-ms", "1"], 1,
         "ballast: standard output is closed\n"),  # was exit 0 with the decisions lost
        (0, ["decide", "shed", "-", "--now-ms", "1"], 2,
         "error: cannot read -: standard input is closed\n"),  # was an internal error
    ],
)  # fmt: skip
def test_a_closed_standard_stream_is_named(fd: int, args: list[str], code: int, said: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "BALLAST_DEBUG"}
    result = subprocess.run(
        [sys.executable, "-m", "ballast", *args],
        stderr=subprocess.PIPE, text=True, env=environ, timeout=120, cwd=REPO, check=False,
        preexec_fn=_closing(fd),
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (code, said)


def test_a_closed_stream_keeps_its_descriptor_from_the_next_file() -> None:
    """Left free, descriptor 1 went to the next file opened, where a child process's output
    (Spark's JVM inherits it) would land."""
    script = (
        "import os, sys\n"
        "from ballast.cli.main import _guard_closed_streams\n"
        "_guard_closed_streams()\n"
        "print(os.open(os.devnull, os.O_RDONLY), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, timeout=60, cwd=REPO, check=True, preexec_fn=_closing(1),
    )  # fmt: skip
    assert int(result.stderr) > 2
