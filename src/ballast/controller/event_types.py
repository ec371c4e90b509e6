"""What the controller's event queue carries: one event type per kind of work the leader
serialises (see :mod:`ballast.controller.controller`), and the error placement raises when no
broker can take a bundle."""

from __future__ import annotations

from dataclasses import dataclass

from ballast.controller.events import ControllerEvent, UnavailableError
from ballast.controller.requests import AnyRequest
from ballast.coordination.registry import MembershipChange
from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName


class NoBrokerError(UnavailableError):
    """Placement found no broker for the bundle."""


@dataclass(frozen=True)
class UpdateAll(ControllerEvent):
    name = "update-all"


@dataclass(frozen=True)
class AdoptOrphans(ControllerEvent):
    """A new leader places the bundles that brokers gone before it took over held (learned
    from their last load reports, which every broker saw)."""

    name = "adopt-orphans"


@dataclass(frozen=True)
class DrainingChanged(ControllerEvent):
    """A broker recorded that it is shutting down (``/loadbalance/draining``)."""

    name = "draining-changed"


@dataclass(frozen=True)
class MembershipEvent(ControllerEvent):
    name = "membership"
    change: MembershipChange


@dataclass(frozen=True)
class OwnershipChanged(ControllerEvent):
    name = "ownership-changed"
    namespace: NamespaceName


@dataclass(frozen=True)
class SheddingTick(ControllerEvent):
    name = "shedding"


@dataclass(frozen=True)
class WriteLoadData(ControllerEvent):
    name = "write-load-data"


@dataclass(frozen=True)
class PlaceBundle(ControllerEvent):
    name = "place"
    bundle: BundleName


@dataclass(frozen=True)
class RequestEvent(ControllerEvent):
    name = "request"
    request: AnyRequest
