"""The demo workload: numbers the docs allow never overflow, a namespace the leader would
refuse is refused before anything starts, and the hot spot follows the namespace's bundles
as they are."""

from __future__ import annotations

import math

import pytest

from ballast.model.bundles import NamespaceBundles, topic_hash
from ballast.model.naming import NamespaceName
from ballast.standalone.workload import DemoWorkload, WorkloadError


def test_a_steep_skew_puts_the_load_on_the_first_topics_without_overflowing() -> None:
    """(rank) ** 1000 overflowed: an internal error at start."""
    rates = DemoWorkload(topics=50, skew=1000, rate=10.0).base_rates()
    values = [stats.msg_rate_in for stats in rates.values()]
    assert all(math.isfinite(v) for v in values)
    assert values[0] == pytest.approx(10.0 * 50) and sum(values[1:]) < 1e-100


def test_a_namespace_the_leader_would_refuse_is_refused_here() -> None:
    with pytest.raises(WorkloadError, match="a/b/c is not tenant/namespace"):
        DemoWorkload(namespace="a/b/c")


def test_the_hot_spot_is_a_bundle_of_the_namespace_as_it_is() -> None:
    """A namespace of an earlier run keeps its own count: the hot spot covered several of its
    bundles when drawn on the workload's count."""
    workload = DemoWorkload(bundles=4, topics=400)
    actual = NamespaceBundles.equal(NamespaceName.parse(workload.namespace), 16)
    hot = workload.hot_topics(actual)
    ranges = {actual.range_for_hash(topic_hash(t)) for t in hot}
    assert len(ranges) == 1 and len(hot) < len(workload.hot_topics())
