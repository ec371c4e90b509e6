"""``ballast broker`` (one broker per process, the real cluster mode) and ``ballast zookeeper``
(a local ZooKeeper from Debian's package, for trying a cluster on one machine)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import signal
from pathlib import Path
from typing import Annotated

import typer

from ballast.broker.process import run_broker
from ballast.cli.common import fail, given_path, settings_from
from ballast.cli.history import history_sink
from ballast.clock import SystemClock
from ballast.coordination.cluster_name import ClusterMismatchError
from ballast.metadata.factory import InvalidStoreUrlError, parse_store_url
from ballast.metadata.store import MetadataError
from ballast.metadata.zkserver import (
    MAX_SESSION_TIMEOUT_MS,
    LocalZooKeeper,
    ZooKeeperConfig,
    ZooKeeperSetupError,
    ensure_installed,
)

log = logging.getLogger(__name__)
LOG_LEVELS = ("debug", "info", "warning", "error")
# The longest tick: the shortest session (two ticks) must not pass the longest (60 s).
MAX_TICK_MS = MAX_SESSION_TIMEOUT_MS // 2


def broker_command(
    config: Annotated[
        Path | None, typer.Option("--config", help="broker.conf-style settings.")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Metadata store URL (overrides metadataStoreUrl), e.g. zk:127.0.0.1:2181.",
        ),
    ] = None,
    host_usage: Annotated[
        str,
        typer.Option("--host-usage", help="psutil (this machine) or model (derived from traffic)."),
    ] = "psutil",
    log_level: Annotated[
        str, typer.Option("--log-level", help="debug, info, warning, error.")
    ] = "info",
) -> None:
    """Run one broker in this process (the real cluster mode): it registers in the metadata
    store, campaigns for leadership, serves the HTTP API on webServicePort, and stops
    gracefully on SIGTERM or Ctrl-C (a second signal stops it at once)."""
    if log_level not in LOG_LEVELS:
        fail(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    if host_usage not in ("psutil", "model"):
        fail("--host-usage must be psutil or model")
    pairs = list(overrides or [])
    if store is not None:
        pairs.append(f"metadataStoreUrl={store}")
    settings = settings_from(config, pairs)
    try:
        url = parse_store_url(settings.get_str("metadataStoreUrl"))
    except InvalidStoreUrlError as exc:
        fail(str(exc))
    web_port = settings.get_int("webServicePort")
    if web_port == settings.get_int("brokerServicePort"):
        fail(f"webServicePort and brokerServicePort are both {web_port}: give each its own")
    root = logging.getLogger()
    root.setLevel(log_level.upper())
    for handler in root.handlers:  # brokers' logs are read side by side: give them the time
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if url.scheme != "zk":
        log.warning(
            "metadata store %s lives in this process, so this broker is a cluster of its "
            "own that no broker in another process can join; give --store "
            "zk:HOST:PORT/CHROOT for a cluster (ballast standalone runs several brokers in "
            "one process)",
            settings.get_str("metadataStoreUrl"),
        )
    try:
        asyncio.run(run_broker(settings, host_usage=host_usage, history=history_sink(settings)))
    except ClusterMismatchError as exc:
        fail(str(exc))
    except MetadataError as exc:
        fail(str(exc), code=1)
    except OSError as exc:
        fail(f"cannot serve: {exc}", code=1)


def zookeeper_command(
    port: Annotated[int, typer.Option("--port", help="Client port (on 127.0.0.1).")] = 2181,
    data_dir_text: Annotated[
        str, typer.Option("--data-dir", help="Where ZooKeeper keeps its data.")
    ] = "zookeeper-data",
    tick_ms: Annotated[
        int, typer.Option("--tick-ms", help="tickTime: sessions last at least two ticks.")
    ] = 2000,
) -> None:
    """Run a standalone ZooKeeper from Debian's `zookeeper` package on 127.0.0.1 (installing
    the package first when missing and running as root) until Ctrl-C. For trying a cluster on
    one machine; not a production ensemble."""
    if not 0 < port < 65536:
        fail(f"--port must be in 1..65535, not {port}")
    if not 0 < tick_ms <= MAX_TICK_MS:  # two ticks must fit in the longest session
        fail(f"--tick-ms must be in 1..{MAX_TICK_MS}, not {tick_ms}")
    data_dir = Path(
        given_path(data_dir_text, "--data-dir", "the directory ZooKeeper keeps its data in")
    )
    created = not data_dir.exists()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(data_dir, os.W_OK | os.X_OK):  # a read-only mount, another's
            raise PermissionError(errno.EACCES, "cannot write in it")
    except OSError as exc:
        fail(f"cannot use --data-dir {data_dir}: {exc.strerror or exc}")
    try:
        ensure_installed()
    except ZooKeeperSetupError as exc:
        _unmake(data_dir, created)
        fail(str(exc), code=1)
    server = LocalZooKeeper(
        ZooKeeperConfig(
            data_dir=data_dir.resolve(),
            port=port,
            tick_ms=tick_ms,
            min_session_timeout_ms=2 * tick_ms,
            force_sync=True,
        )
    )

    served = False  # a server that served keeps its data directory, whatever comes after

    async def run() -> None:
        nonlocal served
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a closed terminal too
            loop.add_signal_handler(sig, stop.set)
        await server.start(SystemClock())
        if stop.is_set():  # asked to stop while it started: it never served anyone
            return
        typer.echo(f"ZooKeeper serving at {server.url} (data in {data_dir}); Ctrl-C stops it")
        served = True
        while not stop.is_set():
            code = server.exit_code
            if code is not None:  # it died (killed, out of memory): say so, and free its lock
                raise ZooKeeperSetupError(
                    f"ZooKeeper stopped on its own (exit code {code}); see {server.log_path}"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)

    try:
        asyncio.run(run())
    except ZooKeeperSetupError as exc:
        server.stop()
        if not served:
            _unmake(data_dir, created)
        fail(str(exc), code=1)
    finally:
        server.stop()


def _unmake(data_dir: Path, created: bool) -> None:
    """Remove the data directory of a server that never served, if this command made it."""
    if created:
        shutil.rmtree(data_dir, ignore_errors=True)
