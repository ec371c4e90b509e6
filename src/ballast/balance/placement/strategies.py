"""Placement (broker scoring) strategies, by name: Pulsar's ``ModularLoadManagerStrategy``
implementations. Each chooses one of the candidates the filter pipeline left, from the snapshot,
its explicit memory (:class:`PlacementState`) and an injected ``random.Random``; it returns the
choice and the new memory.

- ``least_long_term_message_rate`` (Pulsar's default): score = long-term message rate of the
  broker (its time averages) plus that of its preallocated bundles; a broker whose weighted max
  usage is above the overload threshold scores +infinity; uniformly random among the lowest
  scores (exact ties), so if every candidate is overloaded, among all of them.
- ``least_resource_usage_with_weight``: smoothed weighted usage per broker (history restarted
  for a broker with no bundles or no message rate); the best are those at least
  ``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` below the candidates'
  average; random among them, or among all candidates if none is.
- ``round_robin``: the next candidate in turn (see :func:`round_robin`).
- ``ballast`` (Ballast's own): the candidate whose load, predicted from traffic with the load
  model learnt from the reports (:mod:`ballast.balance.loadmodel`) and counting its
  preallocated bundles, is lowest once the bundle is added; equal loads go to the broker
  serving fewer bundles, then at random. A bundle unloaded within the grace period does not
  go to a broker whose own report is above the overload threshold (weighted max usage, as
  ``least_long_term_message_rate`` scores it) while another candidate is not, nor back to the
  broker whose report still lists it (the one it just left) while another such candidate
  remains.

Every strategy is told the bundle being placed (``bundle``); Pulsar's ignore it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import msgspec

from ballast.balance.decisions import BrokerId, ReasonKind, percent
from ballast.balance.loadmodel import (
    broker_usage,
    bundle_traffic,
    costs_from_snapshot,
    load_of,
    load_with,
    usage_of,
)
from ballast.balance.placement.filters import Candidates
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import PlacementConfig

_INT_MAX = 2**31 - 1


class RoundRobinState(msgspec.Struct, frozen=True, kw_only=True):
    """Pulsar's ``RoundRobinBrokerSelector``: the turn counter and the candidate order it last
    used (kept while the candidates stay the same size and still contain the pick)."""

    counter: int = 0
    order: tuple[str, ...] = ()


class PlacementState(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What placement remembers between selections: ``least_resource_usage_with_weight``'s
    smoothed usage per broker, the configured round-robin strategy's turn, the turn of the
    round-robin selector Pulsar keeps for namespaces excluded from shedding, and the broker
    AvgShedder's shedding paired each bundle it unloaded with (its ``bundleBrokerMap``)."""

    usage_history: dict[str, float] = {}
    round_robin: RoundRobinState = RoundRobinState()
    excluded_round_robin: RoundRobinState = RoundRobinState()
    paired: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen broker (None: no candidate), a readable why and, for a strategy that
    chooses in more than one way, which (None: the strategy's usual kind)."""

    broker: BrokerId | None
    detail: str
    kind: ReasonKind | None = None


def long_term_message_rate_score(
    snapshot: LoadSnapshot, broker: BrokerId, config: PlacementConfig
) -> float:
    """Pulsar's ``LeastLongTermMessageRate.getScore``."""
    if snapshot.overloaded(broker, config.weights, config.overloaded_threshold):
        return math.inf
    data = snapshot.brokers[broker]
    found = snapshot.broker_index(broker)
    total = 0.0 if found is None else found.preallocated_long_term_msg_rate
    averages = data.time_average_data
    return total + (averages.long_term_msg_rate_in + averages.long_term_msg_rate_out)


def least_long_term_message_rate(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    bundle: str | None = None,
) -> tuple[Choice, PlacementState]:
    best: list[BrokerId] = []
    lowest = math.inf
    for broker in candidates:
        score = long_term_message_rate_score(snapshot, broker, config)
        if score < lowest:
            best = [broker]
            lowest = score
        elif score == lowest:
            best.append(broker)
    if not best:
        best = list(candidates)
    if not best:
        return Choice(None, "no candidate broker"), state
    chosen = best[rng.randrange(len(best))]
    if math.isinf(lowest):
        detail = f"all {len(candidates)} candidates are overloaded; chosen at random"
    else:
        if len(candidates) == 1:
            among = "the only candidate"
        elif len(best) == 1:
            among = f"the lowest of {len(candidates)} candidates"
        else:
            among = f"{len(best)} of {len(candidates)} candidates tied, chosen at random"
        detail = f"least long-term message rate {lowest:g} msg/s, {among}"
    return Choice(chosen, detail), state


def least_resource_usage_with_weight(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    bundle: str | None = None,
) -> tuple[Choice, PlacementState]:
    if not candidates:
        return Choice(None, "no candidate broker"), state
    # Pulsar's onActiveBrokersChange: forget brokers that are gone.
    history = {b: v for b, v in state.usage_history.items() if b in snapshot.brokers}
    keep = config.history_percentage
    total = 0.0
    for broker in candidates:
        local = snapshot.local(broker)
        previous = history.get(broker)
        if not snapshot.bundles_of(broker) or (local.msg_rate_in == 0 and local.msg_rate_out == 0):
            previous = None  # a restarted or idle broker starts its history again
        usage = snapshot.weighted_usage(broker, config.weights)
        smoothed = usage if previous is None else previous * keep + (1 - keep) * usage
        history[broker] = smoothed
        total += smoothed
    average = total / len(candidates)
    difference = config.usage_difference_threshold
    best = [b for b in candidates if history.get(b, 1.0) + difference <= average]
    if best:
        detail = (
            f"usage at least {percent(difference)} below the candidates' average "
            f"{percent(average)} ({len(best)} of {len(candidates)})"
        )
    else:
        best = list(candidates)
        detail = f"no candidate well below the average {percent(average)}; chosen at random"
    chosen = best[rng.randrange(len(best))]
    return Choice(chosen, detail), msgspec.structs.replace(state, usage_history=history)


def round_robin_turn(
    candidates: Candidates, turn: RoundRobinState
) -> tuple[BrokerId | None, RoundRobinState]:
    """Pulsar's ``RoundRobinBrokerSelector.selectBroker``: the candidate at ``counter % n`` of
    the remembered order, re-taken from the candidates (sorted, for a deterministic order) when
    their number changed or the remembered pick is no longer a candidate; the counter then
    advances, wrapping from ``Integer.MAX_VALUE`` to 0. No candidates: nothing, counter kept."""
    if not candidates:
        return None, turn
    fresh = tuple(sorted(candidates))
    index = turn.counter % len(fresh)
    order = turn.order
    if len(order) <= index or len(order) != len(fresh):
        order = fresh
    chosen = order[index]
    if chosen not in candidates:
        order = fresh
        chosen = order[index]
    counter = 0 if turn.counter == _INT_MAX else turn.counter + 1
    return chosen, RoundRobinState(counter=counter, order=order)


def round_robin(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    bundle: str | None = None,
) -> tuple[Choice, PlacementState]:
    del snapshot, config, rng, bundle
    chosen, turn = round_robin_turn(candidates, state.round_robin)
    detail = f"round robin turn {state.round_robin.counter} over {len(candidates)} candidates"
    return Choice(chosen, detail), msgspec.structs.replace(state, round_robin=turn)


def least_predicted_load(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    bundle: str | None = None,
) -> tuple[Choice, PlacementState]:
    """Ballast's placement (``ballast``, see the module docstring). O(candidates)."""
    if not candidates:
        return Choice(None, "no candidate broker"), state
    costs = costs_from_snapshot(snapshot)
    added = None if bundle is None else usage_of(costs, bundle_traffic(snapshot, bundle, None))
    best: list[BrokerId] = []
    lowest = (math.inf, 0)
    # An overloaded broker first: the one a bundle is leaving is fine when the rest are full.
    for broker in _not_leaving(snapshot, _not_overloaded(snapshot, candidates, config), bundle):
        usage, capacity = broker_usage(snapshot, broker, costs, config.weights)
        load = (
            load_of(usage, capacity, config.weights)
            if added is None
            else load_with(usage, added, capacity, config.weights)
        )
        key = (load, len(snapshot.bundles_of(broker)))
        if key < lowest:
            best, lowest = [broker], key
        elif key == lowest:
            best.append(broker)
    chosen = best[rng.randrange(len(best))]
    detail = (
        f"least predicted load {lowest[0]:.3f} with the bundle "
        f"({len(best)} of {len(candidates)} candidates tied)"
    )
    return Choice(chosen, detail), state


def paired_or_random(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    config: PlacementConfig,
    state: PlacementState,
    rng: random.Random,
    *,
    bundle: str | None = None,
) -> tuple[Choice, PlacementState]:
    """AvgShedder's placement (``avg``): the broker its shedding paired the bundle with,
    while that broker is a candidate; else a candidate at random (Pulsar hashes a random
    number over the candidates in name order).

    Pulsar's ``bundleBrokerMap`` remembers every pick. Here a random pick replaces a pair
    that is no longer a candidate (a bundle paired with a broker that has since been drained
    goes to its new owner, not back to the old pair, on its next placement), but a bundle
    never paired is not remembered: copying a map of every bundle at each placement would
    cost more than the one case it serves, a later lookup of that bundle while its owner
    lives (after an admin unload, say), which Pulsar sends back to the owner and this sends
    at random."""
    del snapshot, config
    if not candidates:
        return Choice(None, "no candidate broker"), state
    paired = state.paired.get(bundle) if bundle is not None else None
    if paired is not None and paired in candidates:
        detail = "the broker AvgShedder paired its broker with"
        return Choice(paired, detail, ReasonKind.PAIRED), state
    ordered = sorted(candidates)
    chosen = ordered[rng.randrange(len(ordered))]
    detail = f"at random among {len(ordered)} candidates"
    if paired is not None and bundle is not None:
        state = msgspec.structs.replace(state, paired={**state.paired, bundle: chosen})
    return Choice(chosen, detail, ReasonKind.RANDOM), state


def _not_leaving(snapshot: LoadSnapshot, candidates: Candidates, bundle: str | None) -> Candidates:
    """The candidates without the broker a bundle is leaving: a bundle unloaded within the
    grace period that a broker's report still lists has just been released by that broker,
    and placing it back there would undo the move (pulsar#21722). All candidates if that
    leaves none."""
    if bundle is None or bundle not in snapshot.recently_unloaded_bundles:
        return candidates
    others = tuple(b for b in candidates if bundle not in snapshot.bundles_of(b))
    return others or candidates


def _not_overloaded(
    snapshot: LoadSnapshot, candidates: Candidates, config: PlacementConfig
) -> Candidates:
    """The candidates whose own report is at most the overload threshold (weighted max
    usage): a broker busy with something besides its bundles is no place for more, whatever
    its traffic predicts. All candidates if that leaves none."""
    threshold = config.overloaded_threshold
    fit = tuple(b for b in candidates if not snapshot.overloaded(b, config.weights, threshold))
    return fit or candidates


class PlacementStrategy(Protocol):
    def __call__(
        self,
        snapshot: LoadSnapshot,
        candidates: Candidates,
        config: PlacementConfig,
        state: PlacementState,
        rng: random.Random,
        *,
        bundle: str | None = None,
    ) -> tuple[Choice, PlacementState]: ...


PLACEMENT_STRATEGIES: Mapping[str, PlacementStrategy] = {
    "least_long_term_message_rate": least_long_term_message_rate,
    "least_resource_usage_with_weight": least_resource_usage_with_weight,
    "round_robin": round_robin,
    "avg": paired_or_random,
    "ballast": least_predicted_load,
}


class UnknownPlacementStrategy(ValueError):
    def __str__(self) -> str:
        return str(self.args[0])


def placement_strategy(name: str) -> PlacementStrategy:
    """The strategy registered as ``name``; raises :class:`UnknownPlacementStrategy` listing the
    valid names."""
    try:
        return PLACEMENT_STRATEGIES[name]
    except KeyError:
        valid = ", ".join(PLACEMENT_STRATEGIES)
        raise UnknownPlacementStrategy(
            f'unknown placement strategy "{name}" (valid: {valid})'
        ) from None
