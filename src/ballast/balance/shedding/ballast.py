"""Ballast's own shedding strategy (``ballast``): move bundles straight to the brokers that
balance the cluster best, planning every move of a cycle on predicted loads. This module
decides when to act and keeps the strategy's memory; :mod:`.ballast_plan` plans the moves.

Goal: broker loads within a narrow band (standard deviation at most
``loadBalancerBallastTargetStd``, 0.035) with as few moves as that takes, no load chased back
and forth, and new brokers loaded at once (emptied ones within two runs). Rules:

- **Loads from traffic.** Each broker's load is predicted from the traffic it reports with the
  costs of :mod:`ballast.balance.loadmodel` (learnt from every report, blended with the last
  run's: half each), plus the bundles preallocated to it. Moves of earlier runs that the
  reports do not show yet (``pending``, explicit state) are applied to the figures: a report
  still listing a bundle it gave away, or not yet listing one it received, is corrected —
  so stale reports never trigger a second round of the same moves (Pulsar's over-unloading).
- **Hysteresis.** A run acts when the standard deviation is above
  ``loadBalancerBallastTriggerStd`` (0.045) for more than
  ``loadBalancerBallastHitCountThreshold`` (1) runs in a row — one noisy run is not enough — or
  at once when a broker is idle (below ``loadBalancerBallastIdleLoadFraction`` of the mean: a
  new or restarted broker, but see the emptied broker below; only a broker a movable bundle
  of a broker above the mean may go to counts, not one isolation keeps for others) or overloaded
  (above the overload threshold and the mean by more than the trigger). Once acting, it moves
  load until the predicted deviation is at most the target, going on at the next runs
  (without waiting for the trigger again) when the limits per run stopped it short. An
  overload alone (the spread has not yet outlasted its hit count) is only relieved: the moves
  leave overloaded brokers only and stop once none is overloaded, and the rest of the spread
  waits for the hit count like any other — under bursty load an overload is often a burst's
  peak. The rules on the mean are ratios: predicted loads carry the traffic's relative noise,
  so a broker at twice the mean is as real an imbalance at 2% load as at 50%; below a mean of
  ``MIN_MEAN_LOAD`` there is nothing to balance.
- **Swings pass first.** Each broker's load has a settled value; a broker whose load moves
  away from it by more than ``loadBalancerBallastSwingLoadFraction`` (0.1) of the mean has
  swung, and its current load becomes the settled one. Within
  ``loadBalancerBallastSwingHitCountThreshold`` (12) runs of a swing, a spread beyond the
  trigger is acted on only once it has lasted that many runs: a burst that passes sooner
  is not chased (each chase costs moves now and again when the burst ends), one that lasts
  is followed. This strategy's own moves shift the settled loads with them, so they are no
  swings. Idle and overloaded brokers never wait.
- **An emptied broker waits one run.** A broker idle with less than half the bundles it held
  at the last run was drained and restarted: in a rolling restart the next drain places its
  bundles on the emptiest broker, so this run leaves it out (neither trigger nor
  destination); at the next run, still idle, it gets load at once. A new broker does not
  wait, nor do emptied brokers when more than a tenth of the cluster is emptied at once.
- **Several brokers per run, best fit.** Repeatedly, the heaviest broker that can still give
  sends one bundle to one of the four lightest brokers that may receive it: the bundle whose
  load is closest to half their gap, examined around that point in the broker's bundles
  sorted by load. A move must lower the larger of the two loads by at least
  ``loadBalancerBallastMinImprovement`` (0.005), or by half the load it moves when that is
  smaller (so a broker holding only small bundles can still be relieved); among the
  candidates the one that lowers the sum of squared loads most wins. When no single bundle
  fits, a swap is tried (a heavier bundle one way, a lighter one back). Loads are updated
  after each move, so the next move sees them. A broker whose own report puts it above the
  overload threshold (weighted max usage) receives nothing, whatever its traffic predicts:
  something besides its bundles loads it.
- **Limits per run**: a broker sends or receives at most
  ``loadBalancerBallastMaxLoadMovedPerBroker`` (0.3) of load, except that its first bundle of
  the run may be larger (else a bundle past the cap could never leave an overloaded broker); at
  most ``loadBalancerBallastMaxMovesPerCycle`` (500) moves.
- **Never a bundle twice in the grace period.** Bundles recently unloaded (the cycle keeps
  them ``loadBalancerSheddingGracePeriodMinutes``) or still pending are not moved; neither are
  bundles of system or excluded namespaces, nor bundles without traffic. A bundle moves only to
  a broker its namespace's isolation and anti-affinity policies allow.
- **Transfers over unloads**: moves are transfers to the chosen broker (unloads only with
  ``loadBalancerTransferEnabled`` off; then no swaps, as placement decides where each
  unloaded bundle goes, and ``ballast`` placement never puts it back on the broker it left).

Worked example: brokers A, B at load 0.80 with ten bundles of 0.08 each, C and D new at 0,
all alike (capacity and costs). Mean 0.40, std 0.40; C and D are idle: act at once. A
(heaviest, first by id) sends a bundle (the one closest to half the gap: 0.08) to C: A 0.72,
C 0.08. Then B → D, A → C, B → D, A → C, B → D: each broker has now sent or received 0.24,
and one more bundle would pass the 0.3 limit. After six moves A and B are at 0.56, C and D at
0.24 (std 0.16); the balancing goes on at the next run: two more moves each way bring all
four to 0.40 (std 0) — ten moves, the fewest possible.
"""

