"""Topic lookup (Pulsar's ``NamespaceService.findBrokerServiceUrl``, seeds 000 and 003): topic
→ bundle → owner.

- The bundle comes from the namespace's boundaries; an unknown namespace is an error.
- A heartbeat namespace (``pulsar/<host:port>``) belongs to its broker only.
- An owned bundle is answered with its owner's URLs (Connect). A bundle being assigned,
  unloaded, transferred or split answers a retryable error: the client looks up again.
- An unowned bundle is placed by the leader (centralised assignment): a follower redirects the
  lookup to the leader; the leader picks a broker with the placement pipeline and redirects,
  ``authoritative``, to it; a broker asked authoritatively takes the bundle itself.
- ``read_only`` never triggers an assignment; ``load_topics_in_bundle`` preloads the bundle's
  topics when ownership is taken.
- Concurrent lookups of one bundle share one future.

Answers are data (:class:`LookupAnswer`); the HTTP and binary-protocol shells map them to
their own responses.

Concurrency contract: one event loop.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from ballast.broker.caches import NamespaceBundlesCache, NamespaceNotFoundError, OwnershipCache
from ballast.broker.identity import BrokerIdentity
from ballast.controller.event_types import NoBrokerError
from ballast.controller.events import PreemptedError
from ballast.coordination.ownership import Owner, OwnershipState
from ballast.coordination.registry import BrokerRegistry
from ballast.metadata import paths
from ballast.metadata.store import MetadataError, MetadataStore
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.codec import ModelError
from ballast.model.loaddata import LocalBrokerData
from ballast.model.naming import MEMOISED_NAME_LENGTH, TopicName
from ballast.model.partitioned import read_partitioned


class AnswerKind(enum.Enum):
    CONNECT = "connect"
    REDIRECT = "redirect"
    ERROR = "error"


class LookupErrorKind(enum.Enum):
    NOT_READY = "ServiceNotReady"  # the bundle is moving: retry
    NAMESPACE_NOT_FOUND = "NamespaceNotFound"
    NO_BROKER = "NoBrokerAvailable"  # nothing to place it on: retry later
    METADATA = "MetadataError"  # the store failed: retry later

    @property
    def retryable(self) -> bool:
        return self is not LookupErrorKind.NAMESPACE_NOT_FOUND


class LookupAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """A lookup's outcome: connect to (or be redirected to) a broker's URLs, or an error."""

    kind: AnswerKind
    broker_id: str | None = None
    broker_url: str | None = None
    broker_url_tls: str | None = None
    http_url: str | None = None
    http_url_tls: str | None = None
    authoritative: bool = False
    error: LookupErrorKind | None = None
    message: str = ""

    @property
    def retryable(self) -> bool:
        return self.error is not None and self.error.retryable


@dataclass(frozen=True, slots=True)
class LookupOptions:
    authoritative: bool = False
    read_only: bool = False
    load_topics_in_bundle: bool = True


DEFAULT_OPTIONS = LookupOptions()


@dataclass(frozen=True, slots=True)
class BrokerUrls:
    broker_id: str
    broker_url: str | None
    broker_url_tls: str | None
    http_url: str | None
    http_url_tls: str | None


def error(kind: LookupErrorKind, message: str) -> LookupAnswer:
    return LookupAnswer(kind=AnswerKind.ERROR, error=kind, message=message)


def _not_placed(bundle: BundleName, why: str) -> LookupAnswer:
    """A bundle that could not get an owner this time, in Pulsar's words for it: its C++
    client (and the Python one built on it) retries a lookup that says so on the same
    connection, where other words make it close the connection, producers and consumers too."""
    return error(
        LookupErrorKind.NOT_READY,
        f"Failed to acquire ownership for namespace bundle {bundle}: {why}; retry",
    )


def _answer(kind: AnswerKind, urls: BrokerUrls, authoritative: bool = False) -> LookupAnswer:
    return LookupAnswer(
        kind=kind,
        broker_id=urls.broker_id,
        broker_url=urls.broker_url,
        broker_url_tls=urls.broker_url_tls,
        http_url=urls.http_url,
        http_url_tls=urls.http_url_tls,
        authoritative=authoritative,
    )


def _connect(owner: Owner) -> LookupAnswer:
    data = owner.data
    return LookupAnswer(
        kind=AnswerKind.CONNECT,
        broker_id=owner.broker_id,
        broker_url=data.native_url,
        broker_url_tls=data.native_url_tls,
        http_url=data.http_url,
        http_url_tls=data.http_url_tls,
    )


async def partitions_of(store: MetadataStore, topic: TopicName) -> int:
    """A partitioned topic's partition count from its metadata record, 0 for a plain topic
    (what clients ask before a lookup, over HTTP or the binary protocol)."""
    record = await store.get(paths.partitioned_topic(topic))
    return 0 if record is None else read_partitioned(record.value).partitions


Placer = Callable[[BundleName], Awaitable[str]]
Acquirer = Callable[[BundleName, bool], Awaitable[Owner]]


@dataclass(slots=True)
class LookupStats:
    lookups: int = 0
    redirects: int = 0
    errors: int = 0


class LookupService:
    """One broker's lookup answers."""

    def __init__(
        self,
        identity: BrokerIdentity,
        bundles: NamespaceBundlesCache,
        owners: OwnershipCache,
        registry: BrokerRegistry,
        acquire: Acquirer,
        leader_id: Callable[[], Awaitable[str | None]],
        placer: Callable[[], Placer | None],
    ) -> None:
        self._identity = identity
        self._bundles = bundles
        self._owners = owners
        self._registry = registry
        self._acquire = acquire
        self._leader_id = leader_id
        self._placer = placer
        self._inflight: dict[tuple[BundleName, LookupOptions], asyncio.Future[LookupAnswer]] = {}
        self._url_cache: dict[tuple[str, int], BrokerUrls] = {}
        self._answers: dict[BundleName, tuple[Owner, LookupAnswer]] = {}
        self._topic_bundles: dict[TopicName, tuple[NamespaceBundles, BundleName]] = {}
        self.stats = LookupStats()

    def cached_answer(self, topic: TopicName) -> LookupAnswer | None:
        """The answer without awaiting anything, when everything it needs is cached and the
        bundle is owned (the common case); None otherwise — then use :meth:`lookup`."""
        bundles = self._bundles.peek(topic.namespace)
        if bundles is None:
            return None
        placed = self._topic_bundles.get(topic)
        if placed is None or placed[0] is not bundles:  # boundaries changed (a split)
            if len(self._topic_bundles) > 200_000:
                self._topic_bundles.clear()
            placed = (bundles, bundles.find(topic))
            if len(topic.local_name) <= MEMOISED_NAME_LENGTH:
                self._topic_bundles[topic] = placed
        bundle = placed[1]
        owner = self._owners.peek(bundle)
        if owner is None or owner.state is not OwnershipState.OWNED:
            return None
        cached = self._answers.get(bundle)
        if cached is None or cached[0] is not owner:
            cached = (owner, _connect(owner))
            self._answers[bundle] = cached
        self.stats.lookups += 1
        return cached[1]

    def forget(self, bundle: BundleName) -> None:
        """Drop the answer kept for ``bundle``, whose ownership record is gone. Kept, the
        answers of split parents and deleted namespaces' bundles stayed for good."""
        self._answers.pop(bundle, None)

    @property
    def answers_kept(self) -> int:
        """How many bundles' answers are kept for :meth:`cached_answer`."""
        return len(self._answers)

    async def bundle_of(self, topic: TopicName) -> BundleName:
        """The bundle serving ``topic`` (NamespaceNotFoundError if the namespace is unknown).
        A broker's heartbeat namespace has no policies: it is one bundle, always."""
        if topic.namespace.is_heartbeat:
            return NamespaceBundles.equal(topic.namespace, 1).bundles[0]
        return (await self._bundles.bundles(topic.namespace)).find(topic)

    async def lookup(
        self, topic: TopicName, options: LookupOptions = DEFAULT_OPTIONS
    ) -> LookupAnswer:
        self.stats.lookups += 1
        try:
            bundle = await self.bundle_of(topic)
        except NamespaceNotFoundError as exc:
            self.stats.errors += 1
            return error(LookupErrorKind.NAMESPACE_NOT_FOUND, str(exc))
        except (MetadataError, ModelError) as exc:
            self.stats.errors += 1
            return error(LookupErrorKind.METADATA, str(exc))
        answer = await self.lookup_bundle(bundle, options)
        if answer.kind is AnswerKind.REDIRECT:
            self.stats.redirects += 1
        elif answer.kind is AnswerKind.ERROR:
            self.stats.errors += 1
        return answer

    async def lookup_bundle(self, bundle: BundleName, options: LookupOptions) -> LookupAnswer:
        """The answer for ``bundle``; concurrent lookups with the same options share one."""
        key = (bundle, options)
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[LookupAnswer] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            answer = await self._find(bundle, options)
        except (MetadataError, ModelError) as exc:
            answer = error(LookupErrorKind.METADATA, str(exc))
        finally:
            del self._inflight[key]
        future.set_result(answer)
        return answer

    async def _find(self, bundle: BundleName, options: LookupOptions) -> LookupAnswer:
        namespace = bundle.namespace
        if namespace.is_heartbeat:
            return await self._heartbeat(bundle, namespace.local_name, options)
        owner = await self._owners.owner(bundle)
        if owner is not None:
            return await self._owned(owner)
        if options.read_only:
            return error(LookupErrorKind.NOT_READY, f"bundle {bundle} has no owner")
        if options.authoritative:
            # The leader chose this broker: take the bundle.
            return await self._take(bundle, options)
        placer = self._placer()
        if placer is None:
            leader = await self._leader_id()
            if leader is None:
                return _not_placed(bundle, "no leader is elected yet to place it")
            if leader == self._identity.broker_id:
                # The record of a leadership this broker no longer holds: its session was
                # given up (ZooKeeper out of reach for longer than it), and ZooKeeper has not
                # expired it yet. A redirect would send the client back here, again and again.
                return _not_placed(
                    bundle, "the leader's record names this broker, which is not leading now"
                )
            urls = await self.urls_of(leader)
            if urls is None:
                return _not_placed(bundle, f"the leader {leader} is not registered yet")
            return _answer(AnswerKind.REDIRECT, urls, authoritative=False)
        try:
            chosen = await placer(bundle)
        except NoBrokerError as exc:
            return error(LookupErrorKind.NO_BROKER, str(exc))
        except PreemptedError:  # the controller lost leadership before placing it
            return _not_placed(bundle, "the leader changed")
        if chosen == self._identity.broker_id:
            return await self._take(bundle, options)
        urls = await self.urls_of(chosen)
        if urls is None:
            return _not_placed(bundle, f"the broker chosen for it, {chosen}, is not registered")
        return _answer(AnswerKind.REDIRECT, urls, authoritative=True)

    async def _owned(self, owner: Owner) -> LookupAnswer:
        if owner.state is OwnershipState.ASSIGNING:
            return _not_placed(owner.bundle, f"it is being assigned to {owner.broker_id}")
        if owner.state is not OwnershipState.OWNED:
            # Pulsar's words for a bundle in transition, as in _not_placed.
            return error(
                LookupErrorKind.NOT_READY,
                f"Namespace bundle {owner.bundle} is being unloaded ({owner.state.value} on "
                f"{owner.broker_id}); retry",
            )
        return _connect(owner)

    async def _take(self, bundle: BundleName, options: LookupOptions) -> LookupAnswer:
        owner = await self._acquire(bundle, options.load_topics_in_bundle)
        self._owners.invalidate(bundle)
        return await self._owned(owner)

    async def _heartbeat(
        self, bundle: BundleName, broker_id: str, options: LookupOptions
    ) -> LookupAnswer:
        """A broker's heartbeat namespace is served by that broker alone."""
        if broker_id == self._identity.broker_id:
            owner = await self._owners.owner(bundle)
            if owner is None and not options.read_only:
                return await self._take(bundle, options)
            if owner is None:
                return error(LookupErrorKind.NOT_READY, f"bundle {bundle} has no owner")
            return await self._owned(owner)
        urls = await self.urls_of(broker_id)
        if urls is None:
            return error(LookupErrorKind.NOT_READY, f"broker {broker_id} is not registered")
        return _answer(AnswerKind.REDIRECT, urls, authoritative=True)

    async def urls_of(self, broker_id: str) -> BrokerUrls | None:
        """A registered broker's URLs, from its registry record."""
        return self.known_urls(broker_id)

    def known_urls(self, broker_id: str) -> BrokerUrls | None:
        """:meth:`urls_of` without awaiting: the registry view is kept in memory."""
        entry = self._registry.entry(broker_id)
        if entry is None:
            return None
        key = (broker_id, entry.version)
        cached = self._url_cache.get(key)
        if cached is None:
            try:
                data = LocalBrokerData.from_json(entry.data)
            except ModelError:
                return None
            cached = BrokerUrls(
                broker_id,
                data.pulsar_service_url,
                data.pulsar_service_url_tls,
                data.web_service_url,
                data.web_service_url_tls,
            )
            if len(self._url_cache) > 4096:
                self._url_cache.clear()
            self._url_cache[key] = cached
        return cached
