"""The planning half of Ballast's strategy (``ballast``, see :mod:`.ballast`): given the
cluster's predicted loads, the moves that bring it within the targets — heaviest broker
first, best fit to one of the lightest, loads updated after each move — and the tests of a
spread against the triggers and targets. Pure: it works on one run's scratch figures."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ballast.balance.decisions import BrokerId, Move, Reason, ReasonKind, Transfer, Unload
from ballast.balance.loadmodel import Capacity, Costs, Usage, bundle_traffic, load_of, std, usage_of
from ballast.balance.placement.filters import apply_namespace_policies, filter_anti_affinity
from ballast.balance.snapshot import (
    LoadSnapshot,
    bundle_name,
    bundle_namespace,
    is_system_namespace,
)
from ballast.model.config import BallastShedderConfig

# Lightest brokers tried as destinations of each move, and bundles examined on each side of
# the best-fit position.
DESTINATIONS = 4
NEIGHBOURS = 3
# Mean broker load below which there is nothing to balance (a thousandth of a broker).
MIN_MEAN_LOAD = 0.001
# Slack for comparing sums of loads against the limits (floating-point rounding).
EPSILON = 1e-9


@dataclass(slots=True)
class _Candidate:
    size: float  # the bundle's load on its broker (fraction)
    bundle: str
    usage: Usage


@dataclass(slots=True)
class Plan:
    """One run's working figures (local scratch)."""

    snapshot: LoadSnapshot
    config: BallastShedderConfig
    costs: Costs
    capacity: dict[BrokerId, Capacity]
    usage: dict[BrokerId, Usage]
    load: dict[BrokerId, float]
    blocked: set[str]
    # Brokers whose own report puts them above the overload threshold: never a destination,
    # whatever their traffic predicts (something besides the bundles loads them).
    full: frozenset[BrokerId] = frozenset()
    sent: dict[BrokerId, float] = field(default_factory=dict)
    received: dict[BrokerId, float] = field(default_factory=dict)
    movable: dict[BrokerId, list[_Candidate]] = field(default_factory=dict)
    allowed: dict[str, frozenset[BrokerId]] = field(default_factory=dict)
    exhausted: set[BrokerId] = field(default_factory=set)

    def load_with(self, broker: BrokerId, usage: Usage) -> float:
        return load_of(usage, self.capacity[broker], self.config.weights)

    def candidates(self, broker: BrokerId) -> list[_Candidate]:
        """The broker's bundles that may move, lightest first (built once per run)."""
        found = self.movable.get(broker)
        if found is None:
            found = []
            config = self.config
            snapshot = self.snapshot
            for bundle in snapshot.bundles_of(broker):
                namespace = bundle_namespace(bundle)
                if (
                    bundle in self.blocked
                    or is_system_namespace(namespace)
                    or namespace in config.excluded_namespaces
                ):
                    continue
                usage = usage_of(self.costs, bundle_traffic(snapshot, bundle, broker))
                size = self.load_with(broker, usage) - self.capacity[broker].static_load
                if size > 0:
                    found.append(_Candidate(size, bundle, usage))
            found.sort(key=lambda c: (c.size, c.bundle))
            self.movable[broker] = found
        return found

    def may_receive(self, bundle: str, destination: BrokerId) -> bool:
        namespace = bundle_namespace(bundle)
        allowed = self.allowed.get(namespace)
        if allowed is None:
            snapshot = self.snapshot
            brokers = apply_namespace_policies(snapshot, bundle, tuple(snapshot.brokers))
            brokers = filter_anti_affinity(
                snapshot,
                brokers,
                bundle,
                failure_domains_enabled=self.config.failure_domains_enabled,
            )
            allowed = self.allowed[namespace] = frozenset(brokers)
        return destination in allowed

    def reachable(self, mean: float) -> frozenset[BrokerId]:
        """The brokers some bundle the balancing may move could go to: a movable bundle of a
        broker above ``mean`` (the only ones that give) whose namespace's policies allow the
        broker, which is not full. An idle broker outside it (kept by isolation for other
        namespaces, or full) is no idle broker to fill. O(bundles of those brokers) once."""
        namespaces = {
            bundle_namespace(candidate.bundle): candidate.bundle
            for source, value in self.load.items()
            if value > mean
            for candidate in self.candidates(source)
        }
        allowed: set[BrokerId] = set()
        for bundle in namespaces.values():
            allowed.update(b for b in self.load if self.may_receive(bundle, b))
        return frozenset(allowed - self.full)


