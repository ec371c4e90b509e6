"""Taking a broker's heartbeat bundle back after a session loss. Every broker owns the one
bundle of its heartbeat namespace (``pulsar/<broker>``); no leader places it, so a broker that
lost it with its session must take it back itself. Its own record of the lost session is
replaced at once (``BundleOwnership``); a record of another session that the broker could not
replace (one that changed meanwhile) is waited out here, however long it stays."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from ballast.clock import Clock
from ballast.coordination.ownership import Owner
from ballast.metadata.store import ConnectionState, MetadataError, MetadataStore
from ballast.model.bundles import BundleName
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)

RETRY_S = 1.0
"""How often the broker tries again while another session's record holds the bundle."""


class _Broker(Protocol):
    broker_id: str
    store: MetadataStore
    clock: Clock
    stopped: bool

    async def acquire(self, bundle: BundleName, load_topics: bool = True) -> Owner: ...


class HeartbeatReclaim:
    """Tries to own ``bundle`` again, every :data:`RETRY_S`, until it is the broker's (its
    health check fails until then) or the broker stops."""

    def __init__(self, broker: _Broker, bundle: BundleName) -> None:
        self._broker = broker
        self._bundle = bundle
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin trying (once at a time)."""
        if self._task is None or self._task.done():
            self._task = spawn(f"heartbeat-{self._broker.broker_id}", self._reclaim())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def _reclaim(self) -> None:
        broker = self._broker
        while not broker.stopped:
            await broker.clock.sleep(RETRY_S)
            if broker.stopped or broker.store.state is not ConnectionState.CONNECTED:
                continue
            try:
                owner = await broker.acquire(self._bundle, False)
            except MetadataError:  # the connection went again: the next round tries
                continue
            if owner.session == broker.store.session_id:
                log.info("%s serves its heartbeat bundle again", broker.broker_id)
                return