from __future__ import annotations

import msgspec

from ballast.balance.decisions import BrokerId, JsonValue, Reason, ReasonKind, Transfer, outcome
from ballast.balance.loadmodel import (
    Capacity,
    Costs,
    Usage,
    broker_traffic,
    bundle_traffic,
    costs_from_snapshot,
    load_of,
    std,
    usage_of,
)
from ballast.balance.shedding.ballast_plan import (
    MIN_MEAN_LOAD,
    Plan,
    balance,
    beyond,
    is_overloaded,
)
from ballast.balance.shedding.common import SheddingResult
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import BallastShedderConfig

# How long a move may stay unconfirmed by the reports before it is forgotten.
PENDING_TIMEOUT_MS = 10 * 60_000
# Share of the last run's costs kept when blending in this run's fit.
COST_MEMORY = 0.5
# Share of the brokers that may be emptied at once for them to wait (a rolling restart's
# batch); at least one broker.
ROLLING_SHARE = 0.1


class PendingMove(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A move this strategy decided that the reports may not show yet (``destination``
    empty for an unload, which the next lookup places)."""

    source: str
    destination: str
    at_ms: int


class BallastState(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the strategy remembers: the learnt traffic costs, its moves the reports have not
    confirmed yet, how many runs in a row found the spread above the trigger, whether a
    balancing that has not reached the target yet is under way (it goes on at the next run),
    how many bundles each broker reported at the last run (to tell an emptied broker), each
    broker's settled load and how many runs ago one of them last swung away from it (to tell
    swinging loads; ``None``: no swing seen)."""

    costs: Costs | None = None
    pending: dict[str, PendingMove] = {}
    hit_count: int = 0
    balancing: bool = False
    held: dict[str, int] = {}
    settled: dict[str, float] = {}
    swung_runs_ago: int | None = None


def _resolve_pending(
    snapshot: LoadSnapshot, pending: dict[str, PendingMove], now_ms: int
) -> dict[str, PendingMove]:
    """The moves the reports still do not show (and not too old to matter)."""
    kept: dict[str, PendingMove] = {}
    for bundle, move in sorted(pending.items()):
        if now_ms - move.at_ms > PENDING_TIMEOUT_MS:
            continue
        if move.source not in snapshot.brokers and move.destination not in snapshot.brokers:
            continue
        at_source = bundle in snapshot.bundles_of(move.source)
        at_destination = bundle in snapshot.bundles_of(move.destination)
        if at_destination and not at_source:
            continue  # both reports show it
        if not move.destination and not at_source:
            continue  # an unload: the source's report shows it gone
        if not at_source and not at_destination and bundle not in snapshot.bundles:
            continue  # the bundle is gone (split)
        kept[bundle] = move
    return kept


def _base_usage(
    snapshot: LoadSnapshot, costs: Costs, pending: dict[str, PendingMove]
) -> dict[BrokerId, Usage]:
    usage = {
        broker: usage_of(costs, broker_traffic(snapshot, broker)) for broker in snapshot.brokers
    }
    for bundle, move in pending.items():
        at_source = move.source in usage and bundle in snapshot.bundles_of(move.source)
        owner = move.source if at_source else None
        if (
            owner is None
            and move.destination in usage
            and bundle in snapshot.bundles_of(move.destination)
        ):
            owner = move.destination
        moved = usage_of(costs, bundle_traffic(snapshot, bundle, owner))
        if at_source:
            usage[move.source] = usage[move.source].minus(moved)
        if move.destination in usage and bundle not in snapshot.bundles_of(move.destination):
            usage[move.destination] = usage[move.destination].plus(moved)
    return usage


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: BallastState, config: BallastShedderConfig, now_ms: int
) -> SheddingResult[BallastState]:
    """Ballast's shedding run (see the module docstring); brokers in snapshot order, ties
    broken by broker id and bundle name."""
    fitted = costs_from_snapshot(snapshot)
    costs = fitted if state.costs is None else state.costs.blended(fitted, COST_MEMORY)
    pending = _resolve_pending(snapshot, state.pending, now_ms)
    if len(snapshot.brokers) < 2:
        kept = BallastState(costs=costs, pending=pending, hit_count=0)
        return SheddingResult((), kept, outcome(False, ReasonKind.NO_BROKERS, "one broker"))
    capacity = {
        broker: Capacity.of_report(data.local_data, config.weights)
        for broker, data in snapshot.brokers.items()
    }
    usage = _base_usage(snapshot, costs, pending)
    load = {b: load_of(usage[b], capacity[b], config.weights) for b in snapshot.brokers}
    held = {b: len(snapshot.bundles_of(b)) for b in snapshot.brokers}
    waiting = _emptied(load, held, state.held, config)
    for broker in waiting:  # left out of this run: neither a trigger nor a destination
        del load[broker], usage[broker], capacity[broker]
    mean = sum(load.values()) / len(load)
    spread = std(load.values())
    figures: dict[str, JsonValue] = {
        "loadAvg": mean,
        "loadStd": spread,
        "pending": len(pending),
        "costs": msgspec.to_builtins(costs),
    }
    if waiting:
        figures["waiting"] = waiting
    plan = Plan(
        snapshot=snapshot,
        config=config,
        costs=costs,
        capacity=capacity,
        usage=usage,
        load=load,
        blocked=set(snapshot.recently_unloaded_bundles) | set(pending),
        full=frozenset(
            b for b in load if snapshot.overloaded(b, config.weights, config.overloaded_threshold)
        ),
    )
    below = [
        b
        for b, value in load.items()
        if mean > MIN_MEAN_LOAD and value < config.idle_load_fraction * mean
    ]
    idle = sorted(set(below) & plan.reachable(mean)) if below else []
    if plan.full:
        figures["full"] = sorted(plan.full)
    overloaded = sorted(b for b, value in load.items() if is_overloaded(config, value, mean))
    heaviest = max(load.values())
    hit = state.hit_count + 1 if beyond(config, spread, heaviest, mean, trigger=True) else 0
    figures["hitCount"] = hit
    settled, swing = _settle(load, state.settled, config.swing_load_fraction * mean)
    swung = 0 if swing else None if state.swung_runs_ago is None else state.swung_runs_ago + 1
    swinging = swung is not None and swung < config.swing_hit_count_threshold
    figures["swungRunsAgo"] = swung
    threshold = config.hit_count_threshold
    if swinging:
        threshold = max(threshold, config.swing_hit_count_threshold)
    unfinished = state.balancing and beyond(config, spread, heaviest, mean, trigger=False)
    urgent = bool(idle or overloaded) or unfinished
    if not urgent and hit <= threshold:
        if hit == 0:
            detail = (
                f"load std {spread:.4f}, max {heaviest:.3f} over mean {mean:.3f}: "
                "within the triggers"
            )
        else:
            detail = f"load spread above the trigger for {hit} run(s), threshold {threshold}"
            if swinging:
                detail += f" (loads swinging: a broker's load swung {swung} run(s) ago)"
        kept = BallastState(
            costs=costs,
            pending=pending,
            hit_count=hit,
            held=held,
            settled=settled,
            swung_runs_ago=swung,
        )
        body = {**outcome(False, ReasonKind.HIT_COUNT, detail), **figures}
        return SheddingResult((), kept, body)
    if idle:
        reason = Reason(ReasonKind.UNDERLOADED, f"broker {idle[0]} is idle ({load[idle[0]]:.3f})")
    elif overloaded:
        reason = Reason(
            ReasonKind.OVERLOADED,
            f"broker {overloaded[0]} is overloaded ({load[overloaded[0]]:.3f})",
        )
    elif hit > threshold:
        reason = Reason(
            ReasonKind.OVERLOADED,
            f"load std {spread:.4f}, max {heaviest:.3f} over mean {mean:.3f}: beyond the triggers",
        )
    else:
        reason = Reason(
            ReasonKind.OVERLOADED,
            f"balancing goes on: load std {spread:.4f}, max {heaviest:.3f} over mean {mean:.3f}",
        )
    before = dict(load)
    relief = bool(overloaded) and not idle and not unfinished and hit <= threshold
    decisions = balance(plan, reason, idle, relief=relief)
    new_pending = dict(pending)
    for move in decisions:
        if isinstance(move, Transfer):
            new_pending[str(move.bundle)] = PendingMove(
                source=move.source, destination=move.destination, at_ms=now_ms
            )
        else:  # the next lookup places it: only its leaving is known
            new_pending[str(move.bundle)] = PendingMove(
                source=move.broker, destination="", at_ms=now_ms
            )
    after = std(plan.load.values())
    figures["stdAfter"] = after
    figures["moves"] = len(decisions)
    kept = BallastState(
        costs=costs,
        pending=new_pending,
        hit_count=0 if decisions else hit,
        balancing=bool(decisions)
        and not relief
        and beyond(config, after, max(plan.load.values()), mean, trigger=False),
        held=held,
        settled={b: value + plan.load[b] - before[b] for b, value in settled.items()},
        swung_runs_ago=swung,
    )
    if decisions:
        return SheddingResult(
            tuple(decisions), kept, {**outcome(True, ReasonKind.BALANCED), **figures}
        )
    detail = "no bundle move improves the balance enough"
    return SheddingResult((), kept, {**outcome(False, ReasonKind.NO_BUNDLES, detail), **figures})


