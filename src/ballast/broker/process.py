"""One broker per process (``ballast broker``): the real cluster mode. The broker runs on the
system clock against the configured store (ZooKeeper for a real cluster), serves the HTTP API,
talks to the other brokers over HTTP, reads its host's usage with psutil, and on SIGTERM or
SIGINT stops gracefully (its bundles move elsewhere first); a second signal stops it at once.
It serves Pulsar's binary protocol on ``brokerServicePort``, and its load reports carry the
traffic of the clients connected there.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal

from ballast.broker.binary.server import BinaryServer
from ballast.broker.host_usage import (
    BrokerCapacity,
    HostUsageProvider,
    ModelledHostUsage,
    PsutilHostUsage,
)
from ballast.broker.http.server import ApiServer
from ballast.broker.http.transport import HttpTransport
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import BrokerNode
from ballast.broker.traffic import MeasuredTraffic
from ballast.clock import SystemClock
from ballast.controller.history import HistorySink
from ballast.coordination.cluster_name import claim_cluster
from ballast.metadata.factory import MetadataStores
from ballast.model.config import ReportConfig, Settings
from ballast.tasks import cancel_and_wait

log = logging.getLogger(__name__)


def identity_of(settings: Settings) -> BrokerIdentity:
    return BrokerIdentity(
        settings.get_str("advertisedAddress"),
        settings.get_int("webServicePort"),
        settings.get_int("brokerServicePort"),
    )


async def run_broker(
    settings: Settings, *, host_usage: str = "psutil", history: HistorySink | None = None
) -> None:
    """Run one broker until a signal asks it to stop. ``history``: where it records the load
    history while it leads."""
    clock = SystemClock()
    identity = identity_of(settings)
    stop = asyncio.Event()
    hurry = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            hurry.set()
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    # Made first, so that its first CPU measurement spans the connecting too.
    usage: HostUsageProvider
    if host_usage == "model":
        usage = ModelledHostUsage(BrokerCapacity())
    else:
        usage = PsutilHostUsage(
            clock,
            nic_speed_override_gbps=ReportConfig.from_settings(settings).nic_speed_override_gbps,
        )
    url = settings.get_str("metadataStoreUrl")
    log.info("broker %s connecting to the metadata store %s", identity.broker_id, url)
    stores = MetadataStores(clock)
    connecting = asyncio.ensure_future(
        stores.connect(
            url, session_timeout_s=settings.get_int("metadataStoreSessionTimeoutMillis") / 1000
        )
    )
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([connecting, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not connecting.done():  # asked to stop before the store answered
        log.info("broker %s stopped before it connected", identity.broker_id)
        await cancel_and_wait(connecting)
        stores.close()
        return
    store = connecting.result()
    try:
        await claim_cluster(store, settings.get_str("clusterName"))
    except BaseException:
        await store.close()
        stores.close()
        raise
    transport = HttpTransport()
    traffic = MeasuredTraffic(clock, settings.get_int("statsUpdateFrequencyInSecs"))
    node = BrokerNode(
        identity,
        store,
        settings,
        clock,
        transport,
        traffic,
        usage,
        random.Random(),
        history=history,
    )
    binary = BinaryServer.for_node(
        node, settings.get_str("bindAddress"), identity.broker_port, traffic
    )
    server = ApiServer(
        node, settings.get_str("bindAddress"), identity.web_port, clients=binary.topics
    )
    await server.start()
    await binary.start()
    if isinstance(usage, PsutilHostUsage):
        await usage.warm_up()
    await node.start()
    log.info(
        "broker %s serving on %s and %s",
        identity.broker_id,
        identity.web_service_url,
        identity.pulsar_service_url,
    )
    await stop.wait()
    log.info("broker %s stopping (a second signal stops it at once)", identity.broker_id)
    graceful = asyncio.ensure_future(node.stop(graceful=True))
    hurried = asyncio.ensure_future(hurry.wait())
    await asyncio.wait([graceful, hurried], return_when=asyncio.FIRST_COMPLETED)
    if not graceful.done():
        graceful.cancel()
        await node.kill()
    hurried.cancel()
    await binary.stop()
    await server.stop()
    await transport.close()
    await store.close()
    stores.close()
