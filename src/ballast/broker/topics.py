"""The topics a broker serves, by bundle, and the index it loads them from.

Pulsar preloads a bundle's topics when a broker takes ownership (``loadNamespaceTopics``): it
lists the namespace's managed ledgers and keeps those whose hash falls in the bundle. The
:class:`NamespaceTopicIndex` keeps each namespace's topics sorted by hash (refreshed by a watch
on ``/managed-ledgers/<ns>/persistent``), so a bundle's topics are one range query.
:class:`ServedTopics` is the broker's topic → bundle map, re-cut when a bundle splits
(``refreshTopicToStatsMaps``). Listeners hear every change of the map — what a protocol
layer needs to close the connections of topics a broker stops serving (the simulator's clients
hear it the same way).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ballast.broker.caches import WatchedCache
from ballast.metadata import paths
from ballast.metadata.store import MetadataStore
from ballast.model.bundles import BundleName, topic_hash
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicDomain,
    TopicName,
    java_url_decode,
)


class NamespaceTopicIndex:
    """Each namespace's persistent topics, sorted by hash."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._cache: WatchedCache[NamespaceName, tuple[list[int], list[TopicName]]] = WatchedCache(
            store,
            self._load,
            lambda ns: [paths.namespace_topics(ns, TopicDomain.PERSISTENT)],
        )

    async def topics_in(self, bundle: BundleName) -> list[TopicName]:
        """The namespace's topics whose hash falls in ``bundle``."""
        hashes, topics = await self._cache.get(bundle.namespace)
        low = bisect.bisect_left(hashes, bundle.range.lower)
        if bundle.range.upper_closed:
            high = bisect.bisect_right(hashes, bundle.range.upper)
        else:
            high = bisect.bisect_left(hashes, bundle.range.upper)
        return topics[low:high]

    async def topics_of(self, namespace: NamespaceName) -> list[TopicName]:
        """Every persistent topic of the namespace (in hash order)."""
        return list((await self._cache.get(namespace))[1])

    async def create(self, topic: TopicName) -> None:
        """Record a persistent topic (its managed ledger), as creating a topic does."""
        if topic.is_persistent:
            await self._store.put(paths.managed_ledger(topic), b"")
            self._cache.invalidate(topic.namespace)

    async def _load(self, namespace: NamespaceName) -> tuple[list[int], list[TopicName]]:
        names = await self._store.children(
            paths.namespace_topics(namespace, TopicDomain.PERSISTENT)
        )
        return _sorted_by_hash(namespace, tuple(names))

    def forget(self, namespace: NamespaceName) -> None:
        """Let go of a deleted namespace's index and its watch: the watched directory of
        persistent topics may never have existed, and then no deletion is seen there."""
        self._cache.forget(namespace)

    def close(self) -> None:
        self._cache.close()


@dataclass(frozen=True, slots=True)
class ServedChange:
    """The broker began (``added``) or stopped serving ``topics`` of ``bundle``. A bundle
    added with no topics yet is reported too (``topics`` empty); a removal may be of some
    topics only (inactive topics deleted) while the bundle stays served. ``split``: the
    change is the re-cut of a split — the parent removed, its children added — and the topics
    stay on this broker (their clients stay connected). ``transfer_to``: the bundle stopped
    being served here because it is being transferred to that broker (its id), which clients
    may be sent to directly."""

    bundle: BundleName
    topics: tuple[TopicName, ...]
    added: bool
    split: bool = False
    transfer_to: str | None = None


ServedListener = Callable[[ServedChange], None]


@dataclass(slots=True)
class _HashIndex:
    """A namespace's topics sorted by hash, and the managed-ledger names they came from."""

    names: tuple[str, ...] | None = None
    hashes: list[int] = field(default_factory=list)
    topics: list[TopicName] = field(default_factory=list)


@functools.lru_cache(maxsize=4096)
def _latest_index(namespace: NamespaceName) -> _HashIndex:
    """The last index built for the namespace (one per namespace, shared by every broker of a
    process)."""
    return _HashIndex()


