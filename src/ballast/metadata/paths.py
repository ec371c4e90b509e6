"""Every metadata path Ballast uses, in one place: Pulsar's layout (so a copy of a Pulsar
cluster's tree reads as one of ours) plus the leader's epoch counter.

| path | holds |
| --- | --- |
| ``/loadbalance/brokers/<broker>`` | ephemeral: LocalBrokerData (lookup data, load report) |
| ``/loadbalance/leader`` | ephemeral: the leader (``brokerId``, ``serviceUrl``, ``epoch``) |
| ``/loadbalance/leader-epoch`` | the epoch counter; its version fences every leader write |
| ``/loadbalance/draining/<broker>`` | ephemeral: the broker is shutting down (Ballast's) |
| ``/loadbalance/broker-time-average/<broker>`` | TimeAverageBrokerData |
| ``/loadbalance/bundle-data/<tenant>/<ns>/<range>`` | BundleData |
| ``/loadbalance/resource-quota/namespace/<tenant>/<ns>/<range>`` | legacy ResourceQuota |
| ``/namespace/<tenant>/<ns>/<range>`` | ephemeral: bundle ownership |
| ``/admin/policies/<tenant>`` | tenant info |
| ``/admin/policies/<tenant>/<ns>`` | namespace Policies |
| ``/admin/local-policies/<tenant>/<ns>`` | LocalPolicies: authoritative bundle boundaries |
| ``/admin/clusters/<cluster>/namespaceIsolationPolicies`` | isolation policies |
| ``/admin/clusters/<cluster>/failureDomain/<domain>`` | a failure domain's brokers |
| ``/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>`` | partitioned-topic metadata |
| ``/managed-ledgers/<tenant>/<ns>/<domain>/<topic>`` | topic existence (managed ledger) |
"""

from __future__ import annotations

from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName, TopicDomain, TopicName

LOADBALANCE = "/loadbalance"
BROKERS = "/loadbalance/brokers"
LEADER = "/loadbalance/leader"
LEADER_EPOCH = "/loadbalance/leader-epoch"
BROKER_TIME_AVERAGE = "/loadbalance/broker-time-average"
BUNDLE_DATA = "/loadbalance/bundle-data"
RESOURCE_QUOTA = "/loadbalance/resource-quota/namespace"
# Ballast's addition: the leader's shedding memory (strategy state, recently unloaded bundles
# and brokers), so that a new leader carries on where the last one stopped.
SHEDDING_STATE = "/loadbalance/shedding-state"
# Ballast's addition: ephemeral, one per broker that is shutting down gracefully, so that every
# leader, the next one included, places nothing on a broker being drained.
DRAINING = "/loadbalance/draining"
OWNERSHIP = "/namespace"
ADMIN = "/admin"
POLICIES = "/admin/policies"
LOCAL_POLICIES = "/admin/local-policies"
CLUSTERS = "/admin/clusters"
PARTITIONED_TOPICS = "/admin/partitioned-topics"
MANAGED_LEDGERS = "/managed-ledgers"


def broker(broker_id: str) -> str:
    return f"{BROKERS}/{broker_id}"


def draining(broker_id: str) -> str:
    return f"{DRAINING}/{broker_id}"


def broker_time_average(broker_id: str) -> str:
    return f"{BROKER_TIME_AVERAGE}/{broker_id}"


def bundle_data(bundle: BundleName) -> str:
    return f"{BUNDLE_DATA}/{bundle}"


def resource_quota(bundle: BundleName) -> str:
    return f"{RESOURCE_QUOTA}/{bundle}"


def ownership(bundle: BundleName) -> str:
    return f"{OWNERSHIP}/{bundle}"


def namespace_ownership(namespace: NamespaceName) -> str:
    """The directory whose children are the owned bundles (ranges) of ``namespace``."""
    return f"{OWNERSHIP}/{namespace}"


def tenant(name: str) -> str:
    return f"{POLICIES}/{name}"


def namespace_policies(namespace: NamespaceName) -> str:
    return f"{POLICIES}/{namespace}"


def local_policies(namespace: NamespaceName) -> str:
    return f"{LOCAL_POLICIES}/{namespace}"


def cluster(name: str) -> str:
    return f"{CLUSTERS}/{name}"


def isolation_policies(cluster_name: str) -> str:
    return f"{CLUSTERS}/{cluster_name}/namespaceIsolationPolicies"


def failure_domains(cluster_name: str) -> str:
    return f"{CLUSTERS}/{cluster_name}/failureDomain"


def failure_domain(cluster_name: str, domain: str) -> str:
    return f"{failure_domains(cluster_name)}/{domain}"


def partitioned_topic(topic: TopicName) -> str:
    return f"{PARTITIONED_TOPICS}/{topic.persistence_name}"


def namespace_partitioned_topics(namespace: NamespaceName, domain: TopicDomain) -> str:
    """The directory listing a namespace's partitioned topics of one domain."""
    return f"{PARTITIONED_TOPICS}/{namespace}/{domain.value}"


def managed_ledger(topic: TopicName) -> str:
    return f"{MANAGED_LEDGERS}/{topic.persistence_name}"


def namespace_topics(namespace: NamespaceName, domain: TopicDomain) -> str:
    """The directory listing a namespace's topics of one domain (``loadNamespaceTopics``)."""
    return f"{MANAGED_LEDGERS}/{namespace}/{domain.value}"
