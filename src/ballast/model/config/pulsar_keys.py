"""Keys of Pulsar's own ``broker.conf`` that Ballast does not use and whose names come close to
one of Ballast's keys. A file is read quietly for keys of Pulsar's alone (one summary warning),
but an unknown key near a known one is warned about as a likely typo; these are listed so that
a stock Pulsar file's keys are not taken for typos (``brokerServicePortTls`` is not a
misspelt ``brokerServicePort``)."""

from __future__ import annotations

PULSAR_KEYS_NEAR_OURS = frozenset(
    {
        "bindAddresses",
        "brokerDeleteInactivePartitionedTopicMetadataEnabled",
        "brokerDeleteInactiveTopicsMode",
        "brokerServicePortTls",
        "brokerServicePurgeInactiveFrequencyInSeconds",
        "globalZookeeperServers",
        "loadBalancerMaxNumberOfBundlesToSplitPerCycle",
        "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
        "loadBalancerSplitIntervalMinutes",
        "webServicePortTls",
    }
)
