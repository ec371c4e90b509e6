"""The load-data model: what brokers report and what the leader derives from it, in Pulsar's
stored JSON shapes (``/loadbalance/...``)."""

from ballast.model.loaddata.averages import (
    AVERAGE_ROUNDING_SLACK,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BundleData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    average_ceiling,
)
from ballast.model.loaddata.leader import BrokerData, LoadData
from ballast.model.loaddata.local import (
    AdvertisedListener,
    LocalBrokerData,
    ReportDecision,
    largest_change,
    need_broker_data_update,
    percent_change,
)
from ballast.model.loaddata.stats import (
    DEFAULT_BUNDLE_STATS,
    DEFAULT_MESSAGE_RATE,
    DEFAULT_MESSAGE_THROUGHPUT,
    NamespaceBundleStats,
    total_of,
)
from ballast.model.loaddata.usage import (
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    f32,
)

__all__ = [
    "AVERAGE_ROUNDING_SLACK",
    "DEFAULT_BUNDLE_STATS",
    "DEFAULT_MESSAGE_RATE",
    "DEFAULT_MESSAGE_THROUGHPUT",
    "NUM_LONG_SAMPLES",
    "NUM_SHORT_SAMPLES",
    "AdvertisedListener",
    "BrokerData",
    "BundleData",
    "LoadData",
    "LocalBrokerData",
    "NamespaceBundleStats",
    "ReportDecision",
    "ResourceUsage",
    "ResourceWeights",
    "SystemResourceUsage",
    "TimeAverageBrokerData",
    "TimeAverageMessageData",
    "average_ceiling",
    "f32",
    "largest_change",
    "need_broker_data_update",
    "percent_change",
    "total_of",
]
