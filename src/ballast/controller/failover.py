"""Placing the bundles of brokers that died: the leader's side of failover.

A broker that leaves or bounces (a new session) loses its bundles with its session; the leader
places them at once rather than at their next lookup. A dead leader's bundles are known only
from its last load report, which every broker saw. A bundle no broker could take (every broker
was gone at that moment, as when the whole cluster lost its store for longer than a session)
is placed again when a broker joins, instead of waiting for a lookup.

Concurrency contract: called from the controller's event task.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ballast.controller.event_types import AdoptOrphans, OwnershipChanged
from ballast.controller.loading import scan_owners
from ballast.model.bundles import BundleName
from ballast.model.codec import ModelError
from ballast.model.loaddata import LocalBrokerData

if TYPE_CHECKING:
    from ballast.controller.controller import Controller

log = logging.getLogger(__name__)


class Failover:
    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self._adopted_versions: set[tuple[str, int]] = set()
        self._unplaced: dict[str, str] = {}  # bundle → why it needed a broker

    def broker_gone(self, broker: str, *, left: bool) -> None:
        """``broker`` left (``left``) or bounced: place the bundles the image says it held, and
        for one that left, those of its last report nobody owns."""
        image = self.c.image
        orphans = [b for b in image.bundles_owned_by(broker) if b not in image.moving]
        for bundle in orphans:
            image.drop_owner(bundle)
        for bundle in orphans:
            self.assign(BundleName.parse(bundle), f"its broker {broker} left")
        if left:
            self._adopt_bundles_of(broker)

    def broker_joined(self) -> None:
        """Place again the bundles no broker could take, that are still unowned."""
        waiting, self._unplaced = self._unplaced, {}
        for bundle, why in sorted(waiting.items()):
            parsed = BundleName.parse(bundle)
            if self._unowned(bundle, parsed):
                self.assign(parsed, why)

    async def adopt_orphans(self, _event: AdoptOrphans) -> None:
        """A new leader's first look: the bundles of brokers that departed before it ran."""
        live = self.c.registry.brokers()
        for broker in sorted(self.c.registry.departed):
            if broker not in live:
                self._adopt_bundles_of(broker)

    async def ownership_changed(self, event: OwnershipChanged) -> None:
        """A namespace's ownership records changed: the image follows them, and a bundle whose
        owner vanished with its broker is placed."""
        namespace = event.namespace
        image = self.c.image
        if namespace not in image.namespaces:
            return
        lost = image.set_owners(namespace, await scan_owners(self.c.store, namespace))
        registered = self.c.registry.brokers()
        for bundle, previous in lost.items():
            if previous not in registered and bundle not in image.moving:
                parsed = BundleName.parse(bundle)
                if image.bundle_exists(parsed):
                    self.assign(parsed, f"its owner {previous} is gone")

    def assign(self, bundle: BundleName, why: str) -> str | None:
        """Place ``bundle``: the broker it goes to; None when no broker can take it, which
        is remembered for the next join."""
        started = self.c.start_assign(bundle, why, origin="failover")
        if started is None:
            log.warning("cannot place %s (%s): no broker", bundle, why)
            self._unplaced[str(bundle)] = why
            return None
        return started[0]

    def _unowned(self, bundle: str, parsed: BundleName) -> bool:
        image = self.c.image
        return (
            bundle not in image.owners
            and bundle not in image.moving
            and image.bundle_exists(parsed)
            and not parsed.namespace.is_heartbeat
        )

    def _adopt_bundles_of(self, broker: str) -> None:
        """Place the bundles a departed broker held, from its last report, that nobody owns:
        its ownership records vanished with its session (the only trace left when it was the
        leader, whose image died with it)."""
        entry = self.c.registry.departed.get(broker)
        if entry is None or (broker, entry.version) in self._adopted_versions:
            return
        self._adopted_versions.add((broker, entry.version))
        try:
            report = LocalBrokerData.from_json(entry.data)
        except ModelError:
            return
        for bundle in sorted(report.bundles | report.last_stats.keys()):
            parsed = BundleName.parse(bundle)
            if self._unowned(bundle, parsed):
                self.assign(parsed, f"it was held by {broker}, which is gone")
