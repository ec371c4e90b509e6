"""The leader's view of cluster load: Pulsar's ``BrokerData`` (a broker's report, its time
averages and the bundles preallocated to it) and ``LoadData`` (all brokers, all bundles, and
recently unloaded bundles)."""

from __future__ import annotations

import msgspec

from ballast.model.bundles import BundleName
from ballast.model.loaddata.averages import BundleData, TimeAverageBrokerData
from ballast.model.loaddata.local import LocalBrokerData


class BrokerData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One broker as the leader sees it."""

    local_data: LocalBrokerData = LocalBrokerData()
    time_average_data: TimeAverageBrokerData = TimeAverageBrokerData()
    preallocated_bundle_data: dict[str, BundleData] = {}


class LoadData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """All the leader knows about load: brokers, bundle averages, and when each recently
    unloaded bundle was unloaded (epoch ms, for the grace period)."""

    broker_data: dict[str, BrokerData] = {}
    bundle_data: dict[str, BundleData] = {}
    recently_unloaded_bundles: dict[str, int] = {}

    def bundle_data_for_load_shedding(self) -> dict[str, BundleData]:
        """Pulsar's ``getBundleDataForLoadShedding``: bundle data without the bundles of
        system-service namespaces (``pulsar/system``, heartbeat and SLA-monitor namespaces)."""
        return {
            name: data
            for name, data in self.bundle_data.items()
            if not _is_system_service_bundle(name)
        }


def _is_system_service_bundle(name: str) -> bool:
    try:
        return BundleName.parse(name).namespace.is_system_service
    except ValueError:
        return False
