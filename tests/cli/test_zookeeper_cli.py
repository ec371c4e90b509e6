"""End to end: ``ballast zookeeper`` serves a ZooKeeper that the other commands use, and stops
it on Ctrl-C; options it cannot run with exit 2 before anything starts."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from ballast.metadata.zkserver import free_port
from tests.support.live import running_ballast, wait_until

Run = Callable[..., CompletedProcess[str]]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (("--port", "0"), "--port must be in 1..65535, not 0"),
        (("--port", "70000"), "--port must be in 1..65535, not 70000"),
        (("--tick-ms", "0"), "--tick-ms must be in 1..30000, not 0"),
        (("--tick-ms", "30001"), "--tick-ms must be in 1..30000"),
        (("--data-dir", ""), "--data-dir is empty"),  # was the current directory
    ],
)
def test_bad_options_exit_2(ballast: Run, arguments: tuple[str, ...], named: str) -> None:
    result = ballast("zookeeper", *arguments)
    assert result.returncode == 2 and named in result.stderr, result.stderr


def test_a_data_dir_that_cannot_be_made_exits_2(ballast: Run, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = ballast("zookeeper", "--data-dir", str(blocker / "zk"))
    assert result.returncode == 2 and "cannot use --data-dir" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_data_dir_that_cannot_be_written_exits_2(ballast: Run) -> None:
    """It existed, so making it succeeded: the server's first write failed with a bare
    "ballast: Permission denied: ..." (exit 1), without a word of --data-dir."""
    result = ballast("zookeeper", "--data-dir", "/proc/1")  # not writable, even by root
    assert result.returncode == 2
    assert "cannot use --data-dir /proc/1: cannot write in it" in result.stderr, result.stderr


@pytest.mark.integration
def test_a_server_that_dies_is_told_and_its_directory_freed(ballast: Run, tmp_path: Path) -> None:
    """Killed (or out of memory), the JVM left the command running without a word, holding
    the data directory's lock, so no server could start on it again."""
    port = free_port()
    data = tmp_path / "zk"
    options = ["--port", str(port), "--data-dir", str(data), "--tick-ms", "500"]
    with running_ballast("zookeeper", *options) as server:
        assert server.stdout is not None and server.stderr is not None
        assert "ZooKeeper serving" in server.stdout.readline()
        (jvm,) = _jvms_of(data)
        os.kill(jvm, signal.SIGKILL)
        assert server.wait(timeout=30) == 1
        said = server.stderr.read()
        assert "ZooKeeper stopped on its own (exit code -9); see " in said, said
    again = ["--port", str(free_port()), "--data-dir", str(data), "--tick-ms", "500"]
    with running_ballast("zookeeper", *again) as restarted:
        assert restarted.stdout is not None
        assert "ZooKeeper serving" in restarted.stdout.readline()  # the lock is free
        restarted.send_signal(signal.SIGINT)
        assert restarted.wait(timeout=60) == 0


@pytest.mark.integration
def test_a_stop_while_it_starts_never_says_serving(tmp_path: Path) -> None:
    """SIGTERM as the JVM started: it printed "ZooKeeper serving at ...", then stopped."""
    data = tmp_path / "zk"
    options = ["--port", str(free_port()), "--data-dir", str(data), "--tick-ms", "500"]
    with running_ballast("zookeeper", *options) as server:
        assert server.stdout is not None
        wait_until(lambda: bool(_jvms_of(data)), timeout_s=30, what="the JVM started")
        server.send_signal(signal.SIGTERM)  # a JVM takes a second or more to serve
        assert server.wait(timeout=60) == 0
        assert "serving" not in server.stdout.read()
    assert not _jvms_of(data)


def _jvms_of(data: Path) -> list[int]:
    """The JVMs whose command line names ``data``."""
    return [
        pid
        for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
        if _command_line(pid).startswith(b"java") and str(data).encode() in _command_line(pid)
    ]


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ")
    except OSError:
        return b""


@pytest.mark.integration
def test_serves_until_ctrl_c(ballast: Run, tmp_path: Path) -> None:
    port = free_port()
    options = ["--port", str(port), "--data-dir", str(tmp_path / "zk"), "--tick-ms", "500"]
    with running_ballast("zookeeper", *options) as server:
        assert server.stdout is not None
        line = server.stdout.readline()  # printed once the server answers
        assert f"ZooKeeper serving at zk:127.0.0.1:{port}" in line, line
        listing = ballast("metadata", "ls", "/", "--store", f"zk:127.0.0.1:{port}")
        assert listing.returncode == 0 and "zookeeper" in listing.stdout.split(), listing
        # A second one on the port: the first would answer its readiness check, while its own
        # JVM exited on the taken port; it said "serving" and ran on, serving nothing.
        second = ballast("zookeeper", "--port", str(port), "--data-dir", str(tmp_path / "zk2"))
        assert second.returncode == 1, second.stdout
        assert f"port {port} on 127.0.0.1 is in use" in second.stderr
        assert "serving" not in second.stdout
        assert not (tmp_path / "zk2").exists()  # it never served: no directory left behind
        # A second one on the data directory: both would write zoo.cfg, logs and snapshots.
        shared = ballast(
            "zookeeper", "--port", str(free_port()), "--data-dir", str(tmp_path / "zk")
        )
        assert shared.returncode == 1, shared.stdout
        assert "is in use by another ZooKeeper server" in shared.stderr
        assert f"clientPort={port}" in (tmp_path / "zk" / "zoo.cfg").read_text()  # untouched
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
        # ZooKeeper itself stopped with it: nothing listens on the port any more.
        wait_until(lambda: not listening(port), timeout_s=30, what="ZooKeeper stopped")
        assert (tmp_path / "zk" / "data").is_dir()  # its data stay for the next start


@pytest.mark.integration
def test_the_server_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """SIGKILL leaves no handler to stop ZooKeeper: the JVM must not outlive it, holding the
    port and the data directory."""
    port = free_port()
    options = ["--port", str(port), "--data-dir", str(tmp_path / "zk"), "--tick-ms", "500"]
    with running_ballast("zookeeper", *options) as server:
        assert server.stdout is not None
        assert "ZooKeeper serving" in server.stdout.readline()
        server.kill()
        server.wait(timeout=30)
        wait_until(lambda: not listening(port), timeout_s=30, what="ZooKeeper gone with it")
