"""TransferShedder (Pulsar's extensible load manager, PIP-192/220): pair the most loaded broker
with the least loaded one and move load between them until the spread of broker load is small.

Goal: standard deviation of broker load (``weightedMaxEMA``) at most
``loadBalancerBrokerLoadTargetStd`` (0.25), without repeated moves. Rules:

- load statistics over the brokers' load averages (:mod:`.transfer_data`): data older than
  ``loadBalancerBrokerLoadDataTTLInSeconds`` is left out (``OutDatedData`` if nothing is left);
  a recently unloaded broker whose data is less than ``loadBalanceSheddingDelayInSeconds``
  newer than its move stops the whole run (``CoolDown``); older entries are dropped from the
  recently-unloaded map (returned in ``expired_unloaded_brokers``);
- ``hitCount`` (explicit state) counts consecutive runs where std > target, or the lightest
  broker is underloaded (load < avg * m, or throughput < heaviest's * m, with
  ``m = min(0.5, target / 2)``), or the heaviest is overloaded (load above the overload
  threshold and above avg + target); it resets otherwise; nothing happens until it exceeds
  ``loadBalancerSheddingConditionHitCountThreshold`` (3);
- up to ``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` (3) pairs, heaviest ↔ lightest, then
  the next heaviest ↔ the next lightest, while the reason holds (std above target:
  ``Overloaded``; lightest underloaded: ``Underloaded``; heaviest overloaded: ``Overloaded``);
- per pair, move ``(maxLoad - minLoad) / 2`` worth of the heavy broker's throughput, walking its
  top bundles lightest first: skip bundles it does not own, of excluded namespaces, recently
  unloaded, not transferable to the light broker, or with zero throughput; never move its last
  top bundle; a bundle that would overshoot is moved only if a swap of light-broker bundles
  (not recently unloaded: a guard Pulsar's swap lacks, kept so no move breaks a grace period)
  back balances the pair (each kept while both brokers stay under the heavy broker's
  throughput; success when the light broker ends at most at the heavy one and the heavy one
  below 75% of its throughput), else the pair stops;
- with ``loadBalancerTransferEnabled`` moves are transfers to the light broker, else unloads;
- after a pair the statistics are updated as if the moved load had arrived.

Brokers are visited in the order Pulsar's load store (a Java hash map of broker ids) iterates
(:mod:`ballast.balance.javamap`), both to sum loads and as the base of the stable sort by load;
a run with decisions resets ``hitCount`` to 0.

Worked example (Pulsar's ``testRecentlyUnloadedBrokers``): loads 0.02, 0.04, 0.06, 0.80, 0.90
(avg 0.364, std 0.398 > 0.25), hit threshold 0: broker5 (0.90, 9 MB/s) pairs with broker1
(0.02): it should move 9 MB/s * 0.44 / 0.9 = 4.4 MB/s; its lighter bundle (2 MB/s) goes to
broker1, its heavier one would be its last top bundle. Then broker4 pairs with broker2 the same
way; broker3 is left alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from ballast.balance.decisions import (
    BrokerId,
    JsonValue,
    Move,
    Reason,
    ReasonKind,
    Transfer,
    Unload,
    outcome,
    percent,
)
from ballast.balance.javamap import java_hash_map_order
from ballast.balance.shedding.common import SheddingResult
from ballast.balance.shedding.transfer_data import (
    ReportedLoad,
    TopBundle,
    TransferState,
    broker_loads,
    is_transferable,
    top_bundles,
)
from ballast.balance.snapshot import BrokerLoad, LoadSnapshot, bundle_name, bundle_namespace
from ballast.model.config import TransferShedderConfig
from ballast.model.loaddata.usage import java_divide

# Pulsar's swap rule: a swap must bring the heavy broker below 75% of its throughput.
SWAP_TARGET = 0.75


def _java_sqrt(value: float) -> float:
    return math.sqrt(value) if value >= 0 else math.nan


def _java_max(left: float, right: float) -> float:
    if math.isnan(left) or math.isnan(right):
        return math.nan
    return max(left, right)


@dataclass
class _LoadStats:
    """Pulsar's ``LoadStats`` for one run (local scratch, never shared)."""

    loads: dict[BrokerId, BrokerLoad]
    ordered: list[BrokerId]
    count: int = 0
    avg: float = 0.0
    std: float = 0.0
    sq_sum: float = 0.0
    max_index: int = 0
    min_index: int = 0
    shed: int = 0
    trail: list[float] = field(default_factory=list)

    def offload(self, max_load: float, min_load: float, moved: float) -> None:
        self.sq_sum -= max_load * max_load + min_load * min_load
        lighter = _java_max(0.0, max_load - moved)
        heavier = min_load + moved
        self.sq_sum += lighter * lighter + heavier * heavier
        self.std = _java_sqrt(abs(self.sq_sum / self.count - self.avg * self.avg))
        self.shed += 1
        self.min_index += 1
        self.trail.append(self.std)


