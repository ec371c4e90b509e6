"""The leader's image of the cluster: the brokers and their reports, the bundles' time
averages, preallocations, recently unloaded bundles and brokers (Pulsar's ``LoadData`` and the
extensible manager's additions), the namespaces' bundles and policies, and who owns each bundle.

Only the controller's event task changes it. It turns into the frozen
:class:`~ballast.balance.snapshot.LoadSnapshot` every balancing decision reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.loaddata import (
    BrokerData,
    BundleData,
    LocalBrokerData,
    TimeAverageBrokerData,
)
from ballast.model.naming import NamespaceName
from ballast.model.policies import IsolationPolicies


@dataclass(slots=True)
class BrokerView:
    """A live broker as the leader sees it."""

    report: LocalBrokerData
    session: int | None
    time_average: TimeAverageBrokerData = field(default_factory=TimeAverageBrokerData)
    preallocated: dict[str, BundleData] = field(default_factory=dict)
    draining: bool = False


@dataclass(slots=True)
class ClusterImage:
    brokers: dict[str, BrokerView] = field(default_factory=dict)
    bundle_data: dict[str, BundleData] = field(default_factory=dict)
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)
    recently_unloaded_brokers: dict[str, int] = field(default_factory=dict)
    namespaces: dict[NamespaceName, NamespaceBundles] = field(default_factory=dict)
    anti_affinity: dict[str, str] = field(default_factory=dict)
    isolation: IsolationPolicies = field(default_factory=IsolationPolicies)
    failure_domains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # bundle → broker id (records)
    moving: set[str] = field(default_factory=set)  # bundles with a move in flight

    # -- reports (Pulsar's updateAll) -------------------------------------------------------

    def update_all(self, reports: Mapping[str, tuple[LocalBrokerData, int | None]]) -> list[str]:
        """Take every live broker's current report: drop brokers gone, add new ones, update
        each reported bundle's time averages, reap preallocations the broker now reports,
        recompute broker time averages. Returns the brokers dropped."""
        gone = [b for b in self.brokers if b not in reports]
        for broker in gone:
            del self.brokers[broker]
        for broker, (report, session) in reports.items():
            view = self.brokers.get(broker)
            if view is None:
                self.brokers[broker] = BrokerView(report, session)
            else:
                view.report, view.session = report, session
        for view in self.brokers.values():
            for bundle, stats in view.report.last_stats.items():
                known = self.bundle_data.get(bundle)
                self.bundle_data[bundle] = (known or BundleData.new_default()).updated(stats)
        for view in self.brokers.values():
            reported = view.report.last_stats.keys() | view.report.bundles
            for bundle in [b for b in view.preallocated if b in reported]:
                del view.preallocated[bundle]
            view.time_average = TimeAverageBrokerData.from_bundles(
                view.report.last_stats.keys(), self.bundle_data
            )
        return gone

    def preallocate(self, bundle: str, broker: str, data: BundleData, new: bool) -> None:
        view = self.brokers.get(broker)
        if view is not None:
            view.preallocated[bundle] = data
        if new:
            self.bundle_data.setdefault(bundle, data)

    def forget_bundle(self, bundle: str) -> None:
        """A bundle that no longer exists (split): drop its data everywhere."""
        self.bundle_data.pop(bundle, None)
        self.owners.pop(bundle, None)
        for view in self.brokers.values():
            view.preallocated.pop(bundle, None)

    # -- ownership --------------------------------------------------------------------------

    def set_owners(self, namespace: NamespaceName, owners: Mapping[str, str]) -> list[str]:
        """Replace the owners of ``namespace``'s bundles; returns bundles that lost theirs."""
        prefix = f"{namespace}/"
        lost = [
            b
            for b in self.owners
            if b.startswith(prefix) and b[len(prefix) :].count("/") == 0 and b not in owners
        ]
        for bundle in lost:
            del self.owners[bundle]
        self.owners.update(owners)
        return lost

    def bundles_owned_by(self, broker: str) -> list[str]:
        return sorted(b for b, owner in self.owners.items() if owner == broker)

    # -- the snapshot -----------------------------------------------------------------------

    def placeable_brokers(self) -> list[str]:
        return [b for b, view in self.brokers.items() if not view.draining]

    def snapshot(self, *, exclude: Iterable[str] = ()) -> LoadSnapshot:
        """The frozen view the balancing strategies read (draining brokers left out)."""
        excluded = set(exclude)
        brokers = {
            broker: BrokerData(
                local_data=view.report,
                time_average_data=view.time_average,
                preallocated_bundle_data=dict(view.preallocated),
            )
            for broker, view in sorted(self.brokers.items())
            if not view.draining and broker not in excluded
        }
        domains = {
            broker: domain for domain, members in self.failure_domains.items() for broker in members
        }
        return LoadSnapshot(
            brokers=MappingProxyType(brokers),
            bundles=MappingProxyType(dict(self.bundle_data)),
            recently_unloaded_bundles=MappingProxyType(dict(self.recently_unloaded_bundles)),
            recently_unloaded_brokers=MappingProxyType(dict(self.recently_unloaded_brokers)),
            namespaces=MappingProxyType({str(ns): b for ns, b in self.namespaces.items()}),
            policies=Policies(
                isolation=self.isolation,
                anti_affinity_groups=MappingProxyType(dict(self.anti_affinity)),
                broker_domains=MappingProxyType(domains),
            ),
        )

    def bundle_exists(self, bundle: BundleName) -> bool:
        bundles = self.namespaces.get(bundle.namespace)
        return bundles is not None and bundles.contains(bundle.range)
