"""Splitting a bundle on its owner, on the leader's command (Pulsar's
``NamespaceService.splitAndOwnBundle``): cut points from the named algorithm over the bundle's
topics (those the store records and those the broker serves), the namespace's boundaries
rewritten in ``/admin/local-policies`` with a versioned write retried on conflict (up to 7
times, ``BUNDLE_SPLIT_RETRY_LIMIT``), the children owned by this broker, the parent released,
the children optionally unloaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from ballast.broker.caches import NamespaceNotFoundError
from ballast.controller.commands import SplitBundle
from ballast.coordination.ownership import OwnershipError, OwnershipState
from ballast.metadata import paths
from ballast.metadata.store import Check, Create, MultiOpError, NoNodeError, Op, SetValue
from ballast.model.bundles import BundleName, InvalidBundle, NamespaceBundles
from ballast.model.config import SplitConfig
from ballast.model.policies import BundlesData, LocalPolicies
from ballast.model.split_algorithms import SplitRequest, TopicLoad, split_algorithm

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

log = logging.getLogger(__name__)

SPLIT_RETRY_LIMIT = 7


class SplitFailedError(OwnershipError):
    pass


@dataclass(frozen=True, slots=True)
class SplitOutcome:
    """The children of a split, or none and why the algorithm found no cut point (the bundle
    then stays as it was, which Pulsar answers as a success)."""

    children: tuple[BundleName, ...]
    why_not: str = ""


async def execute_split(
    node: BrokerNode, bundle: BundleName, command: SplitBundle, config: SplitConfig
) -> SplitOutcome:
    """Split ``bundle`` (which ``node`` must own)."""
    if node.ownership.state_of(bundle) is not OwnershipState.OWNED:
        raise SplitFailedError(bundle, f"{node.broker_id} does not own it")
    if command.algorithm not in config.supported_algorithms:
        raise SplitFailedError(bundle, f"split algorithm {command.algorithm} is not supported")
    algorithm = split_algorithm(command.algorithm)
    # The bundle's topics as Pulsar's getOwnedTopicListForNamespaceBundle has them: the
    # persistent ones the store records (served or not: a broker serves none of them) and
    # the non-persistent ones served here.
    owned = set(node.served.topics(bundle)).union(await node.topic_index.topics_in(bundle))
    topics = [
        TopicLoad(
            str(topic),
            stats.msg_rate_in,
            stats.msg_rate_out,
            stats.msg_throughput_in,
            stats.msg_throughput_out,
        )
        for topic in sorted(owned, key=str)
        for stats in (node.traffic.topic_stats(topic),)
    ]
    found = algorithm(
        SplitRequest(
            bundle=bundle.range,
            topics=topics,
            positions=command.boundaries,
            thresholds=config.flow_or_qps,
        )
    )
    if not found.found:
        log.info("split of %s found no boundary: %s", bundle, found.reason)
        return SplitOutcome((), found.reason)
    await node.ownership.transition(bundle, OwnershipState.SPLITTING)
    try:
        updated = await _rewrite_boundaries(node, bundle, found.points)
    except Exception:
        await node.ownership.transition(bundle, OwnershipState.OWNED)
        raise
    children = [
        child
        for child in updated.bundles
        if bundle.range.lower <= child.range.lower and child.range.upper <= bundle.range.upper
    ]
    for child in children:
        await node.ownership.acquire(child)
        node.owners.invalidate(child)
    node.served.split(bundle, children)
    await node.ownership.release(bundle)
    node.owners.invalidate(bundle)
    node.bundles.invalidate(bundle.namespace)
    if command.unload:
        for child in children:
            await node.unload(child)
    return SplitOutcome(tuple(children))


async def _rewrite_boundaries(
    node: BrokerNode, bundle: BundleName, points: tuple[int, ...]
) -> NamespaceBundles:
    """Read the namespace's boundaries, cut the bundle, write them back at the version read;
    on a concurrent change read again (at most :data:`SPLIT_RETRY_LIMIT` times)."""
    namespace = bundle.namespace
    path = paths.local_policies(namespace)
    policies_path = paths.namespace_policies(namespace)
    for _ in range(SPLIT_RETRY_LIMIT):
        policies = await node.store.exists(policies_path)
        if policies is None:
            raise NamespaceNotFoundError(namespace)
        # The boundaries cut are those of the record whose version the write checks: read
        # apart, another split written between the two reads would be overwritten and lost.
        record = await node.store.get(path)
        local = LocalPolicies()
        if record is not None and record.value:
            local = msgspec.json.decode(record.value, type=LocalPolicies)
        if local.bundles is not None:
            current = local.bundles.to_bundles(namespace, path=path)
        else:  # never split: the namespace's own policies hold its boundaries
            node.bundles.invalidate(namespace)
            current = await node.bundles.bundles(namespace)
        try:
            updated = current.with_split(bundle.range, points)
        except InvalidBundle as exc:
            raise SplitFailedError(bundle, str(exc)) from None
        body = msgspec.json.encode(msgspec.structs.replace(local, bundles=BundlesData.of(updated)))
        write: Op
        if record is None:
            await node.store.ensure(paths.LOCAL_POLICIES + f"/{namespace.tenant}")
            write = Create(path, body)
        else:
            write = SetValue(path, body, record.stat.version)
        try:
            # Written only while the namespace exists: a split that raced its deletion wrote
            # its boundaries back after the delete, and the namespace came back to life in
            # every reader of the local policies.
            await node.store.multi([Check(policies_path, policies.version), write])
            return updated
        except MultiOpError as exc:
            if exc.index == 0 and isinstance(exc.cause, NoNodeError):
                raise NamespaceNotFoundError(namespace) from None
            continue  # someone else changed the boundaries or the policies: read them again
    raise SplitFailedError(bundle, f"boundaries kept changing ({SPLIT_RETRY_LIMIT} attempts)")