@dataclass(frozen=True, slots=True)
class _Step:
    """One planned move (or a swap: two)."""

    bundles: tuple[tuple[str, BrokerId, BrokerId, Usage, float], ...]  # bundle, from, to
    gain: float


def is_overloaded(config: BallastShedderConfig, load: float, mean: float) -> bool:
    """Above the overload threshold, and above the mean by more than the trigger std-dev (a
    cluster loaded evenly past the threshold has nowhere better to send load)."""
    return load > config.overloaded_threshold and load > mean + config.trigger_std


def beyond(
    config: BallastShedderConfig, spread: float, heaviest: float, mean: float, *, trigger: bool
) -> bool:
    """Whether the spread is beyond the trigger (or, with ``trigger`` False, the target):
    the standard deviation, or the heaviest broker over the mean — the latter only when the
    mean is above ``MIN_MEAN_LOAD`` (below it there is nothing to balance)."""
    limit_std = config.trigger_std if trigger else config.target_std
    ratio = config.trigger_max_over_mean if trigger else config.target_max_over_mean
    if spread > limit_std:
        return True
    return mean > MIN_MEAN_LOAD and heaviest > mean * ratio


def balance(
    plan: Plan, reason: Reason, idle: Sequence[BrokerId], *, relief: bool = False
) -> list[Move]:
    """The run's moves, planned one step at a time on the predicted loads (updated after each):
    until the spread is within the targets and no ``idle`` broker is left below the idle
    fraction, or nothing helps, or the limits per run; with ``relief``, only off overloaded
    brokers and only while one is overloaded."""
    config = plan.config
    decisions: list[Move] = []
    limit = config.max_moves_per_cycle
    needy = set(idle)
    idle_at_start = frozenset(idle)
    while limit <= 0 or len(decisions) < limit:
        current = std(plan.load.values())
        mean = sum(plan.load.values()) / len(plan.load)
        needy = {b for b in needy if plan.load[b] < config.idle_load_fraction * mean}
        heaviest = max(plan.load.values())
        if not needy and not beyond(config, current, heaviest, mean, trigger=False):
            break
        if relief and not is_overloaded(config, heaviest, mean):
            break
        step = _next_step(plan, mean)
        if step is None:
            break
        if relief and not is_overloaded(config, plan.load[step.bundles[0][1]], mean):
            break  # relief takes load off overloaded brokers only
        for bundle, source, destination, moved, size in step.bundles:
            before = (plan.load[source], plan.load[destination])
            plan.usage[source] = plan.usage[source].minus(moved)
            plan.usage[destination] = plan.usage[destination].plus(moved)
            plan.load[source] = plan.load_with(source, plan.usage[source])
            plan.load[destination] = plan.load_with(destination, plan.usage[destination])
            plan.sent[source] = plan.sent.get(source, 0.0) + size
            # what the destination receives, in its own load (more on a smaller broker)
            received = size * _weight_there(plan, moved, source, destination)
            plan.received[destination] = plan.received.get(destination, 0.0) + received
            plan.blocked.add(bundle)
            _forget(plan, source, bundle)
            kind, head = reason.kind, reason.text
            if kind is ReasonKind.UNDERLOADED and destination not in idle_at_start:
                # the run began for an idle broker; this move evens out the rest
                kind = ReasonKind.OVERLOADED
                head = f"{source} above the mean {mean:.3f} (the run began as {head})"
            text = (
                f"{head}; bundle load {size:.3f}: {source} {before[0]:.3f} -> "
                f"{plan.load[source]:.3f}, {destination} {before[1]:.3f} -> "
                f"{plan.load[destination]:.3f}"
            )
            why = Reason(kind, text)
            if config.transfer_enabled:
                decisions.append(Transfer(bundle_name(bundle), source, destination, why))
            else:
                decisions.append(Unload(bundle_name(bundle), source, why))
    return decisions


