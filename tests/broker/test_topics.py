"""The namespace topic index and the served-topic map."""

from __future__ import annotations

import tracemalloc

from ballast.broker.topics import NamespaceTopicIndex, ServedChange, ServedTopics
from ballast.clock import Clock
from ballast.metadata.factory import MetadataStores
from ballast.model.bundles import BundleName, NamespaceBundles, topic_hash
from ballast.model.naming import NamespaceName, TopicName

NS = NamespaceName("t", "ns")


async def test_topics_of_a_bundle_are_a_range_of_the_index(clock: Clock) -> None:
    stores = MetadataStores(clock)
    store = await stores.connect("memory:")
    index = NamespaceTopicIndex(store)
    topics = [TopicName.parse(f"persistent://t/ns/topic {i}%x") for i in range(50)]
    for topic in topics[:40]:
        await index.create(topic)
    bundles = NamespaceBundles.equal(NS, 4)
    for bundle in bundles.bundles:
        expected = sorted(
            (t for t in topics[:40] if bundle.range.contains(topic_hash(t))), key=topic_hash
        )
        assert sorted(await index.topics_in(bundle), key=topic_hash) == expected
    # A topic created later shows up (the watch refreshes the index).
    late = topics[45]
    await store.put(f"/managed-ledgers/t/ns/persistent/{late.encoded_local_name}", b"")
    await clock.sleep(0.01)
    home = bundles.find(late)
    assert late in await index.topics_in(home)
    index.close()
    await store.close()
    stores.close()


async def test_the_index_memo_keeps_one_list_per_namespace(clock: Clock) -> None:
    """The memo kept every version of a namespace's topic list it was asked for: 4,000 topics
    created one at a time held 451 MB. Two indexes (two brokers) still share one list."""
    stores = MetadataStores(clock)
    store = await stores.connect("memory:")
    first, second = NamespaceTopicIndex(store), NamespaceTopicIndex(store)
    ns = NamespaceName("t", "memo")
    for i in range(300):
        await first.create(TopicName.parse(f"persistent://t/memo/topic-{i}"))
        await first.topics_of(ns)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(300, 600):
            await first.create(TopicName.parse(f"persistent://t/memo/topic-{i}"))
            assert len(await first.topics_of(ns)) == i + 1
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2_000_000, held  # a list per version held some 5 MB here
    assert await second.topics_of(ns) == await first.topics_of(ns)
    first.close()
    second.close()
    await store.close()
    stores.close()


def test_served_topics_follow_a_split() -> None:
    served = ServedTopics()
    parent = BundleName.parse("t/ns/0x00000000_0xffffffff")
    topics = [TopicName.parse(f"persistent://t/ns/x{i}") for i in range(30)]
    served.add_bundle(parent, topics)
    children = [
        BundleName.parse("t/ns/0x00000000_0x80000000"),
        BundleName.parse("t/ns/0x80000000_0xffffffff"),
    ]
    served.split(parent, children)
    assert parent not in served
    assert served.topics(children[0]) | served.topics(children[1]) == set(topics)
    for topic in topics:
        bundle = served.bundle_of(topic)
        assert bundle is not None and bundle.range.contains(topic_hash(topic))
    assert served.remove_bundle(children[0]) == {
        t for t in topics if children[0].range.contains(topic_hash(t))
    }


def test_listeners_hear_every_change_and_splits_are_marked() -> None:
    served = ServedTopics()
    heard: list[ServedChange] = []
    served.add_listener(heard.append)
    parent = BundleName.parse("t/ns/0x00000000_0xffffffff")
    topics = [TopicName.parse(f"persistent://t/ns/x{i}") for i in range(10)]
    served.add_bundle(parent, topics[:5])
    served.add_topic(topics[5], parent)
    served.add_topic(topics[5], parent)  # already served: nothing new to tell
    children = [
        BundleName.parse("t/ns/0x00000000_0x80000000"),
        BundleName.parse("t/ns/0x80000000_0xffffffff"),
    ]
    served.split(parent, children)
    served.remove_bundle(children[0])
    served.remove_bundle(children[0])  # gone already: silent
    assert [(c.bundle, c.added, c.split) for c in heard] == [
        (parent, True, False),
        (parent, True, False),
        (parent, False, True),
        (children[0], True, True),
        (children[1], True, True),
        (children[0], False, False),
    ]
    assert set(heard[0].topics) == set(topics[:5])
    assert heard[1].topics == (topics[5],)
    assert set(heard[2].topics) == set(topics[:6])
    assert set(heard[3].topics) | set(heard[4].topics) == set(topics[:6])
    assert set(heard[5].topics) == set(heard[3].topics)


def test_one_topic_removed_leaves_its_bundle_served() -> None:
    served = ServedTopics()
    heard: list[ServedChange] = []
    served.add_listener(heard.append)
    bundle = NamespaceBundles.equal(NS, 1).bundles[0]
    gone, kept = (TopicName.parse(f"non-persistent://t/ns/{n}") for n in ("gone", "kept"))
    served.add_bundle(bundle, [gone, kept])
    changes = served.changes
    served.remove_topic(gone)
    assert served.topics(bundle) == {kept} and bundle in served
    assert served.bundle_of(gone) is None and served.bundle_of(kept) == bundle
    assert heard[-1] == ServedChange(bundle, (gone,), False)
    assert served.changes == changes + 1  # readers caching the map see the change
    served.remove_topic(gone)  # already gone: nothing to tell
    assert served.changes == changes + 1
