"""Choosing a broker for a bundle: Pulsar's ``selectBrokerForAssignment`` (modular load
manager), as a pure function.

Pipeline, in Pulsar's order (each step a filter from :mod:`.filters`):

1. a bundle already preallocated goes to that broker (``selectBrokerForAssignment`` only);
2. ``namespacePolicies``: isolation primaries/secondaries, or shared brokers able to host the
   topic kind;
3. ``maxTopics``: brokers at most ``loadBalancerBrokerMaxTopics`` topics (reported plus
   preallocated), unless that leaves none;
4. ``antiAffinity``: spread the namespace's anti-affinity group over failure domains and
   brokers;
5. ``leastServicing``: with ``loadBalancerDistributeBundlesEvenlyEnabled`` (or for
   ``pulsar/system``), the brokers serving the fewest bundles of the namespace;
6. ``loadManagerClass`` then ``brokerVersion`` (with ``preferLaterVersions``); a version that
   cannot be read makes the pipeline fall back to step 2's brokers;
7. no candidate left → step 2's brokers again;
8. the scoring strategy chooses (namespaces in ``loadBalancerSheddingExcludedNamespaces`` use
   a round-robin selector of their own);
9. if the chosen broker's weighted max usage is above the overload threshold, choose again among
   step 2's brokers (keeping the first choice if that gives none).

The result carries the preallocation Pulsar records for the chosen broker; applying it is the
caller's job (so is recording the default bundle data Pulsar inserts for a bundle never seen).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from ballast.balance.decisions import (
    Assign,
    BrokerId,
    JsonValue,
    Reason,
    ReasonKind,
    percent,
)
from ballast.balance.placement.filters import (
    BrokerFilterError,
    Candidates,
    apply_namespace_policies,
    filter_anti_affinity,
    filter_broker_version,
    filter_large_topic_count,
    filter_load_manager_class,
    remove_most_servicing_brokers,
)
from ballast.balance.placement.strategies import (
    Choice,
    PlacementState,
    PlacementStrategy,
    placement_strategy,
    round_robin_turn,
)
from ballast.balance.snapshot import LoadSnapshot, bundle_name, bundle_namespace
from ballast.model.config import PlacementConfig
from ballast.model.loaddata import BundleData
from ballast.model.naming import SYSTEM_NAMESPACE


@dataclass(frozen=True, slots=True)
class Selection:
    """The broker chosen for a bundle (None: no broker can take it), the new placement
    memory, the candidates after each stage and why the broker was chosen."""

    broker: BrokerId | None
    state: PlacementState
    stages: tuple[tuple[str, Candidates], ...]
    reason: Reason


@dataclass(frozen=True, slots=True)
class Preallocation:
    """What Pulsar records when it assigns a bundle: the bundle's data goes into the broker's
    preallocated bundles until the broker reports it. ``new_bundle_data`` says the data is
    Pulsar's default for a bundle never seen, which the leader also inserts in its bundle
    data."""

    bundle: str
    broker: BrokerId
    data: BundleData
    new_bundle_data: bool


@dataclass(frozen=True, slots=True)
class PlacementResult:
    """``selectBrokerForAssignment``: the assignment (None if no broker can take the bundle),
    the preallocation to record (None when the bundle was already preallocated or not
    placed), the new placement memory and figures."""

    decision: Assign | None
    preallocation: Preallocation | None
    state: PlacementState
    stats: Mapping[str, JsonValue]


def _choose(
    strategy: PlacementStrategy,
    excluded: bool,
    *,
    snapshot: LoadSnapshot,
    bundle: str,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
) -> tuple[Choice, PlacementState]:
    if not excluded:
        return strategy(snapshot, candidates, config, state, rng, bundle=bundle)
    chosen, turn = round_robin_turn(candidates, state.excluded_round_robin)
    detail = "namespace is excluded from shedding: placed round robin"
    return Choice(chosen, detail), msgspec.structs.replace(state, excluded_round_robin=turn)


def select_broker(
    snapshot: LoadSnapshot,
    bundle: str,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    non_persistent: bool = False,
) -> Selection:
    """Pulsar's ``selectBroker`` (steps 2–9 above) for the canonical bundle name ``bundle``,
    among all brokers of the snapshot. Raises ``UnknownPlacementStrategy`` for an unknown
    ``config.strategy``."""
    strategy = placement_strategy(config.strategy)
    available = tuple(snapshot.brokers)
    namespace = bundle_namespace(bundle)

    def policies_allow() -> Candidates:
        return apply_namespace_policies(snapshot, bundle, available, non_persistent=non_persistent)

    stages: list[tuple[str, Candidates]] = []
    candidates = policies_allow()
    stages.append(("namespacePolicies", candidates))
    candidates = filter_large_topic_count(snapshot, candidates, config.broker_max_topics)
    stages.append(("maxTopics", candidates))
    candidates = filter_anti_affinity(
        snapshot, candidates, bundle, failure_domains_enabled=config.failure_domains_enabled
    )
    stages.append(("antiAffinity", candidates))
    if config.distribute_evenly or namespace == SYSTEM_NAMESPACE:
        candidates = remove_most_servicing_brokers(snapshot, candidates, bundle)
        stages.append(("leastServicing", candidates))
    try:
        candidates = filter_load_manager_class(snapshot, candidates, config.load_manager_class)
        stages.append(("loadManagerClass", candidates))
        candidates = filter_broker_version(
            snapshot, candidates, prefer_later_versions=config.prefer_later_versions
        )
        stages.append(("brokerVersion", candidates))
    except BrokerFilterError:
        candidates = policies_allow()
        stages.append(("filterFailedFallback", candidates))
    if not candidates:
        candidates = policies_allow()
        stages.append(("emptyFallback", candidates))
    excluded = namespace in config.excluded_namespaces
    round_robin = excluded or config.strategy == "round_robin"
    kind = ReasonKind.ROUND_ROBIN if round_robin else ReasonKind.LEAST_LOADED
    choice, state = _choose(
        strategy,
        excluded,
        snapshot=snapshot,
        bundle=bundle,
        candidates=candidates,
        config=config,
        state=state,
        rng=rng,
    )
    if choice.broker is None:
        reason = Reason(kind, f"no broker can take bundle {bundle}")
        return Selection(None, state, tuple(stages), reason)
    detail = choice.detail
    usage = snapshot.weighted_usage(choice.broker, config.weights)
    if usage > config.overloaded_threshold:
        candidates = policies_allow()
        stages.append(("overloadedFallback", candidates))
        second, state = _choose(
            strategy,
            excluded,
            snapshot=snapshot,
            bundle=bundle,
            candidates=candidates,
            config=config,
            state=state,
            rng=rng,
        )
        if second.broker is not None:
            detail = (
                f"first choice {choice.broker} is overloaded ({percent(usage)}); "
                f"among all allowed brokers: {second.detail}"
            )
            choice = Choice(second.broker, detail, second.kind)
    return Selection(choice.broker, state, tuple(stages), Reason(choice.kind or kind, detail))


def select_broker_for_assignment(
    snapshot: LoadSnapshot,
    bundle: str,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    non_persistent: bool = False,
) -> PlacementResult:
    """Pulsar's ``selectBrokerForAssignment``: the preallocated broker if there is one, else
    :func:`select_broker` and the preallocation to record."""
    parsed = bundle_name(bundle)
    preallocated = snapshot.preallocated_broker(bundle)
    if preallocated is not None:
        reason = Reason(ReasonKind.PREALLOCATED, f"already preallocated to {preallocated}")
        stats: dict[str, JsonValue] = {"outcome": "Success", "preallocated": True}
        return PlacementResult(Assign(parsed, preallocated, reason), None, state, stats)
    selection = select_broker(snapshot, bundle, config, state, rng, non_persistent=non_persistent)
    stats = {
        "strategy": config.strategy,
        "candidates": {name: list(found) for name, found in selection.stages},
    }
    if selection.broker is None:
        stats["outcome"] = "Skip"
        stats["reason"] = ReasonKind.NO_BROKERS.value
        stats["detail"] = selection.reason.text  # the stages in candidates say which emptied
        return PlacementResult(None, None, selection.state, stats)
    stats["outcome"] = "Success"
    known = snapshot.bundles.get(bundle)
    preallocation = Preallocation(
        bundle=bundle,
        broker=selection.broker,
        data=known if known is not None else BundleData.new_default(),
        new_bundle_data=known is None,
    )
    decision = Assign(parsed, selection.broker, selection.reason)
    return PlacementResult(decision, preallocation, selection.state, stats)