def _underloaded(stats: _LoadStats, broker: BrokerId, multiplier: float) -> bool:
    load = stats.loads[broker]
    if load.weighted_max_ema < stats.avg * multiplier:
        return True
    heaviest = stats.loads[stats.ordered[stats.max_index]]
    return load.msg_throughput_ema < heaviest.msg_throughput_ema * multiplier


def _overloaded(stats: _LoadStats, broker: BrokerId, config: TransferShedderConfig) -> bool:
    load = stats.loads[broker].weighted_max_ema
    return load > config.overloaded_threshold and load > stats.avg + config.target_std


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: TransferState, config: TransferShedderConfig, now_ms: int
) -> SheddingResult[TransferState]:
    """Pulsar's ``TransferShedder.findBundlesForUnloading``; the available brokers are the
    snapshot's brokers."""
    loads, reported = broker_loads(snapshot, state, config)
    # Pulsar walks its load store (a Java hash map) to sum loads and to build the list it
    # sorts (stably) by load; the same order gives the same sums to the last bit.
    store_order = java_hash_map_order(loads)
    ordered = sorted(store_order, key=lambda broker: loads[broker].weighted_max_ema)
    stats = _LoadStats(loads=loads, ordered=ordered, max_index=len(ordered) - 1)
    recent = snapshot.recently_unloaded_brokers
    expired: list[BrokerId] = []
    skip: ReasonKind | None = None
    total = 0.0
    sq_sum = 0.0
    for broker in store_order:
        load = loads[broker]
        if now_ms - load.updated_at_ms > config.load_data_ttl_ms:
            skip = ReasonKind.OUTDATED_DATA
            continue
        if broker in recent:
            if load.updated_at_ms - recent[broker] < config.shedding_delay_ms:
                detail = f"{broker} moved load less than the shedding delay ago"
                return _skipped(state, loads, reported, ReasonKind.COOL_DOWN, detail, expired)
            expired.append(broker)
        total += load.weighted_max_ema
        sq_sum += load.weighted_max_ema * load.weighted_max_ema
        stats.count += 1
    if stats.count == 0:
        kind = skip or ReasonKind.NO_BROKERS
        return _skipped(state, loads, reported, kind, "no broker load", expired)
    stats.avg = total / stats.count
    stats.sq_sum = sq_sum
    stats.std = _java_sqrt(sq_sum / stats.count - stats.avg * stats.avg)
    figures: dict[str, JsonValue] = {
        "loadAvg": stats.avg,
        "loadStd": stats.std,
        "brokersByLoad": [[b, loads[b].weighted_max_ema] for b in ordered],
    }
    target = config.target_std
    multiplier = min(0.5, max(0.0, target / 2.0))
    hit = state.hit_count
    if (
        stats.std > target
        or _underloaded(stats, ordered[0], multiplier)
        or _overloaded(stats, ordered[-1], config)
    ):
        hit += 1
    else:
        hit = 0
    figures["hitCount"] = hit
    if hit <= config.hit_count_threshold:
        detail = f"condition hit {hit} time(s), threshold {config.hit_count_threshold}"
        new_state = TransferState(hit_count=hit, broker_load=loads, last_reported=reported)
        body = {**outcome(False, ReasonKind.HIT_COUNT, detail), **figures}
        return SheddingResult((), new_state, body, tuple(expired))
    decisions: list[Move] = []
    empty_data = 0
    few_bundles = 0
    while stats.shed < config.max_brokers_per_cycle and stats.min_index < stats.max_index:
        if stats.std > target:
            reason = Reason(
                ReasonKind.OVERLOADED, f"load std {stats.std:.4f} > target std {target:g}"
            )
        elif _underloaded(stats, ordered[stats.min_index], multiplier):
            reason = Reason(
                ReasonKind.UNDERLOADED,
                f"broker {ordered[stats.min_index]} is underloaded "
                f"(load or throughput below {multiplier:g} of the average or the heaviest)",
            )
        elif _overloaded(stats, ordered[stats.max_index], config):
            heaviest = ordered[stats.max_index]
            reason = Reason(
                ReasonKind.OVERLOADED,
                f"broker {heaviest} load {percent(loads[heaviest].weighted_max_ema)} > "
                f"{percent(config.overloaded_threshold)} and > average + target std",
            )
        else:
            break
        max_broker = ordered[stats.max_index]
        stats.max_index -= 1
        min_broker = ordered[stats.min_index]
        moved, outcome_kind = _shed_pair(
            snapshot, config, stats, max_broker=max_broker, min_broker=min_broker, reason=reason
        )
        decisions.extend(moved)
        if outcome_kind == "empty":
            empty_data += 1
        elif outcome_kind == "few":
            few_bundles += 1
    figures["stdAfter"] = list(stats.trail)
    if decisions:
        body = {**outcome(True, ReasonKind.BALANCED), **figures}
        new_state = TransferState(hit_count=0, broker_load=loads, last_reported=reported)
        return SheddingResult(tuple(decisions), new_state, body, tuple(expired))
    if empty_data > 0:
        kind, detail = ReasonKind.NO_LOAD_DATA, "a broker has no top-bundle data"
    elif few_bundles > 0:
        kind, detail = ReasonKind.NO_BUNDLES, "no bundle of the heavy brokers can move"
    else:
        kind, detail = ReasonKind.HIT_COUNT, "the cluster load meets the target"
    new_state = TransferState(hit_count=hit, broker_load=loads, last_reported=reported)
    return SheddingResult(
        (), new_state, {**outcome(False, kind, detail), **figures}, tuple(expired)
    )