def _settle(
    load: dict[BrokerId, float], settled: dict[str, float], limit: float
) -> tuple[dict[str, float], bool]:
    """Each broker's settled load after this run, and whether one swung: its load moved away
    from its settled load by more than ``limit``, which makes the current load its settled
    one. A broker without a settled load (new, restarted, or left waiting at the last run)
    takes its current load, and that is no swing. This strategy's moves shift the settled
    loads with them (the caller), so they are never swings."""
    now: dict[str, float] = {}
    swing = False
    for broker, value in load.items():
        earlier = settled.get(broker)
        if earlier is None or abs(value - earlier) <= limit:
            now[broker] = value if earlier is None else earlier
        else:
            now[broker] = value
            swing = True
    return now, swing


def _emptied(
    load: dict[BrokerId, float],
    held: dict[BrokerId, int],
    held_before: dict[BrokerId, int],
    config: BallastShedderConfig,
) -> list[BrokerId]:
    """Brokers that are idle because they lost most of their bundles since the last run (they
    now hold less than half as many) — drained and restarted, not new. Each is left alone for
    this one run: in a rolling restart the next broker's drain is about to place its bundles
    on the emptiest broker, and filling it now would move the same share twice (once now,
    once more when the drain overfills it). At the next run it is no longer "emptied" (the
    counts were remembered) and, if still idle, gets load at once. None waits when more than
    ``ROLLING_SHARE`` of the brokers (at least one) are emptied at once."""
    if len(load) - 1 < 2:
        return []
    total = sum(load.values())
    found = []
    for broker, count in held.items():
        if 2 * count >= held_before.get(broker, 0):
            continue
        mean = (total - load[broker]) / (len(load) - 1)  # of the other brokers
        if mean > MIN_MEAN_LOAD and load[broker] < config.idle_load_fraction * mean:
            found.append(broker)
    # A rolling restart takes brokers down one or a few at a time; when more are emptied at
    # once, the restart has swept the cluster and no drains are left to refill them.
    if len(found) > max(1, int(len(load) * ROLLING_SHARE)):
        return []
    return sorted(found)
