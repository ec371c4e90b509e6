"""The settings of the shedding strategies that carry many of their own: Pulsar's
TransferShedder (extensible load manager) and Ballast's own strategy. Part of the one table in
:mod:`ballast.model.config.settings`, kept here so that table stays readable."""

from __future__ import annotations

from ballast.model.config.setting import BOOL, FLOAT, INT, Setting

STRATEGY_SETTINGS: tuple[Setting, ...] = (
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
        java_long=True,
    ),
    Setting(
        "loadBalancerBrokerLoadDataTTLInSeconds",
        INT,
        1800,
        "s",
        "TransferShedder: ignore load data older than this.",
        minimum=1,
        java_long=True,
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
        0.035,
        "",
        "ballast: once balancing, move load until the predicted std-dev of broker load is at "
        "or below this (a value above the trigger counts as the trigger).",
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
        1.07,
        "",
        "ballast: once balancing, also move load until the heaviest broker is within this "
        "multiple of the mean load (a value above the trigger counts as the trigger).",
        minimum=1,
    ),
    Setting(
        "loadBalancerBallastTriggerMaxOverMean",
        FLOAT,
        1.08,
        "",
        "ballast: also start balancing when the heaviest broker is above this multiple of the "
        "mean load.",
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
        "loadBalancerBallastSwingHitCountThreshold",
        INT,
        12,
        "runs",
        "ballast: runs above the trigger before acting within this many runs of a swing (a "
        "broker's load moving away from where it had settled by more than "
        "loadBalancerBallastSwingLoadFraction of the mean): a passing burst is not chased.",
        minimum=0,
    ),
    Setting(
        "loadBalancerBallastSwingLoadFraction",
        FLOAT,
        0.1,
        "",
        "ballast: a broker's load that moves away from where it had settled by more than "
        "this fraction of the mean load is a swing (see the swing hit count).",
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
        "ballast: load one broker may send or receive per run (a fraction of its own "
        "capacity; its first bundle of a run may be larger).",
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
    # -- AvgShedder (PIP-364) ---------------------------------------------------------------
    Setting(
        "loadBalancerAvgShedderLowThreshold",
        INT,
        15,
        "points",
        "AvgShedder: a pair of brokers this many usage points apart (of 100) is unbalanced "
        "once it stays so for loadBalancerAvgShedderHitCountLowThreshold runs.",
        minimum=0,
    ),
    Setting(
        "loadBalancerAvgShedderHighThreshold",
        INT,
        40,
        "points",
        "AvgShedder: a pair this many usage points apart is unbalanced once it stays so for "
        "loadBalancerAvgShedderHitCountHighThreshold runs.",
        minimum=0,
    ),
    Setting(
        "loadBalancerAvgShedderHitCountLowThreshold",
        INT,
        8,
        "runs",
        "AvgShedder: runs a pair must stay past the low threshold.",
        minimum=0,
    ),
    Setting(
        "loadBalancerAvgShedderHitCountHighThreshold",
        INT,
        2,
        "runs",
        "AvgShedder: runs a pair must stay past the high threshold.",
        minimum=0,
    ),
)