def _skipped(
    state: TransferState,
    loads: dict[BrokerId, BrokerLoad],
    reported: dict[BrokerId, ReportedLoad],
    kind: ReasonKind,
    detail: str,
    expired: list[BrokerId],
) -> SheddingResult[TransferState]:
    new_state = TransferState(hit_count=state.hit_count, broker_load=loads, last_reported=reported)
    return SheddingResult((), new_state, outcome(False, kind, detail), tuple(expired))


def _shed_pair(
    snapshot: LoadSnapshot,
    config: TransferShedderConfig,
    stats: _LoadStats,
    *,
    max_broker: BrokerId,
    min_broker: BrokerId,
    reason: Reason,
) -> tuple[list[Move], str]:
    """Move load from ``max_broker`` to ``min_broker``; returns the moves and ``"moved"``,
    ``"empty"`` (no top-bundle data) or ``"few"`` (nothing could move)."""
    max_load = stats.loads[max_broker].weighted_max_ema
    min_load = stats.loads[min_broker].weighted_max_ema
    offload = (max_load - min_load) / 2
    max_local = snapshot.local(max_broker)
    min_local = snapshot.local(min_broker)
    max_throughput = max_local.msg_throughput_in + max_local.msg_throughput_out
    min_throughput = min_local.msg_throughput_in + min_local.msg_throughput_out
    offload_throughput = java_divide(max_throughput * offload, max_load)
    heavy_top = top_bundles(snapshot, max_broker, config)
    if not heavy_top:
        return [], "empty"
    if len(heavy_top) == 1:
        return [], "few"
    light_top = iter(top_bundles(snapshot, min_broker, config))
    moves: list[Move] = []
    marked = 0.0
    gained = 0.0
    remaining = len(heavy_top)
    recent = snapshot.recently_unloaded_bundles
    for bundle, bundle_stats in heavy_top:
        if snapshot.owner(bundle) != max_broker:
            continue
        if bundle_namespace(bundle) in config.excluded_namespaces or bundle in recent:
            continue
        if not is_transferable(snapshot, config, bundle, max_broker, min_broker):
            continue
        if remaining <= 1:
            break
        throughput = bundle_stats.msg_throughput_in + bundle_stats.msg_throughput_out
        if throughput == 0:
            continue
        swapped: list[str] = []
        swapped_throughput = 0.0
        if marked - gained + throughput > offload_throughput:
            swapped, swapped_throughput = _find_swap(
                snapshot,
                config,
                light_top,
                max_broker=max_broker,
                min_broker=min_broker,
                max_new=max_throughput - marked + gained - throughput,
                min_new=min_throughput + marked - gained + throughput,
                max_throughput=max_throughput,
            )
            if not swapped:
                break
        if config.transfer_enabled:
            for light_bundle in swapped:
                moves.append(Transfer(bundle_name(light_bundle), min_broker, max_broker, reason))
            if swapped and config.debug_mode:
                # Pulsar counts the swapped traffic only when debug mode is on.
                gained += swapped_throughput
            moves.append(Transfer(bundle_name(bundle), max_broker, min_broker, reason))
        else:
            moves.append(Unload(bundle_name(bundle), max_broker, reason))
        marked += throughput
        remaining -= 1
    if marked > 0:
        stats.offload(max_load, min_load, java_divide((marked - gained) * max_load, max_throughput))
        return moves, "moved"
    return moves, "few"


