"""A namespace only one broker may own: an isolation policy with that broker's host as the
one primary and no secondary, so no other broker takes its bundles, whatever happens."""

from __future__ import annotations

import re

from ballast.broker.cluster import LocalCluster
from ballast.controller.requests import CreateNamespace, SetIsolationPolicy
from ballast.model.naming import TopicName
from tests.runtime.test_scenarios import create_topics


async def pinned_namespace(
    cluster: LocalCluster, namespace: str, host: str, topics: int
) -> list[TopicName]:
    """Create ``namespace`` (2 bundles) pinned to ``host``, with ``topics`` topics, each
    looked up: every bundle owned on ``host``."""
    policy: dict[str, object] = {
        "namespaces": [re.escape(namespace)],
        "primary": [re.escape(host)],
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    assert (await cluster.request(SetIsolationPolicy(name="pin", policy=policy))).ok
    assert (await cluster.request(CreateNamespace(namespace=namespace, bundles=2))).ok
    created = await create_topics(cluster, namespace, topics)
    for topic in created:
        answer = await cluster.lookup(topic)
        assert answer.broker_id is not None and answer.broker_id.startswith(f"{host}:")
    return created
