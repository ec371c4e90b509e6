"""The snapshot's lookups are computed on first use — per broker, or over the whole snapshot —
and answer the same either way; an evolved snapshot shares the lookups of unchanged brokers."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from ballast.balance.snapshot import LoadSnapshot
from ballast.model.loaddata import (
    BrokerData,
    BundleData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from tests.balance.build import report

NAMESPACES = ("t/a", "t/b", "t/c")


def bundle(namespace: str, i: int) -> str:
    return f"{namespace}/0x{i:08x}_0x{i + 1:08x}"


def data(topics: int, rate: float) -> BundleData:
    long_term = TimeAverageMessageData(max_samples=1000, msg_rate_in=rate, msg_rate_out=rate)
    return BundleData(long_term_data=long_term, topics=topics)


layouts = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(NAMESPACES), st.integers(0, 9)), max_size=6),
        st.lists(st.tuples(st.sampled_from(NAMESPACES), st.integers(0, 9)), max_size=4),
    ),
    min_size=1,
    max_size=4,
)


def build(layout: list[tuple[list[tuple[str, int]], list[tuple[str, int]]]]) -> LoadSnapshot:
    brokers = {}
    for b, (served, preallocated) in enumerate(layout):
        brokers[f"b{b}"] = BrokerData(
            local_data=report(bundles=[bundle(ns, i) for ns, i in served]),
            preallocated_bundle_data={
                bundle(ns, i): data(i + 1, float(i)) for ns, i in preallocated
            },
        )
    return LoadSnapshot(brokers=MappingProxyType(brokers))


@given(layouts, st.sampled_from(NAMESPACES), st.integers(0, 9))
def test_lazy_lookups_agree_with_the_whole_index(
    layout: list[tuple[list[tuple[str, int]], list[tuple[str, int]]]], namespace: str, i: int
) -> None:
    lazy = build(layout)
    eager = build(layout)
    index = eager.index  # built over everything first
    wanted = bundle(namespace, i)
    assert lazy.preallocated_broker(wanted) == eager.preallocated_broker(wanted)
    assert lazy.preallocated_broker(wanted) == index.preallocated.get(wanted)
    for broker in lazy.brokers:
        assert lazy.bundles_of(broker) == index.broker_bundles[broker]
        assert lazy.broker_namespaces(broker) == index.broker_namespaces[broker]
        assert lazy.namespace_bundle_count(broker, namespace) == len(
            index.broker_namespaces[broker].get(namespace, ())
        )
        found = lazy.broker_index(broker)
        assert found is not None
        pre = lazy.brokers[broker].preallocated_bundle_data.values()
        assert found.preallocated_topics == sum(p.topics for p in pre)


def test_evolve_shares_the_lookups_of_unchanged_brokers() -> None:
    first = build([([("t/a", 1)], []), ([("t/b", 2)], [("t/c", 3)])])
    kept = first.broker_index("b0")
    changed_before = first.broker_index("b1")
    replaced = dict(first.brokers)
    replaced["b1"] = BrokerData(local_data=report(bundles=[bundle("t/b", 4)]))
    second = first.evolve(brokers=MappingProxyType(replaced))
    assert second.broker_index("b0") is kept
    after = second.broker_index("b1")
    assert after is not changed_before and after is not None
    assert after.bundles == {bundle("t/b", 4)}
    assert second.preallocated_broker(bundle("t/c", 3)) is None
    # Same brokers and bundles: the whole index is shared too.
    index = first.index
    assert first.with_recently_unloaded(bundles={"x": 1}).index is index


def test_evolve_shares_the_lookups_of_a_broker_whose_report_stayed() -> None:
    first = build([([("t/a", 1)], []), ([("t/b", 2)], [("t/c", 3)])])
    plain, preallocating = first.broker_index("b0"), first.broker_index("b1")
    remade = {  # new time averages: new BrokerData objects around the same reports
        broker: BrokerData(
            local_data=old.local_data,
            time_average_data=TimeAverageBrokerData(long_term_msg_rate_in=1.0),
            preallocated_bundle_data=dict(old.preallocated_bundle_data),
        )
        for broker, old in first.brokers.items()
    }
    second = first.evolve(brokers=MappingProxyType(remade))
    assert second.broker_index("b0") is plain
    # with preallocations the lookups are made again (their sums depend on their order)
    assert second.broker_index("b1") is not preallocating
    assert second.broker_index("b1") == preallocating
