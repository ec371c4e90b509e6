"""Every setting Ballast reads, under Pulsar's ``broker.conf`` key names, with Pulsar's
defaults and units. One table: the loader validates against it, ``ballast config show`` prints
it, and the component configs read from it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Kind(enum.Enum):
    BOOL = "boolean"
    INT = "integer"
    FLOAT = "number"
    STR = "string"
    LIST = "comma-separated list"
    OPTIONAL_FLOAT = "number or empty"


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration key. ``choices`` restrict a string; ``aliases`` map other accepted
    spellings (such as Pulsar's class names) to a choice."""

    key: str
    kind: Kind
    default: object
    unit: str
    doc: str
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    deprecated: str = ""


_IMPL = "org.apache.pulsar.broker.loadbalance.impl."
_EXT = "org.apache.pulsar.broker.loadbalance.extensions.scheduler."

SHEDDING_STRATEGIES = ("overload", "threshold", "uniform", "transfer", "ballast")
SHEDDING_ALIASES = {
    _IMPL + "OverloadShedder": "overload",
    _IMPL + "ThresholdShedder": "threshold",
    _IMPL + "UniformLoadShedder": "uniform",
    _EXT + "TransferShedder": "transfer",
    "OverloadShedder": "overload",
    "ThresholdShedder": "threshold",
    "UniformLoadShedder": "uniform",
    "TransferShedder": "transfer",
}
PLACEMENT_STRATEGIES = (
    "least_long_term_message_rate",
    "least_resource_usage_with_weight",
    "round_robin",
    "ballast",
)
PLACEMENT_ALIASES = {
    _IMPL + "LeastLongTermMessageRate": "least_long_term_message_rate",
    _IMPL + "LeastResourceUsageWithWeight": "least_resource_usage_with_weight",
    _IMPL + "RoundRobinBrokerSelector": "round_robin",
    "LeastLongTermMessageRate": "least_long_term_message_rate",
    "LeastResourceUsageWithWeight": "least_resource_usage_with_weight",
    "RoundRobinBrokerSelector": "round_robin",
}
SPLIT_ALGORITHM_NAMES = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
)

BOOL, INT, FLOAT, STR, LIST, OPT_FLOAT = (
    Kind.BOOL,
    Kind.INT,
    Kind.FLOAT,
    Kind.STR,
    Kind.LIST,
    Kind.OPTIONAL_FLOAT,
)