def _sorted_by_hash(
    namespace: NamespaceName, names: tuple[str, ...]
) -> tuple[list[int], list[TopicName]]:
    """The topics of ``names`` (managed-ledger names) sorted by hash, and their hashes.
    Memoised, the latest list of each namespace only, because every broker of a process
    indexes the same namespaces; callers only read the lists. (A memo of every list seen kept
    each version a namespace went through: 4,000 topics created one at a time held 451 MB.)"""
    index = _latest_index(namespace)
    if index.names != names:
        entries: list[tuple[int, TopicName]] = []
        for name in names:
            try:
                topic = TopicName.of(TopicDomain.PERSISTENT, namespace, java_url_decode(name))
            except InvalidNameError:
                continue  # a ledger name that is not a topic of ours
            entries.append((topic_hash(topic), topic))
        entries.sort(key=lambda entry: (entry[0], str(entry[1])))
        index.names = names
        index.hashes = [h for h, _ in entries]
        index.topics = [t for _, t in entries]
    return index.hashes, index.topics


class ServedTopics:
    """The broker's topic → bundle map for the bundles it owns. Listeners are called
    synchronously, after the map changed, in the order of the changes."""

    def __init__(self) -> None:
        self._by_bundle: dict[BundleName, set[TopicName]] = {}
        self._bundle_of: dict[TopicName, BundleName] = {}
        self._listeners: list[ServedListener] = []
        # Counts the changes, so that readers may cache what they derive from the map.
        self.changes = 0

    def add_listener(self, listener: ServedListener) -> None:
        self._listeners.append(listener)

    def _tell(self, change: ServedChange) -> None:
        self.changes += 1
        for listener in self._listeners:
            listener(change)

    def add_bundle(
        self, bundle: BundleName, topics: Iterable[TopicName], *, split: bool = False
    ) -> None:
        new_bundle = bundle not in self._by_bundle
        served = self._by_bundle.setdefault(bundle, set())
        added: list[TopicName] = []
        for topic in topics:
            if topic not in served:
                served.add(topic)
                added.append(topic)
            self._bundle_of[topic] = bundle
        if added or new_bundle:
            self._tell(ServedChange(bundle, tuple(added), True, split))

    def add_topic(self, topic: TopicName, bundle: BundleName) -> None:
        self.add_bundle(bundle, [topic])

    def remove_topic(self, topic: TopicName) -> None:
        """Stop serving one topic of a bundle still served (an inactive topic deleted);
        listeners hear it as a removal of that topic alone."""
        bundle = self._bundle_of.pop(topic, None)
        if bundle is None:
            return
        self._by_bundle[bundle].discard(topic)
        self._tell(ServedChange(bundle, (topic,), False))

    def remove_bundle(
        self, bundle: BundleName, *, split: bool = False, transfer_to: str | None = None
    ) -> set[TopicName]:
        if bundle not in self._by_bundle:
            return set()
        topics = self._by_bundle.pop(bundle)
        for topic in topics:
            self._bundle_of.pop(topic, None)
        self._tell(ServedChange(bundle, tuple(topics), False, split, transfer_to))
        return topics

    def split(self, parent: BundleName, children: Iterable[BundleName]) -> None:
        """Re-cut the parent's topics into its children (Pulsar's
        ``refreshTopicToStatsMaps``): listeners hear the parent removed, then each child
        added."""
        topics = self.remove_bundle(parent, split=True)
        ordered = list(children)
        by_child: dict[BundleName, list[TopicName]] = {child: [] for child in ordered}
        for topic in topics:
            key = topic_hash(topic)
            for child in ordered:
                if child.range.contains(key):
                    by_child[child].append(topic)
                    break
        for child in ordered:
            self.add_bundle(child, by_child[child], split=True)

    def bundles(self) -> list[BundleName]:
        """The bundles served, in name order (namespace, then range)."""
        return sorted(self._by_bundle)

    def bundles_unordered(self) -> Iterable[BundleName]:
        """The bundles served, in no particular order (cheaper than :meth:`bundles`)."""
        return self._by_bundle.keys()

    def bundle_topics(self) -> Iterable[tuple[BundleName, set[TopicName]]]:
        """Each bundle served with its topics, in no particular order (one pass, no lookups:
        load reports read every bundle this way)."""
        return self._by_bundle.items()

    def topics(self, bundle: BundleName) -> set[TopicName]:
        return self._by_bundle.get(bundle, set())

    def bundle_of(self, topic: TopicName) -> BundleName | None:
        return self._bundle_of.get(topic)

    def __contains__(self, bundle: object) -> bool:
        return bundle in self._by_bundle
