"""The leader's image of the cluster: the brokers and their reports, the bundles' time
averages, preallocations, recently unloaded bundles and brokers (Pulsar's ``LoadData`` and the
extensible manager's additions), the namespaces' bundles and policies, and who owns each bundle.

Only the controller's event task changes it. It turns into the frozen
:class:`~ballast.balance.snapshot.LoadSnapshot` every balancing decision reads; taking one is
O(brokers) while only preallocations changed since the last (each broker's ``BrokerData`` is
kept until its report, averages or preallocations change, and the bundle data is a view of its
columns, :mod:`ballast.model.loaddata.table`), so placing thousands of bundles in a row stays
cheap.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.metadata import paths
from ballast.metadata.store import SetValue
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageBrokerData,
)
from ballast.model.loaddata.table import BundleAverageTable
from ballast.model.naming import NamespaceName
from ballast.model.policies import IsolationPolicies


@dataclass(slots=True)
class BrokerView:
    """A live broker as the leader sees it. Change ``preallocated`` only through
    :meth:`preallocate` and :meth:`drop_preallocated` (they keep :meth:`broker_data` right)."""

    report: LocalBrokerData
    session: int | None
    time_average: TimeAverageBrokerData = field(default_factory=TimeAverageBrokerData)
    preallocated: dict[str, BundleData] = field(default_factory=dict)
    draining: bool = False
    _data: BrokerData | None = field(default=None, repr=False, compare=False)

    def preallocate(self, bundle: str, data: BundleData) -> None:
        self.preallocated[bundle] = data
        self._data = None

    def drop_preallocated(self, bundles: Iterable[str]) -> None:
        for bundle in bundles:
            if self.preallocated.pop(bundle, None) is not None:
                self._data = None

    def broker_data(self) -> BrokerData:
        """Pulsar's ``BrokerData`` of this broker; the same object until something in it
        changes."""
        data = self._data
        if (
            data is None
            or data.local_data is not self.report
            or data.time_average_data is not self.time_average
        ):
            data = self._data = BrokerData(
                local_data=self.report,
                time_average_data=self.time_average,
                preallocated_bundle_data=dict(self.preallocated),
            )
        return data


@dataclass(slots=True)
class ClusterImage:
    """``bundle_data`` is read-only to callers: it changes through :meth:`update_all`,
    :meth:`preallocate`, :meth:`forget_bundle` or by assigning a whole new mapping."""

    brokers: dict[str, BrokerView] = field(default_factory=dict)
    _averages: BundleAverageTable = field(default_factory=BundleAverageTable)
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)
    recently_unloaded_brokers: dict[str, int] = field(default_factory=dict)
    namespaces: dict[NamespaceName, NamespaceBundles] = field(default_factory=dict)
    anti_affinity: dict[str, str] = field(default_factory=dict)
    isolation: IsolationPolicies = field(default_factory=IsolationPolicies)
    failure_domains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # bundle → broker id, as the ownership records say; read-only to callers: it changes
    # through set_owner, drop_owner and set_owners, which keep the indexes below in step.
    owners: dict[str, str] = field(default_factory=dict)
    _owned_in: dict[str, set[str]] = field(default_factory=dict)  # namespace → bundles
    _owned_by: dict[str, set[str]] = field(default_factory=dict)  # broker → bundles
    moving: set[str] = field(default_factory=set)  # bundles with a move in flight
    _last_snapshot: LoadSnapshot | None = None

    @property
    def bundle_data(self) -> Mapping[str, BundleData]:
        """The bundles' time averages as they are now (a view that later changes leave as
        it is)."""
        return self._averages.view()

    @bundle_data.setter
    def bundle_data(self, data: Mapping[str, BundleData]) -> None:
        self._averages = BundleAverageTable(data)

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
                if view.session != session:  # it restarted: a drain of the last run is over
                    view.draining = False
                view.report, view.session = report, session
        views = list(self.brokers.values())
        sums = self._averages.fold([view.report.last_stats for view in views])
        for view, time_average in zip(views, sums, strict=True):
            if view.preallocated:  # reaped once the broker reports them (no set per update)
                report = view.report
                view.drop_preallocated(
                    [b for b in view.preallocated if b in report.bundles or b in report.last_stats]
                )
            view.time_average = time_average
        return gone

    def preallocate(self, bundle: str, broker: str, data: BundleData, new: bool) -> None:
        # interned as the names of decoded reports are: a key of the bundle data that is the
        # reports' very string matches their lookups without comparing characters
        bundle = sys.intern(bundle)
        view = self.brokers.get(broker)
        if view is not None:
            view.preallocate(bundle, data)
        if new and bundle not in self._averages:
            self._averages.add(bundle, data)

    def drop_preallocations(self, bundle: str | None = None) -> None:
        """Drop ``bundle``'s preallocations (released: its next placement must not follow
        an earlier one), or with no bundle those of every bundle no broker owns (the policies
        placement obeys changed). Placement's first step sends a preallocated bundle back to
        its broker unchecked, and a preallocation otherwise lasts until that broker reports
        the bundle: an unloaded bundle went back past an isolation policy set since."""
        for view in self.brokers.values():
            if bundle is not None:
                view.drop_preallocated([bundle])
            elif view.preallocated:
                view.drop_preallocated([b for b in view.preallocated if b not in self.owners])

    def forget_bundle(self, bundle: str) -> None:
        """A bundle that no longer exists (split): drop its data everywhere."""
        self._averages.remove(bundle)
        self.drop_owner(bundle)
        for view in self.brokers.values():
            view.drop_preallocated([bundle])

    def forget_namespace(self, namespace: NamespaceName) -> None:
        """A namespace deleted: drop its bundles' time averages and every broker's
        preallocations of them. A preallocation is otherwise dropped only once its broker
        reports the bundle, which never happens for a bundle deleted first: each deleted
        namespace left its bundles in the placement's figures for good (700 after 280
        namespaces created and deleted, every placement slower by the same)."""
        prefix = f"{namespace}/"
        for bundle in [b for b in self._averages.view() if b.startswith(prefix)]:
            self._averages.remove(bundle)
        for view in self.brokers.values():
            view.drop_preallocated([b for b in view.preallocated if b.startswith(prefix)])

    # -- ownership --------------------------------------------------------------------------

    def set_owner(self, bundle: str, owner: str) -> None:
        previous = self.owners.get(bundle)
        if previous is not None:
            self._owned_by[previous].discard(bundle)
        else:
            self._owned_in.setdefault(bundle.rpartition("/")[0], set()).add(bundle)
        self.owners[bundle] = owner
        self._owned_by.setdefault(owner, set()).add(bundle)

    def drop_owner(self, bundle: str) -> str | None:
        """Forget ``bundle``'s owner; returns who it was."""
        owner = self.owners.pop(bundle, None)
        if owner is not None:
            self._owned_in[bundle.rpartition("/")[0]].discard(bundle)
            self._owned_by[owner].discard(bundle)
        return owner

    def record_owner(self, bundle: str, owner: str | None) -> None:
        """``bundle`` is owned by ``owner`` now, or by nobody (None)."""
        if owner is None:
            self.drop_owner(bundle)
        else:
            self.set_owner(bundle, owner)

    def set_owners(self, namespace: NamespaceName, owners: Mapping[str, str]) -> dict[str, str]:
        """Replace the owners of ``namespace``'s bundles; returns the bundles that lost theirs,
        with the broker each had. Indexed by namespace: a cluster of tens of thousands of
        bundles rescans one namespace's records at a time, often."""
        held = self._owned_in.get(str(namespace), set())
        lost: dict[str, str] = {}
        for bundle in sorted(held - owners.keys()):
            previous = self.drop_owner(bundle)
            if previous is not None:
                lost[bundle] = previous
        for bundle, owner in owners.items():
            if self.owners.get(bundle) != owner:
                self.set_owner(bundle, owner)
        return lost

    def bundles_owned_by(self, broker: str) -> list[str]:
        return sorted(self._owned_by.get(broker, ()))

    def load_data_records(self, top: int, excluded: Collection[str]) -> list[SetValue]:
        """The records of Pulsar's ``writeBundleDataOnZooKeeper``: every broker's time
        averages, and the data of the ``top`` × brokers busiest bundles (``top`` <= 0: all)
        outside the ``excluded`` namespaces."""
        ops = [
            SetValue(paths.broker_time_average(broker), view.time_average.to_json())
            for broker, view in sorted(self.brokers.items())
        ]
        averages = self._averages.view()
        busiest = averages.by_short_term_throughput()
        if top > 0:
            busiest = busiest[: top * max(len(self.brokers), 1)]
        ops.extend(
            SetValue(paths.bundle_data(BundleName.parse(bundle)), averages[bundle].to_json())
            for bundle in busiest
            if bundle.rpartition("/")[0] not in excluded
        )
        return ops

    # -- the snapshot -----------------------------------------------------------------------

    def placeable_brokers(self) -> list[str]:
        return [b for b, view in self.brokers.items() if not view.draining]

    def snapshot(self, *, exclude: Iterable[str] = ()) -> LoadSnapshot:
        """The frozen view the balancing strategies read (draining brokers left out)."""
        excluded = set(exclude)
        brokers = {
            broker: view.broker_data()
            for broker, view in sorted(self.brokers.items())
            if not view.draining and broker not in excluded
        }
        domains = {
            broker: domain for domain, members in self.failure_domains.items() for broker in members
        }
        bundles = self._averages.view()
        last = self._last_snapshot
        if last is None:
            last = LoadSnapshot(brokers=MappingProxyType({}))
        # Evolving the last snapshot shares what it derived for brokers that did not change.
        snapshot = last.evolve(
            brokers=MappingProxyType(brokers),
            bundles=bundles,
            recently_unloaded_bundles=MappingProxyType(dict(self.recently_unloaded_bundles)),
            recently_unloaded_brokers=MappingProxyType(dict(self.recently_unloaded_brokers)),
            namespaces=MappingProxyType({str(ns): b for ns, b in self.namespaces.items()}),
            policies=Policies(
                isolation=self.isolation,
                anti_affinity_groups=MappingProxyType(dict(self.anti_affinity)),
                broker_domains=MappingProxyType(domains),
            ),
        )
        self._last_snapshot = snapshot
        return snapshot

    def load_data(self) -> LoadData:
        """The image as Pulsar's ``LoadData`` (every reporting broker, draining ones too), for
        the load history. The values are immutable and the mappings copies, so another thread
        may read it while the image moves on."""
        return LoadData(
            broker_data={b: view.broker_data() for b, view in sorted(self.brokers.items())},
            bundle_data=dict(self._averages.view()),
            recently_unloaded_bundles=dict(self.recently_unloaded_bundles),
        )

    def bundle_exists(self, bundle: BundleName) -> bool:
        bundles = self.namespaces.get(bundle.namespace)
        return bundles is not None and bundles.contains(bundle.range)