def _forget(plan: Plan, broker: BrokerId, bundle: str) -> None:
    found = plan.movable.get(broker)
    if found is not None:
        plan.movable[broker] = [c for c in found if c.bundle != bundle]


def _next_step(plan: Plan, mean: float) -> _Step | None:
    """The best move from the heaviest broker that has one (heaviest first)."""
    ranked = sorted(plan.load, key=lambda b: (-plan.load[b], b))
    for source in ranked:
        if plan.load[source] <= mean:
            return None
        if source in plan.exhausted:
            continue
        step = _best_from(plan, source, mean)
        if step is not None:
            return step
        plan.exhausted.add(source)
    return None


def _destinations(plan: Plan, source: BrokerId) -> list[BrokerId]:
    cap = plan.config.max_load_moved_per_broker
    lightest = sorted(
        (
            b
            for b in plan.load
            if b != source and b not in plan.full and plan.received.get(b, 0.0) < cap - EPSILON
        ),
        key=lambda b: (plan.load[b], b),
    )
    return lightest[:DESTINATIONS]


def _best_from(plan: Plan, source: BrokerId, mean: float) -> _Step | None:
    config = plan.config
    # A gap narrower than the minimum improvement, or than the band the target allows around
    # the mean (the smaller: a lightly loaded cluster is balanced by its ratios), is left.
    least_gap = min(config.min_improvement, (config.target_max_over_mean - 1) * mean)
    budget = _allowance(config.max_load_moved_per_broker, plan.sent.get(source, 0.0))
    if budget <= EPSILON:
        return None
    candidates = plan.candidates(source)
    if not candidates:
        return None
    sizes = [c.size for c in candidates]
    best: _Step | None = None
    source_load = plan.load[source]
    for destination in _destinations(plan, source):
        gap = source_load - plan.load[destination]
        if gap <= least_gap:  # destinations lightest first: no wider gap is left
            break
        room = _allowance(config.max_load_moved_per_broker, plan.received.get(destination, 0.0))
        # the source's largest bundle tells how much more a bundle weighs on the destination
        weight = _weight_there(plan, candidates[-1].usage, source, destination)
        position = bisect.bisect_left(sizes, gap / (1 + weight))
        low, high = max(0, position - NEIGHBOURS), min(len(candidates), position + NEIGHBOURS)
        for candidate in candidates[low:high]:
            if candidate.size > budget or candidate.size * weight > room:
                continue
            step = _score(plan, source, destination, ((candidate, source, destination),))
            if step is not None and (best is None or step.gain > best.gain):
                best = step
        if best is None and config.transfer_enabled:  # an unloaded pair is placed apart
            swap = _swap(plan, source, destination, candidates, sizes, min(budget, room))
            if swap is not None:
                best = swap
    return best


def _allowance(cap: float, moved: float) -> float:
    """How much more load a broker may send (or receive) in this run after ``moved``: the
    rest of the cap, without limit for its first bundle — a bundle larger than the cap would
    otherwise never leave its broker, however overloaded, nor reach an idle one."""
    return math.inf if moved <= 0.0 else cap - moved + EPSILON


def _weight_there(plan: Plan, usage: Usage, source: BrokerId, destination: BrokerId) -> float:
    """How much more a bundle of ``usage`` loads the destination than it loads the source
    (1 between brokers of the same limits, 4 from a 16-core broker to a 4-core one): the
    bundle alone on each, without the brokers' static loads. A move evens the pair out when
    the bundle's load on the source is the gap over one plus this: half the gap between
    brokers alike, less towards a smaller broker."""
    weights = plan.config.weights
    here = load_of(usage, replace(plan.capacity[source], static_load=0.0), weights)
    there = load_of(usage, replace(plan.capacity[destination], static_load=0.0), weights)
    return there / here if here > 0.0 and there > 0.0 else 1.0


