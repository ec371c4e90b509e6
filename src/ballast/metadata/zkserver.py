"""A standalone ZooKeeper server from Debian's ``zookeeper`` package, started as a child process
— for tests, for trying a real cluster on one machine (``ballast zookeeper``), never for
production ensembles.

The server binds to loopback, keeps its data in the given directory, and is ready once the
``srvr`` four-letter command reports a ``Mode:`` line (``ruok`` answers before the server
serves requests). It is stopped through the process handle that started it, and dies with
the thread that started it (on Linux), however that one ends. One server at a time uses a
data directory: a lock file in it, held by this process and by the server's, says which.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ballast.clock import Clock
from ballast.file_lock import hold_exclusive

JAR_DIR = Path("/usr/share/java")
ZOOKEEPER_JAR = JAR_DIR / "zookeeper.jar"
LOGGING_JAR = JAR_DIR / "slf4j-simple.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperSetupError(RuntimeError):
    """ZooKeeper cannot be installed or started; the message says what to do."""


# prctl(2): the signal a child gets when the thread that started it ends.
PR_SET_PDEATHSIG = 1
LOCK_NAME = "ballast-zookeeper.lock"


# prctl, looked up here (dlopen in a forked child of a threaded process may deadlock).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _dying_with(parent: int) -> Callable[[], None]:
    """What the child runs before Java: SIGKILL once the thread that started it is gone (on
    Linux; the server is started from the event loop's thread, which lives as long as the
    command), so a parent killed with SIGKILL does not leave a server holding the port. A
    parent already gone before that took effect is caught by its pid."""

    def in_child() -> None:
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(1)

    return in_child


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server listens on ``host:port`` (a bind fails); a port only in TIME_WAIT is
    free, as it is to ZooKeeper's own listener."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def ensure_installed(*, allow_install: bool = True) -> None:
    """Make sure Debian's ``zookeeper`` package and Java are present, installing the package
    with apt-get when missing and we run as root."""
    if shutil.which("java") is None:
        raise ZooKeeperSetupError("java is not installed (apt-get install openjdk-17-jre-headless)")
    if ZOOKEEPER_JAR.exists():
        return
    if not allow_install:
        raise ZooKeeperSetupError(f"{ZOOKEEPER_JAR} is missing (apt-get install zookeeper)")
    if os.geteuid() != 0:
        raise ZooKeeperSetupError(
            "ZooKeeper is not installed and installing it needs root: "
            "sudo apt-get install -y zookeeper"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "zookeeper"]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ZooKeeperSetupError(f"{' '.join(command)} failed: {result.stderr.strip()[-500:]}")
    if not ZOOKEEPER_JAR.exists():
        raise ZooKeeperSetupError(f"apt-get installed zookeeper but {ZOOKEEPER_JAR} is missing")


# The longest session the server grants (maxSessionTimeout).
MAX_SESSION_TIMEOUT_MS = 60_000


@dataclass(frozen=True, slots=True)
class ZooKeeperConfig:
    """``tick_ms`` sets the session-timeout floor (2 ticks by default); tests use short ticks
    so that a 2-second session expires in about two seconds."""

    data_dir: Path
    port: int
    tick_ms: int = 500
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = MAX_SESSION_TIMEOUT_MS
    heap_mb: int = 256
    force_sync: bool = False

    def render(self) -> str:
        return "\n".join(
            [
                f"tickTime={self.tick_ms}",
                f"dataDir={self.data_dir / 'data'}",
                f"clientPort={self.port}",
                "clientPortAddress=127.0.0.1",
                f"minSessionTimeout={self.min_session_timeout_ms}",
                f"maxSessionTimeout={self.max_session_timeout_ms}",
                "admin.enableServer=false",
                "4lw.commands.whitelist=*",
                f"forceSync={'yes' if self.force_sync else 'no'}",
                "",
            ]
        )


class LocalZooKeeper:
    """One standalone ZooKeeper child process."""

    def __init__(self, config: ZooKeeperConfig) -> None:
        self.config = config
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: int | None = None  # the data directory's lock, held while serving

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.config.port}"

    @property
    def url(self) -> str:
        return f"zk:{self.hosts}"

    @property
    def log_path(self) -> Path:
        return self.config.data_dir / "zookeeper.log"

    async def start(self, clock: Clock, *, timeout_s: float = 30.0) -> None:
        """Start the server and wait until it serves requests. A port another server listens
        on is refused first: that server would answer the readiness check for this one, whose
        JVM had exited on the taken port."""
        config = self.config
        if port_taken(config.port):
            raise ZooKeeperSetupError(
                f"port {config.port} on 127.0.0.1 is in use: another server listens there"
            )
        (config.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self._lock_data_dir()
        try:
            await self._run(clock, timeout_s)
        except BaseException:
            self.stop()  # the process, if any, and the directory's lock
            raise

    async def _run(self, clock: Clock, timeout_s: float) -> None:
        config = self.config
        cfg_path = config.data_dir / "zoo.cfg"
        cfg_path.write_text(config.render())
        classpath = str(ZOOKEEPER_JAR)
        if LOGGING_JAR.exists():
            classpath += f":{LOGGING_JAR}"
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                ["java", f"-Xmx{config.heap_mb}m", "-cp", classpath, MAIN_CLASS, str(cfg_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_dying_with(os.getpid()),  # noqa: PLW1509 (async-signal-safe calls)
                pass_fds=() if self._lock is None else (self._lock,),  # the JVM holds it too
            )
        deadline = clock.monotonic() + timeout_s
        while clock.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ZooKeeperSetupError(
                    f"ZooKeeper exited with {self._process.returncode}; see {self.log_path}"
                )
            try:
                if "Mode:" in await self.four_letter("srvr"):
                    return
            except OSError:
                pass
            await clock.sleep(0.05)
        raise ZooKeeperSetupError(
            f"ZooKeeper did not serve within {timeout_s} s; see {self.log_path}"
        )

    async def four_letter(self, command: str, *, timeout_s: float = 5.0) -> str:
        """Send a four-letter admin command (``srvr``, ``cons``, ``mntr``) and return the
        answer; OSError (a TimeoutError among them) when there is none within ``timeout_s``.
        A server still starting may accept the connection and never answer nor close it
        (ZooKeeper 3.8 fails closing a command socket before its database is loaded)."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self.config.port), timeout_s
        )
        try:
            writer.write(command.encode())
            await writer.drain()
            return (await asyncio.wait_for(reader.read(), timeout_s)).decode(errors="replace")
        finally:
            writer.close()

    def _lock_data_dir(self) -> None:
        """Take the data directory's lock, or refuse: two servers on one directory would
        rewrite each other's zoo.cfg and interleave their logs and snapshots."""
        if self._lock is not None:
            return
        path = self.config.data_dir / LOCK_NAME
        handle = hold_exclusive(path)
        if handle is None:
            raise ZooKeeperSetupError(
                f"{self.config.data_dir} is in use by another ZooKeeper server (it holds "
                f"{path}); give another --data-dir, or stop that server"
            ) from None
        self._lock = handle

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it lingers) and free its directory."""
        process, self._process = self._process, None
        try:
            if process is None or process.poll() is not None:
                return
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        finally:
            lock, self._lock = self._lock, None
            if lock is not None:
                os.close(lock)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """The server process's exit status once it has ended on its own (None while it
        runs, and after :meth:`stop`)."""
        return None if self._process is None else self._process.poll()
