"""``ballast standalone``: a whole cluster in one process, balancing a demo load."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Annotated

import typer

from ballast.cli.common import fail, output_console, settings_from
from ballast.cli.history import history_sink
from ballast.coordination.cluster_name import ClusterMismatchError
from ballast.metadata.factory import InvalidStoreUrlError, parse_store_url
from ballast.metadata.store import MetadataError
from ballast.model.config import Settings
from ballast.standalone.run import (
    NoLeaderError,
    SetupRefusedError,
    StandaloneOptions,
    run_standalone,
    summary_text,
)
from ballast.standalone.workload import DemoWorkload, WorkloadError

# Brokers one standalone process runs. Each follows every other's registration, so the work
# grows with the square of their number: 100 start in seconds and stop within 4 s of Ctrl-C,
# while 300 kept a 2-core machine's event loop too busy to show a status line or to stop.
MAX_BROKERS = 100


def _unset(option: str, key: str, settings: Settings) -> str:
    """An option left out, named with the setting that gave its value instead."""
    source = settings.source(key)
    return f"{option} (unset: {key}" + (")" if source == "default" else f" from {source})")


def standalone_command(
    brokers: Annotated[
        int, typer.Option("--brokers", help=f"Number of brokers (1 to {MAX_BROKERS}).")
    ] = 3,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="Web port of the first broker; the next ones follow. Default: the setting "
            "webServicePort (8080).",
        ),
    ] = None,
    broker_port: Annotated[
        int | None,
        typer.Option(
            "--broker-port",
            help="Binary-protocol port of the first broker. Default: the setting "
            "brokerServicePort (6650).",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="memory: or sqlite:PATH to keep namespaces and policies. Default: the setting "
            "metadataStoreUrl (memory:).",
        ),
    ] = None,
    workload: Annotated[
        Path | None,
        typer.Option(
            "--workload",
            help="Demo load (TOML: namespace, bundles, topics, rate, size, fan_out, skew, "
            "hotspot_after_s, hotspot_factor; docs/operations.md).",
        ),
    ] = None,
    no_load: Annotated[
        bool, typer.Option("--no-load", help="Run an idle cluster (for real clients).")
    ] = False,
    duration: Annotated[
        float | None, typer.Option("--duration", help="Stop after this many seconds.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="broker.conf-style settings.")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"
        ),
    ] = None,
) -> None:
    """Run a whole cluster in this process: brokers on consecutive loopback ports over the
    embedded store, a leader elected, a demo namespace driven by a built-in load generator
    with a hot spot that appears after a while — the load manager visibly balances it. A live
    console shows each broker's load, bundles and the decisions; Ctrl-C stops and summarises."""
    # The settings give what the options do not, as Pulsar's standalone.conf gives its ports
    # and store; an option beats a setting. The errors name where each value came from.
    settings = settings_from(config, overrides)
    named = {
        option: option if given is not None else _unset(option, key, settings)
        for option, given, key in (
            ("--port", port, "webServicePort"),
            ("--broker-port", broker_port, "brokerServicePort"),
            ("--store", store, "metadataStoreUrl"),
        )
    }
    port = settings.get_int("webServicePort") if port is None else port
    broker_port = settings.get_int("brokerServicePort") if broker_port is None else broker_port
    store = settings.get_str("metadataStoreUrl") if store is None else store
    if not 1 <= brokers <= MAX_BROKERS:
        fail(
            f"--brokers must be in 1..{MAX_BROKERS}, not {brokers}: every broker follows every "
            "other's registration, all in this one process; run `ballast broker` processes "
            "for a bigger cluster"
        )
    web = range(port, port + brokers)
    binary = range(broker_port, broker_port + brokers)
    if not (min(web.start, binary.start) > 0 and max(web.stop, binary.stop) <= 65536):
        fail(
            f"ports must be in 1..65535: {brokers} broker(s) take web ports "
            f"{web.start}..{web.stop - 1} and binary ports {binary.start}..{binary.stop - 1} "
            f"({named['--port']}, {named['--broker-port']})"
        )
    if web.start < binary.stop and binary.start < web.stop:
        fail(
            f"the web ports {web.start}..{web.stop - 1} and the binary ports "
            f"{binary.start}..{binary.stop - 1} of {brokers} broker(s) overlap: "
            f"move {named['--port']} or {named['--broker-port']}"
        )
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        fail(f"--duration must be a positive number of seconds, not {duration}")
    try:
        parsed = parse_store_url(store)
    except InvalidStoreUrlError as exc:
        fail(str(exc))
    if parsed.scheme == "zk":
        fail(
            f"{named['--store']} is {store}: standalone runs on memory: or sqlite:PATH; run "
            "`ballast broker` for ZooKeeper"
        )
    if no_load and workload is not None:
        fail("--no-load and --workload exclude each other")
    try:
        demo = (
            None if no_load else (DemoWorkload.from_toml(workload) if workload else DemoWorkload())
        )
    except WorkloadError as exc:
        fail(str(exc))
    if settings.source("statsUpdateFrequencyInSecs") == "default":
        # The live console should follow real clients within seconds, not Pulsar's minute.
        settings = settings.with_overrides([("statsUpdateFrequencyInSecs", "5")], "standalone")
    options = StandaloneOptions(
        settings=settings,
        brokers=brokers,
        web_port=port,
        broker_port=broker_port,
        store_url=store,
        workload=demo,
        duration_s=duration,
        history=history_sink(settings),
    )
    console = output_console()
    try:
        summary = asyncio.run(run_standalone(options, console))
    except OSError as exc:
        fail(f"cannot start: {exc}", code=1)
    except ClusterMismatchError as exc:
        fail(str(exc))
    except (MetadataError, NoLeaderError, SetupRefusedError) as exc:
        fail(str(exc), code=1)
    console.print(summary_text(summary))