def _swap(
    plan: Plan,
    source: BrokerId,
    destination: BrokerId,
    candidates: list[_Candidate],
    sizes: list[float],
    allowance: float,
) -> _Step | None:
    """A heavier bundle to the light broker and a lighter one back, netting about half the
    gap."""
    back = plan.candidates(destination)
    if not back:
        return None
    gap = plan.load[source] - plan.load[destination]
    best: _Step | None = None
    for returning in back:
        position = bisect.bisect_left(sizes, returning.size + gap / 2)
        for candidate in candidates[max(0, position - 1) : position + 1]:
            net = candidate.size - returning.size
            if net <= 0 or candidate.size > allowance + returning.size:
                continue
            step = _score(
                plan,
                source,
                destination,
                ((candidate, source, destination), (returning, destination, source)),
            )
            if step is not None and (best is None or step.gain > best.gain):
                best = step
    return best


def _score(
    plan: Plan,
    source: BrokerId,
    destination: BrokerId,
    moves: tuple[tuple[_Candidate, BrokerId, BrokerId], ...],
) -> _Step | None:
    """The move (or swap) as a step, if it is allowed and improves the pair enough."""
    usage = {source: plan.usage[source], destination: plan.usage[destination]}
    for candidate, from_broker, to_broker in moves:
        if to_broker in plan.full or not plan.may_receive(candidate.bundle, to_broker):
            return None  # a full broker receives nothing, not even a swap's way back
        usage[from_broker] = usage[from_broker].minus(candidate.usage)
        usage[to_broker] = usage[to_broker].plus(candidate.usage)
    before_source, before_destination = plan.load[source], plan.load[destination]
    after_source = plan.load_with(source, usage[source])
    after_destination = plan.load_with(destination, usage[destination])
    if before_source - max(after_source, after_destination) < _required_improvement(
        plan.config, moves, source
    ):
        return None
    gain = _spread_gain(
        plan, (before_source, before_destination), (after_source, after_destination)
    )
    if gain <= 0 or math.isnan(gain):
        return None
    return _Step(
        tuple(
            (c.bundle, from_broker, to_broker, c.usage, c.size)
            for c, from_broker, to_broker in moves
        ),
        gain,
    )


def _spread_gain(plan: Plan, before: tuple[float, float], after: tuple[float, float]) -> float:
    """How much a step lowers the brokers' squared deviations from their mean (n times the
    variance of the loads, which the std-dev target measures). Between brokers alike the
    mean stays and this is the fall in the pair's squares. A bundle moved to a smaller
    broker loads it more than it unloaded the larger one, so the mean rises too; the squares
    alone would then favour loading the larger brokers more (their minimum is where loads
    are in proportion to capacity, not equal)."""
    gain = before[0] ** 2 + before[1] ** 2 - after[0] ** 2 - after[1] ** 2
    shift = after[0] + after[1] - before[0] - before[1]
    if abs(shift) > EPSILON:  # not a rounding of equal capacities
        total = sum(plan.load.values())
        gain += shift * (2 * total + shift) / len(plan.load)
    return gain


def _required_improvement(
    config: BallastShedderConfig,
    moves: tuple[tuple[_Candidate, BrokerId, BrokerId], ...],
    source: BrokerId,
) -> float:
    """How much a step must lower the larger of the pair's loads: the configured minimum, or
    half the load the step takes off the source when that is smaller. A broker made of many
    bundles smaller than the minimum (a broker that took over a drained cluster's bundles)
    can still be relieved, one whole small bundle at a time, while a step that would only
    swap the pair's roles still fails."""
    net = sum(c.size if from_broker == source else -c.size for c, from_broker, _ in moves)
    return min(config.min_improvement, net / 2)
