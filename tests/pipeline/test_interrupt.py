"""Ctrl-C on a pipeline command as a terminal sends it: SIGINT to the whole process group (the
command, Spark's JVM, its Python workers). Whether it comes while Spark starts or while a job
runs, the command says so in one line and exits 130, and nothing it started is left
running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO
from tests.support.live import wait_until

GENERATE = ["--snapshots", "400", "--brokers", "20", "--bundles", "4000", "--seed", "3"]
# The JVM says this on its own stderr at every start; it is not the command's.
JVM_NOTICE = "WARNING: Using incubator modules"
# ``ballast ARGS`` with SIGINT at its default, as a terminal's foreground command has it: a
# test run started in the background (``&``) passes SIGINT on ignored, and an ignored SIGINT
# stays ignored by the command (on purpose).
AT_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'ballast', *sys.argv[1:]])"
)


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _running(process: psutil.Process, word: str) -> bool:
    """Whether a descendant of ``process`` runs a command line with ``word`` in it."""
    for child in _descendants(process):
        try:
            if any(word in part for part in child.cmdline()):
                return True
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return False


def _in_session(session: int) -> list[psutil.Process]:
    """The live processes of the session ``session`` (zombies aside): the command's, wherever
    in it they moved their process group."""
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == session and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return found


def _interrupt_when(moment: Callable[[psutil.Process], bool], out: Path) -> tuple[int, list[str]]:
    """Run ``pipeline generate``, send SIGINT to its process group once ``moment`` holds;
    its exit code and its stderr lines (the JVM's notice aside)."""
    process = subprocess.Popen(
        [sys.executable, "-c", AT_A_TERMINAL, "pipeline", "generate", "--out", str(out), *GENERATE],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        watched = psutil.Process(process.pid)

        def came() -> bool:
            assert process.poll() is None, "the command ended before the moment came"
            return moment(watched)

        wait_until(came, timeout_s=120, interval_s=0.02, what="the moment")
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
        wait_until(lambda: not _in_session(process.pid), timeout_s=30, what="no process of it left")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for left in _in_session(process.pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                left.kill()
    return process.returncode, [line for line in stderr.splitlines() if JVM_NOTICE not in line]


@pytest.mark.integration
@pytest.mark.parametrize(
    "word",
    [
        "-version",  # the Java check: interrupted, it is no "Java is not installed"
        # Spark's JVM is starting: stopped mid-way its launcher would leave the JVM behind,
        # and PySpark's own handler would print py4j's tracebacks.
        "SparkSubmit",
    ],
)
def test_ctrl_c_while_spark_starts_waits_for_it_and_stops_it(word: str, tmp_path: Path) -> None:
    code, lines = _interrupt_when(lambda p: _running(p, word), tmp_path / "h")
    assert code == 130, lines
    assert lines == ["error: interrupted: the job did not start"]
    assert not (tmp_path / "h").exists()  # nothing written


@pytest.mark.integration
def test_ctrl_c_while_a_job_runs_is_one_line(tmp_path: Path) -> None:
    # Spark's Python workers run the job's tasks.
    code, lines = _interrupt_when(lambda p: _running(p, "pyspark.daemon"), tmp_path / "h")
    assert code == 130
    assert lines == [
        "error: interrupted: the job stopped before its end (its results may be missing or partial)"
    ]
