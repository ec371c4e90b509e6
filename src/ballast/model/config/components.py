"""Small frozen configs, one per component, built from validated :class:`Settings`. A
component takes only its own config (STYLE 8), with units in the field names."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ballast.model.config.loader import Settings
from ballast.model.loaddata.usage import ResourceWeights
from ballast.model.split_algorithms import FlowOrQpsThresholds

MIB = 1024 * 1024


def resource_weights(settings: Settings) -> ResourceWeights:
    """The weights of the usage; heap memory's is 0 whatever is set, as Pulsar 3.0 on leaves
    it out (``getMaxResourceUsageWithWeight`` takes no memory weight)."""
    return ResourceWeights(
        cpu=settings.get_float("loadBalancerCPUResourceWeight"),
        memory=0.0,
        direct_memory=settings.get_float("loadBalancerDirectMemoryResourceWeight"),
        bandwidth_in=settings.get_float("loadBalancerBandwidthInResourceWeight"),
        bandwidth_out=settings.get_float("loadBalancerBandwidthOutResourceWeight"),
    )


@dataclass(frozen=True, slots=True)
class ReportConfig:
    """When a broker samples its host and rewrites its load report."""

    update_threshold_percentage: float
    update_min_interval_ms: int
    update_max_interval_ms: int
    host_usage_check_interval_ms: int
    nic_speed_override_gbps: float | None
    weights: ResourceWeights

    @classmethod
    def from_settings(cls, settings: Settings) -> ReportConfig:
        return cls(
            update_threshold_percentage=settings.get_float(
                "loadBalancerReportUpdateThresholdPercentage"
            ),
            update_min_interval_ms=settings.get_int("loadBalancerReportUpdateMinIntervalMillis"),
            update_max_interval_ms=settings.get_int("loadBalancerReportUpdateMaxIntervalMinutes")
            * 60_000,
            host_usage_check_interval_ms=settings.get_int(
                "loadBalancerHostUsageCheckIntervalMinutes"
            )
            * 60_000,
            nic_speed_override_gbps=settings.get_optional_float(
                "loadBalancerOverrideBrokerNicSpeedGbps"
            ),
            weights=resource_weights(settings),
        )


@dataclass(frozen=True, slots=True)
class SheddingConfig:
    """The shedding cycle around a strategy (the load manager's ``doLoadShedding``)."""

    enabled: bool
    strategy: str
    interval_ms: int
    grace_period_ms: int
    excluded_namespaces: frozenset[str]

    @classmethod
    def from_settings(cls, settings: Settings) -> SheddingConfig:
        return cls(
            enabled=settings.get_bool("loadBalancerEnabled")
            and settings.get_bool("loadBalancerSheddingEnabled"),
            strategy=settings.get_str("loadBalancerLoadSheddingStrategy"),
            interval_ms=settings.get_int("loadBalancerSheddingIntervalMinutes") * 60_000,
            grace_period_ms=settings.get_int("loadBalancerSheddingGracePeriodMinutes") * 60_000,
            excluded_namespaces=frozenset(
                settings.get_list("loadBalancerSheddingExcludedNamespaces")
            ),
        )


@dataclass(frozen=True, slots=True)
class OverloadShedderConfig:
    overloaded_threshold: float  # fraction, from loadBalancerBrokerOverloadedThresholdPercentage
    weights: ResourceWeights

    @classmethod
    def from_settings(cls, settings: Settings) -> OverloadShedderConfig:
        return cls(
            overloaded_threshold=settings.get_int("loadBalancerBrokerOverloadedThresholdPercentage")
            / 100.0,
            weights=resource_weights(settings),
        )


@dataclass(frozen=True, slots=True)
class ThresholdShedderConfig:
    threshold: float  # fraction above the average, loadBalancerBrokerThresholdShedderPercentage
    history_percentage: float  # loadBalancerHistoryResourcePercentage
    min_throughput_bytes: float  # loadBalancerBundleUnloadMinThroughputThreshold, in bytes/s
    lower_boundary_shedding: bool
    weights: ResourceWeights

    @classmethod
    def from_settings(cls, settings: Settings) -> ThresholdShedderConfig:
        return cls(
            threshold=settings.get_int("loadBalancerBrokerThresholdShedderPercentage") / 100.0,
            history_percentage=settings.get_float("loadBalancerHistoryResourcePercentage"),
            min_throughput_bytes=settings.get_float(
                "loadBalancerBundleUnloadMinThroughputThreshold"
            )
            * MIB,
            lower_boundary_shedding=settings.get_bool("lowerBoundarySheddingEnabled"),
            weights=resource_weights(settings),
        )


@dataclass(frozen=True, slots=True)
class UniformShedderConfig:
    msg_rate_difference_percentage: float
    throughput_multiplier_difference: float
    max_unload_percentage: float
    min_unload_msg_rate: int
    min_unload_throughput_bytes: int
    max_unload_bundles: int  # -1 = no limit

    @classmethod
    def from_settings(cls, settings: Settings) -> UniformShedderConfig:
        return cls(
            msg_rate_difference_percentage=settings.get_float(
                "loadBalancerMsgRateDifferenceShedderThreshold"
            ),
            throughput_multiplier_difference=settings.get_float(
                "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold"
            ),
            max_unload_percentage=settings.get_float("maxUnloadPercentage"),
            min_unload_msg_rate=settings.get_int("minUnloadMessage"),
            min_unload_throughput_bytes=settings.get_int("minUnloadMessageThroughput"),
            max_unload_bundles=settings.get_int("maxUnloadBundleNumPerShedding"),
        )


@dataclass(frozen=True, slots=True)
class AvgShedderConfig:
    """Pulsar's AvgShedder (PIP-364): score gaps in usage points (0-100), the runs a pair
    must stay past them, how much of a pair's traffic gap to move, and the weights of its
    score (heap memory left out: it calls the four-resource ``getMaxResourceUsageWithWeight``)."""

    low_threshold: float
    high_threshold: float
    hit_count_low: int
    hit_count_high: int
    max_unload_percentage: float
    min_unload_msg_rate: int
    min_unload_throughput_bytes: int
    weights: ResourceWeights

    @classmethod
    def from_settings(cls, settings: Settings) -> AvgShedderConfig:
        return cls(
            low_threshold=settings.get_float("loadBalancerAvgShedderLowThreshold"),
            high_threshold=settings.get_float("loadBalancerAvgShedderHighThreshold"),
            hit_count_low=settings.get_int("loadBalancerAvgShedderHitCountLowThreshold"),
            hit_count_high=settings.get_int("loadBalancerAvgShedderHitCountHighThreshold"),
            max_unload_percentage=settings.get_float("maxUnloadPercentage"),
            min_unload_msg_rate=settings.get_int("minUnloadMessage"),
            min_unload_throughput_bytes=settings.get_int("minUnloadMessageThroughput"),
            weights=replace(resource_weights(settings), memory=0.0),
        )


@dataclass(frozen=True, slots=True)
class TransferShedderConfig:
    target_std: float
    hit_count_threshold: int
    transfer_enabled: bool
    max_brokers_per_cycle: int
    shedding_delay_ms: int
    load_data_ttl_ms: int
    overloaded_threshold: float  # fraction
    top_bundles: int  # loadBalancerMaxNumberOfBundlesInBundleLoadReport
    bundles_with_policies: bool
    debug_mode: bool
    history_percentage: float
    weights: ResourceWeights
    excluded_namespaces: frozenset[str]
    failure_domains_enabled: bool  # the anti-affinity filter of the transferability check
    report_interval_ms: int  # how often a broker folds its usage into its load averages

    @classmethod
    def from_settings(cls, settings: Settings) -> TransferShedderConfig:
        return cls(
            target_std=settings.get_float("loadBalancerBrokerLoadTargetStd"),
            hit_count_threshold=settings.get_int("loadBalancerSheddingConditionHitCountThreshold"),
            transfer_enabled=settings.get_bool("loadBalancerTransferEnabled"),
            max_brokers_per_cycle=settings.get_int("loadBalancerMaxNumberOfBrokerSheddingPerCycle"),
            shedding_delay_ms=settings.get_int("loadBalanceSheddingDelayInSeconds") * 1000,
            load_data_ttl_ms=settings.get_int("loadBalancerBrokerLoadDataTTLInSeconds") * 1000,
            overloaded_threshold=settings.get_int("loadBalancerBrokerOverloadedThresholdPercentage")
            / 100.0,
            top_bundles=settings.get_int("loadBalancerMaxNumberOfBundlesInBundleLoadReport"),
            bundles_with_policies=settings.get_bool(
                "loadBalancerSheddingBundlesWithPoliciesEnabled"
            ),
            debug_mode=settings.get_bool("loadBalancerDebugModeEnabled"),
            history_percentage=settings.get_float("loadBalancerHistoryResourcePercentage"),
            weights=resource_weights(settings),
            excluded_namespaces=frozenset(
                settings.get_list("loadBalancerSheddingExcludedNamespaces")
            ),
            failure_domains_enabled=settings.get_bool("failureDomainsEnabled"),
            report_interval_ms=settings.get_int("loadBalancerReportUpdateMinIntervalMillis"),
        )


@dataclass(frozen=True, slots=True)
class BallastShedderConfig:
    """Ballast's own shedding strategy (``ballast``)."""

    target_std: float
    trigger_std: float
    target_max_over_mean: float
    trigger_max_over_mean: float
    hit_count_threshold: int
    swing_hit_count_threshold: int
    swing_load_fraction: float  # of the mean load
    idle_load_fraction: float
    max_load_moved_per_broker: float  # fraction of a broker's capacity, per run
    max_moves_per_cycle: int  # <= 0: no cap
    min_improvement: float  # fraction of a broker
    overloaded_threshold: float  # fraction
    transfer_enabled: bool
    weights: ResourceWeights
    excluded_namespaces: frozenset[str]
    failure_domains_enabled: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> BallastShedderConfig:
        trigger_std = settings.get_float("loadBalancerBallastTriggerStd")
        trigger_max_over_mean = settings.get_float("loadBalancerBallastTriggerMaxOverMean")
        # A target above its trigger counts as the trigger: a spread that starts a balancing
        # is never left where it was (with the target above, a balancing would stop at once).
        return cls(
            target_std=min(settings.get_float("loadBalancerBallastTargetStd"), trigger_std),
            trigger_std=trigger_std,
            target_max_over_mean=min(
                settings.get_float("loadBalancerBallastTargetMaxOverMean"), trigger_max_over_mean
            ),
            trigger_max_over_mean=trigger_max_over_mean,
            hit_count_threshold=settings.get_int("loadBalancerBallastHitCountThreshold"),
            swing_hit_count_threshold=settings.get_int("loadBalancerBallastSwingHitCountThreshold"),
            swing_load_fraction=settings.get_float("loadBalancerBallastSwingLoadFraction"),
            idle_load_fraction=settings.get_float("loadBalancerBallastIdleLoadFraction"),
            max_load_moved_per_broker=settings.get_float(
                "loadBalancerBallastMaxLoadMovedPerBroker"
            ),
            max_moves_per_cycle=settings.get_int("loadBalancerBallastMaxMovesPerCycle"),
            min_improvement=settings.get_float("loadBalancerBallastMinImprovement"),
            overloaded_threshold=settings.get_int("loadBalancerBrokerOverloadedThresholdPercentage")
            / 100.0,
            transfer_enabled=settings.get_bool("loadBalancerTransferEnabled"),
            weights=resource_weights(settings),
            excluded_namespaces=frozenset(
                settings.get_list("loadBalancerSheddingExcludedNamespaces")
            ),
            failure_domains_enabled=settings.get_bool("failureDomainsEnabled"),
        )


@dataclass(frozen=True, slots=True)
class SplitConfig:
    """When bundles split (``BundleSplitterTask``) and how (the algorithms)."""

    enabled: bool
    unload_after_split: bool
    max_topics: int
    max_sessions: int  # <= 0 disables the check
    max_msg_rate: float
    max_bandwidth_bytes: float
    max_bundles: int
    default_algorithm: str
    supported_algorithms: tuple[str, ...]
    flow_or_qps: FlowOrQpsThresholds

    @classmethod
    def from_settings(cls, settings: Settings) -> SplitConfig:
        max_rate = settings.get_int("loadBalancerNamespaceBundleMaxMsgRate")
        max_mbytes = settings.get_int("loadBalancerNamespaceBundleMaxBandwidthMbytes")
        return cls(
            enabled=settings.get_bool("loadBalancerEnabled")
            and settings.get_bool("loadBalancerAutoBundleSplitEnabled"),
            unload_after_split=settings.get_bool("loadBalancerAutoUnloadSplitBundlesEnabled"),
            max_topics=settings.get_int("loadBalancerNamespaceBundleMaxTopics"),
            max_sessions=settings.get_int("loadBalancerNamespaceBundleMaxSessions"),
            max_msg_rate=float(max_rate),
            max_bandwidth_bytes=float(max_mbytes * MIB),
            max_bundles=settings.get_int("loadBalancerNamespaceMaximumBundles"),
            default_algorithm=settings.get_str("defaultNamespaceBundleSplitAlgorithm"),
            supported_algorithms=settings.get_list("supportedNamespaceBundleSplitAlgorithms"),
            flow_or_qps=FlowOrQpsThresholds(
                max_msg_rate=max_rate,
                max_bandwidth_mbytes=max_mbytes,
                difference_threshold_percentage=settings.get_int(
                    "flowOrQpsDifferenceThresholdPercentage"
                ),
            ),
        )


@dataclass(frozen=True, slots=True)
class PlacementConfig:
    """``selectBrokerForAssignment``: the filters and the scoring strategy."""

    strategy: str
    distribute_evenly: bool
    broker_max_topics: int
    overloaded_threshold: float  # fraction
    usage_difference_threshold: float  # fraction, LeastResourceUsageWithWeight
    history_percentage: float
    prefer_later_versions: bool
    failure_domains_enabled: bool
    excluded_namespaces: frozenset[str]
    weights: ResourceWeights
    load_manager_class: str  # brokers reporting another class are filtered out

    @classmethod
    def from_settings(cls, settings: Settings) -> PlacementConfig:
        return cls(
            strategy=settings.get_str("loadBalancerLoadPlacementStrategy"),
            distribute_evenly=settings.get_bool("loadBalancerDistributeBundlesEvenlyEnabled"),
            broker_max_topics=settings.get_int("loadBalancerBrokerMaxTopics"),
            overloaded_threshold=settings.get_int("loadBalancerBrokerOverloadedThresholdPercentage")
            / 100.0,
            usage_difference_threshold=settings.get_int(
                "loadBalancerAverageResourceUsageDifferenceThresholdPercentage"
            )
            / 100.0,
            history_percentage=settings.get_float("loadBalancerHistoryResourcePercentage"),
            prefer_later_versions=settings.get_bool("preferLaterVersions"),
            failure_domains_enabled=settings.get_bool("failureDomainsEnabled"),
            excluded_namespaces=frozenset(
                settings.get_list("loadBalancerSheddingExcludedNamespaces")
            ),
            weights=resource_weights(settings),
            load_manager_class=settings.get_str("loadManagerClassName"),
        )


@dataclass(frozen=True, slots=True)
class NamespaceConfig:
    default_bundles: int
    cluster: str

    @classmethod
    def from_settings(cls, settings: Settings) -> NamespaceConfig:
        return cls(
            default_bundles=settings.get_int("defaultNumberOfNamespaceBundles"),
            cluster=settings.get_str("clusterName"),
        )