def _find_swap(
    snapshot: LoadSnapshot,
    config: TransferShedderConfig,
    light_top: Iterator[TopBundle],
    *,
    max_broker: BrokerId,
    min_broker: BrokerId,
    max_new: float,
    min_new: float,
    max_throughput: float,
) -> tuple[list[str], float]:
    """Walk the light broker's top bundles (one iterator per pair, so a later attempt resumes
    where this one stopped) looking for bundles to send back so that moving the heavy bundle
    still balances the pair. Returns the bundles and their throughput, or nothing."""
    if not config.transfer_enabled:
        return [], 0.0
    chosen: list[str] = []
    chosen_throughput = 0.0
    recent = snapshot.recently_unloaded_bundles
    for light_bundle, light_stats in light_top:
        # Deliberate guard Pulsar lacks here: it checks recently unloaded bundles on the heavy
        # side only, so a swap could send back a bundle still in its grace period.
        if light_bundle in recent:
            continue
        if not is_transferable(snapshot, config, light_bundle, min_broker, max_broker):
            continue
        throughput = light_stats.msg_throughput_in + light_stats.msg_throughput_out
        max_candidate = max_new + throughput
        min_candidate = min_new - throughput
        if max_candidate < max_throughput and min_candidate < max_throughput:
            chosen.append(light_bundle)
            max_new, min_new = max_candidate, min_candidate
            chosen_throughput += throughput
            if min_new <= max_new < max_throughput * SWAP_TARGET:
                return chosen, chosen_throughput
    return [], 0.0
