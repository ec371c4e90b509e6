"""The load manager's shedding cycle around a strategy (Pulsar's ``doLoadShedding`` of the
modular load manager, and the extensible manager's ``UnloadScheduler``), as a pure function.

Modular strategies (overload, threshold, uniform, avg):

1. nothing when shedding is disabled (``loadBalancerEnabled``/``loadBalancerSheddingEnabled``)
   or fewer than two brokers are available;
2. recently unloaded bundles older than ``loadBalancerSheddingGracePeriodMinutes`` expire
   (``timestamp < now - grace``); the rest stay off limits;
3. the strategy proposes unloads;
4. each proposal is dropped when its namespace is in ``loadBalancerSheddingExcludedNamespaces``,
   when its isolation policy leaves no other broker, when its anti-affinity group would land it
   on an equally loaded broker, or when placement (:func:`select_broker`) finds no broker or
   only the current owner; the others become transfers to the broker placement chose.
   Destinations are chosen independently, without preallocating, as Pulsar's ``selectBroker``.
   A strategy that pairs each unload with a broker (AvgShedder) proposes transfers: placement
   learns the pairs first (``PlacementState.paired``; the ``avg`` placement honours them).

The transfer strategy (extensible load manager): expire the grace period, nothing with fewer
than two brokers, then the strategy's own decisions as they are (it checks transferability
itself).

Recording the moves in ``recently_unloaded_*`` is the caller's job, as it is Pulsar's load
manager's: the result lists the expired entries to drop; the moves themselves are the decisions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from ballast.balance.decisions import (
    BrokerId,
    JsonValue,
    Move,
    Reason,
    ReasonKind,
    Transfer,
    Unload,
    outcome,
)
from ballast.balance.placement.filters import (
    apply_namespace_policies,
    should_anti_affinity_unload,
)
from ballast.balance.placement.select import select_broker
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.shedding.registry import Shedder
from ballast.balance.snapshot import LoadSnapshot, bundle_namespace
from ballast.model.config import PlacementConfig, SheddingConfig

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class CycleResult(Generic[S]):
    """One shedding cycle: the moves to make (in order), the strategy's and placement's new
    memories, the recently-unloaded entries that expired (to drop), and figures."""

    decisions: tuple[Move, ...]
    strategy_state: S
    placement_state: PlacementState
    expired_unloaded_bundles: tuple[str, ...]
    expired_unloaded_brokers: tuple[BrokerId, ...]
    stats: Mapping[str, JsonValue]


def _expire(snapshot: LoadSnapshot, grace_period_ms: int, now_ms: int) -> tuple[str, ...]:
    cutoff = now_ms - grace_period_ms
    return tuple(b for b, ts in snapshot.recently_unloaded_bundles.items() if ts < cutoff)


def should_namespace_policies_unload(snapshot: LoadSnapshot, bundle: str, broker: BrokerId) -> bool:
    """Pulsar's ``shouldNamespacePoliciesUnload``: a bundle of an isolated namespace is unloaded
    only if its policy allows some broker other than the current one."""
    if not snapshot.policies.has_isolation_policy(bundle_namespace(bundle)):
        return True
    allowed = apply_namespace_policies(snapshot, bundle, tuple(snapshot.brokers))
    return any(candidate != broker for candidate in allowed)


def run_shedding_cycle(
    snapshot: LoadSnapshot,
    shedder: Shedder[Any, S],
    state: S,
    strategy_config: Any,
    *,
    shedding: SheddingConfig,
    placement: PlacementConfig,
    placement_state: PlacementState,
    rng: random.Random,
    now_ms: int,
) -> CycleResult[S]:
    """Run one shedding cycle with ``shedder`` (configured by ``strategy_config``, the config
    its ``config_from_settings`` builds). Randomness (placement's tie-breaks) comes from
    ``rng`` only."""
    if not shedding.enabled:
        return CycleResult(
            (),
            state,
            placement_state,
            (),
            (),
            outcome(False, ReasonKind.BALANCED, "shedding is disabled"),
        )
    expired: tuple[str, ...] = ()
    if not shedder.modular:
        expired = _expire(snapshot, shedding.grace_period_ms, now_ms)
    if len(snapshot.brokers) <= 1:
        body = outcome(False, ReasonKind.NO_BROKERS, "fewer than two brokers")
        return CycleResult((), state, placement_state, expired, (), body)
    if shedder.modular:
        expired = _expire(snapshot, shedding.grace_period_ms, now_ms)
    view = snapshot
    if expired:
        gone = set(expired)
        kept = {b: ts for b, ts in snapshot.recently_unloaded_bundles.items() if b not in gone}
        view = snapshot.with_recently_unloaded(bundles=kept)
    result = shedder.find(view, state, strategy_config, now_ms)
    if not shedder.modular:
        # The strategy picks its destinations itself: the cycle drops nothing, and its
        # outcome is the strategy's.
        own = _own_outcome(result.stats)
        passed: dict[str, JsonValue] = {
            **(own or outcome(bool(result.decisions), ReasonKind.BALANCED, "nothing to move")),
            "strategy": result.stats,
            "skipped": [],
            "expiredRecentlyUnloadedBundles": list(expired),
        }
        return CycleResult(
            result.decisions,
            result.state,
            placement_state,
            expired,
            result.expired_unloaded_brokers,
            passed,
        )
    moves: list[Move] = []
    skipped: list[JsonValue] = []
    available = tuple(view.brokers)
    paired = {str(p.bundle): p.destination for p in result.decisions if isinstance(p, Transfer)}
    if paired:  # AvgShedder's pairs, for its placement
        placement_state = msgspec.structs.replace(
            placement_state, paired={**placement_state.paired, **paired}
        )
    for decided in result.decisions:
        # a transfer is an unload whose broker the strategy paired it with (AvgShedder)
        proposal = (
            Unload(decided.bundle, decided.source, decided.reason)
            if isinstance(decided, Transfer)
            else decided
        )
        bundle, broker = str(proposal.bundle), proposal.broker
        why = _guard(view, bundle, broker, shedding, available)
        if why is None:
            selection = select_broker(view, bundle, placement, placement_state, rng)
            placement_state = selection.state
            if selection.broker is None:
                why = "no broker available"
            elif selection.broker == broker:
                why = "placement chose the current owner"
            else:
                moves.append(_to_transfer(proposal, selection.broker, selection.reason))
                continue
        skipped.append({"bundle": bundle, "broker": broker, "why": why})
    if moves:
        head = outcome(True, ReasonKind.BALANCED)
    elif result.decisions:  # the strategy proposed, the cycle's checks kept every bundle
        head = outcome(False, ReasonKind.NO_BUNDLES, "no proposal survived the cycle's checks")
    else:  # the strategy's own reason (NoLoadData, HitCount, ...), as the others report it
        head = _own_outcome(result.stats) or outcome(False, ReasonKind.BALANCED, "nothing to move")
    stats: dict[str, JsonValue] = {
        **head,
        "strategy": result.stats,
        "skipped": skipped,
        "expiredRecentlyUnloadedBundles": list(expired),
    }
    return CycleResult(
        tuple(moves),
        result.state,
        placement_state,
        expired,
        result.expired_unloaded_brokers,
        stats,
    )


def _own_outcome(stats: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The outcome figures a strategy reported itself (empty if it reported none)."""
    return {k: stats[k] for k in ("outcome", "reason", "detail") if k in stats}


def _guard(
    snapshot: LoadSnapshot,
    bundle: str,
    broker: BrokerId,
    shedding: SheddingConfig,
    available: tuple[BrokerId, ...],
) -> str | None:
    """Why the cycle must not move ``bundle`` off ``broker`` (None: it may)."""
    namespace = bundle_namespace(bundle)
    if namespace in shedding.excluded_namespaces:
        return "namespace is excluded from shedding"
    if not should_namespace_policies_unload(snapshot, bundle, broker):
        return "isolation policy allows no other broker"
    if snapshot.policies.anti_affinity_group(namespace) is not None:
        allowed = apply_namespace_policies(snapshot, bundle, available)
        if not should_anti_affinity_unload(snapshot, bundle, broker, allowed):
            return "anti-affinity: every allowed broker serves as many of the group"
    return None


def _to_transfer(proposal: Unload, destination: BrokerId, placed: Reason) -> Transfer:
    text = f"{proposal.reason.text}; destination {destination}: {placed.text}"
    return Transfer(
        proposal.bundle, proposal.broker, destination, Reason(proposal.reason.kind, text)
    )