SETTINGS: tuple[Setting, ...] = (
    # -- load manager switches and strategies -----------------------------------------------
    Setting("loadBalancerEnabled", BOOL, True, "", "Run the load manager at all."),
    Setting("loadBalancerSheddingEnabled", BOOL, True, "", "Let the leader unload bundles."),
    Setting(
        "loadBalancerLoadSheddingStrategy",
        STR,
        "threshold",
        "",
        "Shedding strategy (Pulsar class names accepted).",
        choices=SHEDDING_STRATEGIES,
        aliases=SHEDDING_ALIASES,
    ),
    Setting(
        "loadBalancerLoadPlacementStrategy",
        STR,
        "least_long_term_message_rate",
        "",
        "Placement (broker scoring) strategy (Pulsar class names accepted).",
        choices=PLACEMENT_STRATEGIES,
        aliases=PLACEMENT_ALIASES,
    ),
    Setting(
        "loadManagerClassName",
        STR,
        _IMPL + "ModularLoadManagerImpl",
        "",
        "Load manager class a broker advertises; placement keeps brokers of one class.",
    ),
    # -- load reports -------------------------------------------------------------------------
    Setting(
        "loadBalancerReportUpdateThresholdPercentage",
        INT,
        10,
        "%",
        "Rewrite the report when a figure changed by more than this.",
        minimum=0,
    ),
    Setting(
        "loadBalancerReportUpdateMinIntervalMillis",
        INT,
        5000,
        "ms",
        "How often a broker checks whether to rewrite its report.",
        minimum=1,
    ),
    Setting(
        "loadBalancerReportUpdateMaxIntervalMinutes",
        INT,
        15,
        "min",
        "Rewrite the report at least this often.",
        minimum=0,
    ),
    Setting(
        "loadBalancerHostUsageCheckIntervalMinutes",
        INT,
        1,
        "min",
        "How often host usage (CPU, memory, NIC) is sampled.",
        minimum=1,
    ),
    Setting(
        "loadBalancerOverrideBrokerNicSpeedGbps",
        OPT_FLOAT,
        None,
        "Gbit/s",
        "NIC speed to assume instead of the one the system reports.",
        minimum=0,
    ),
    # -- resource weights ---------------------------------------------------------------------
    Setting(
        "loadBalancerCPUResourceWeight", FLOAT, 1.0, "", "Weight of CPU in the usage.", minimum=0
    ),
    Setting(
        "loadBalancerMemoryResourceWeight",
        FLOAT,
        0.0,
        "",
        "Weight of heap memory in the usage.",
        minimum=0,
        deprecated="heap usage follows garbage collection, not load",
    ),
    Setting(
        "loadBalancerDirectMemoryResourceWeight",
        FLOAT,
        0.0,
        "",
        "Weight of direct memory in the usage.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBandwidthInResourceWeight",
        FLOAT,
        1.0,
        "",
        "Weight of inbound NIC usage in the usage.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBandwidthOutResourceWeight",
        FLOAT,
        1.0,
        "",
        "Weight of outbound NIC usage in the usage.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBandwithInResourceWeight",
        FLOAT,
        1.0,
        "",
        "Pulsar's old misspelling; honoured when set to a non-default value.",
        minimum=0,
        deprecated="use loadBalancerBandwidthInResourceWeight",
    ),
    Setting(
        "loadBalancerBandwithOutResourceWeight",
        FLOAT,
        1.0,
        "",
        "Pulsar's old misspelling; honoured when set to a non-default value.",
        minimum=0,
        deprecated="use loadBalancerBandwidthOutResourceWeight",
    ),
    Setting(
        "loadBalancerHistoryResourcePercentage",
        FLOAT,
        0.9,
        "fraction",
        "Weight of history in moving usage averages (ThresholdShedder, TransferShedder).",
        minimum=0,
    ),
    # -- shedding -----------------------------------------------------------------------------
    Setting(
        "loadBalancerSheddingIntervalMinutes",
        INT,
        1,
        "min",
        "How often the leader runs the shedding strategy.",
        minimum=1,
    ),
    Setting(
        "loadBalancerSheddingGracePeriodMinutes",
        INT,
        30,
        "min",
        "An unloaded bundle is not unloaded again within this time.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBrokerOverloadedThresholdPercentage",
        INT,
        85,
        "%",
        "A broker above this usage is overloaded.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBrokerThresholdShedderPercentage",
        INT,
        10,
        "percentage points",
        "ThresholdShedder: shed brokers this far above the average usage.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBundleUnloadMinThroughputThreshold",
        FLOAT,
        10.0,
        "MiB/s",
        "ThresholdShedder: do not shed less traffic than this from a broker.",
        minimum=0,
    ),
    Setting(
        "lowerBoundarySheddingEnabled",
        BOOL,
        False,
        "",
        "ThresholdShedder: also shed to brokers far below the average.",
    ),
    Setting(
        "loadBalancerMsgRateDifferenceShedderThreshold",
        FLOAT,
        50.0,
        "%",
        "UniformLoadShedder: message-rate gap between brokers that triggers shedding "
        "(<= 0 disables).",
    ),
    Setting(
        "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
        FLOAT,
        4.0,
        "x",
        "UniformLoadShedder: max/min throughput ratio that triggers shedding (<= 0 disables).",
    ),
    Setting(
        "maxUnloadPercentage",
        FLOAT,
        0.2,
        "fraction",
        "UniformLoadShedder: share of the gap between brokers to move per run.",
        minimum=0,
    ),
    Setting(
        "minUnloadMessage",
        INT,
        1000,
        "msg/s",
        "UniformLoadShedder: move at least this much message rate or nothing.",
        minimum=0,
    ),
    Setting(
        "minUnloadMessageThroughput",
        INT,
        1048576,
        "bytes/s",
        "UniformLoadShedder: move at least this much throughput or nothing.",
        minimum=0,
    ),
    Setting(
        "maxUnloadBundleNumPerShedding",
        INT,
        -1,
        "bundles",
        "UniformLoadShedder: cap on bundles per run (-1 = no cap).",
        minimum=-1,
    ),
    Setting(
        "loadBalancerSheddingExcludedNamespaces",
        LIST,
        (),
        "",
        "Namespaces never shed (placed round-robin instead).",
    ),
    # -- TransferShedder (Pulsar's extensible load manager) -------------------------------------
    Setting(
        "loadBalancerBrokerLoadTargetStd",
        FLOAT,
        0.25,
        "",
        "TransferShedder: shed while the std-dev of broker load is above this.",
        minimum=0,
    ),
    Setting(
        "loadBalancerSheddingConditionHitCountThreshold",
        INT,
        3,
        "runs",
        "TransferShedder: runs the condition must hold before shedding.",
        minimum=0,
    ),
    Setting(
        "loadBalancerTransferEnabled",
        BOOL,
        True,
        "",
        "TransferShedder: move bundles straight to a chosen broker (else unload).",
    ),
    Setting(
        "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
        INT,
        3,
        "brokers",
        "TransferShedder: source brokers per run.",
        minimum=1,
    ),
    Setting(
        "loadBalanceSheddingDelayInSeconds",
        INT,
        180,
        "s",
        "TransferShedder: cool-down after a broker was shed or received load.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBrokerLoadDataTTLInSeconds",
        INT,
        1800,
        "s",
        "TransferShedder: ignore load data older than this.",
        minimum=1,
    ),
    Setting(
        "loadBalancerMaxNumberOfBundlesInBundleLoadReport",
        INT,
        10,
        "bundles",
        "Top bundles per broker kept in bundle-data writes and TransferShedder input (<= 0 = all).",
    ),
    Setting(
        "loadBalancerSheddingBundlesWithPoliciesEnabled",
        BOOL,
        False,
        "",
        "TransferShedder: may move bundles of namespaces with isolation/anti-affinity policies.",
    ),
    Setting(
        "loadBalancerDebugModeEnabled",
        BOOL,
        False,
        "",
        "TransferShedder: log every figure (also counts swapped traffic, as Pulsar does).",
    ),
    # -- Ballast's own strategy (shedding and placement "ballast") -----------------------------
    Setting(
        "loadBalancerBallastTargetStd",
        FLOAT,
        0.02,
        "",
        "ballast: once balancing, move load until the predicted std-dev of broker load is at "
        "or below this.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastTriggerStd",
        FLOAT,
        0.045,
        "",
        "ballast: start balancing when the std-dev of broker load is above this (hysteresis "
        "with the target).",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastTargetMaxOverMean",
        FLOAT,
        1.04,
        "",
        "ballast: once balancing, also move load until the heaviest broker is within this "
        "multiple of the mean load.",
        minimum=1,
    ),
    Setting(
        "loadBalancerBallastTriggerMaxOverMean",
        FLOAT,
        1.08,
        "",
        "ballast: also start balancing when the heaviest broker is above this multiple of the "
        "mean load (and above it by more than the target std-dev).",
        minimum=1,
    ),
    Setting(
        "loadBalancerBallastHitCountThreshold",
        INT,
        1,
        "runs",
        "ballast: runs above the trigger before acting (idle or overloaded brokers: at once).",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastIdleLoadFraction",
        FLOAT,
        0.25,
        "",
        "ballast: a broker below this fraction of the mean load is idle and gets load at once.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastMaxLoadMovedPerBroker",
        FLOAT,
        0.3,
        "",
        "ballast: load (fraction of a broker) one broker may send or receive per run.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastMaxMovesPerCycle",
        INT,
        500,
        "bundles",
        "ballast: bundles moved per run (<= 0 = no cap).",
    ),
    Setting(
        "loadBalancerBallastMinImprovement",
        FLOAT,
        0.005,
        "",
        "ballast: a move must lower the larger of the two brokers' loads by at least this.",
        minimum=0,
    ),
    # -- placement ----------------------------------------------------------------------------
    Setting(
        "loadBalancerDistributeBundlesEvenlyEnabled",
        BOOL,
        True,
        "",
        "Placement prefers brokers with the fewest bundles of the namespace.",
    ),
    Setting(
        "loadBalancerBrokerMaxTopics",
        INT,
        50000,
        "topics",
        "Placement avoids brokers with more topics than this.",
        minimum=0,
    ),
    Setting(
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
        INT,
        10,
        "percentage points",
        "LeastResourceUsageWithWeight: brokers this far below average are preferred.",
        minimum=0,
    ),
    Setting(
        "preferLaterVersions", BOOL, False, "", "Placement prefers brokers on the newest version."
    ),
    Setting(
        "failureDomainsEnabled",
        BOOL,
        False,
        "",
        "Anti-affinity spreads namespaces over failure domains, not just brokers.",
    ),
    # -- bundle split -------------------------------------------------------------------------
    Setting("loadBalancerAutoBundleSplitEnabled", BOOL, True, "", "Split hot bundles."),
    Setting(
        "loadBalancerAutoUnloadSplitBundlesEnabled",
        BOOL,
        True,
        "",
        "Unload both halves after an automatic split.",
    ),
    Setting(
        "loadBalancerNamespaceBundleMaxTopics",
        INT,
        1000,
        "topics",
        "Split a bundle with more topics than this.",
        minimum=0,
    ),
    Setting(
        "loadBalancerNamespaceBundleMaxSessions",
        INT,
        1000,
        "sessions",
        "Split a bundle with more producers + consumers (<= 0 disables).",
    ),
    Setting(
        "loadBalancerNamespaceBundleMaxMsgRate",
        INT,
        30000,
        "msg/s",
        "Split a bundle with a higher long-term message rate.",
        minimum=0,
    ),
    Setting(
        "loadBalancerNamespaceBundleMaxBandwidthMbytes",
        INT,
        100,
        "MiB/s",
        "Split a bundle with a higher long-term throughput.",
        minimum=0,
    ),
    Setting(
        "loadBalancerNamespaceMaximumBundles",
        INT,
        128,
        "bundles",
        "Never split a namespace beyond this many bundles.",
        minimum=1,
    ),
    Setting(
        "flowOrQpsDifferenceThresholdPercentage",
        INT,
        10,
        "%",
        "flow_or_qps_equally_divide: split only this far above a bundle limit.",
        minimum=0,
    ),
    Setting(
        "defaultNamespaceBundleSplitAlgorithm",
        STR,
        "range_equally_divide",
        "",
        "Split algorithm used by automatic splits and by admin splits that name none.",
        choices=SPLIT_ALGORITHM_NAMES,
    ),
    Setting(
        "supportedNamespaceBundleSplitAlgorithms",
        LIST,
        SPLIT_ALGORITHM_NAMES,
        "",
        "Split algorithms the admin API accepts.",
    ),
    Setting(
        "loadBalancerResourceQuotaUpdateIntervalMinutes",
        INT,
        15,
        "min",
        "How often the leader writes bundle data and broker time averages.",
        minimum=1,
    ),
    Setting(
        "loadBalancerHistoryPath",
        STR,
        "",
        "",
        "Directory of a load history (docs/pipeline.md) the leader appends one snapshot to "
        "every shedding cycle: broker and bundle rows and its averages (empty: off).",
    ),
    # -- namespaces, lookup and brokers --------------------------------------------------------
    Setting(
        "defaultNumberOfNamespaceBundles",
        INT,
        4,
        "bundles",
        "Bundles of a namespace created without a count.",
        minimum=1,
    ),
    Setting(
        "namespaceBundleUnloadingTimeoutMs",
        INT,
        60000,
        "ms",
        "How long an unload may take before it is abandoned.",
        minimum=1,
    ),
    Setting("clusterName", STR, "standalone", "", "Name of this cluster."),
    Setting("bindAddress", STR, "0.0.0.0", "", "Address the listeners bind to."),
    Setting("advertisedAddress", STR, "127.0.0.1", "", "Host other brokers and clients reach."),
    Setting("webServicePort", INT, 8080, "", "Port of the admin/lookup HTTP API.", minimum=0),
    Setting("brokerServicePort", INT, 6650, "", "Port of the binary protocol.", minimum=0),
    Setting(
        "maxMessageSize",
        INT,
        5242880,
        "bytes",
        "Largest message a client may publish (frames may be 10 KiB larger).",
        minimum=1024,
    ),
    Setting(
        "keepAliveIntervalSeconds",
        INT,
        30,
        "s",
        "Binary connections idle this long are pinged; one silent for two is closed.",
        minimum=1,
    ),
    Setting(
        "statsUpdateFrequencyInSecs",
        INT,
        60,
        "s",
        "Window over which measured topic rates (msg/s, bytes/s) are computed.",
        minimum=1,
    ),
    Setting(
        "metadataStoreUrl",
        STR,
        "memory:",
        "",
        "Metadata store: memory:, a durable file, or zk:host:port[,...][/chroot].",
    ),
    Setting(
        "metadataStoreSessionTimeoutMillis",
        INT,
        30000,
        "ms",
        "Session timeout: a broker silent this long loses its ephemeral records.",
        minimum=1,
    ),
    Setting(
        "brokerShutdownTimeoutMs",
        INT,
        60000,
        "ms",
        "Graceful shutdown waits this long for bundles to move elsewhere.",
        minimum=0,
    ),
)

SETTINGS_BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
