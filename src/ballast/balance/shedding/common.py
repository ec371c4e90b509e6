"""What the shedding strategies share: the result type, the empty state, Java's integer
arithmetic where Pulsar relies on it, and the "pick the heaviest bundles until enough traffic
is marked" helper of Pulsar's Overload and Threshold shedders."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec

from ballast.balance.decisions import BrokerId, JsonValue, Move, ReasonKind, outcome
from ballast.balance.snapshot import LoadSnapshot, is_system_namespace

S = TypeVar("S")

# Pulsar's ADDITIONAL_THRESHOLD_PERCENT_MARGIN: shed 5% more than the excess, so the broker
# does not end up just at the threshold.
ADDITIONAL_THRESHOLD_PERCENT_MARGIN = 0.05

_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1


class NoState(msgspec.Struct, frozen=True):
    """The state of a strategy that remembers nothing between runs."""


@dataclass(frozen=True, slots=True)
class SheddingResult(Generic[S]):
    """One run of a shedding strategy: the moves in the order the strategy chose them, the
    state to pass to the next run, figures for operators, and the recently-unloaded brokers
    whose cool-down the strategy found over (the caller drops them from its map, as Pulsar's
    TransferShedder does in place)."""

    decisions: tuple[Move, ...]
    state: S
    stats: Mapping[str, JsonValue]
    expired_unloaded_brokers: tuple[BrokerId, ...] = ()


def flagged_outcome(
    decided: bool, flagged: Mapping[str, JsonValue], none_text: str
) -> dict[str, JsonValue]:
    """The outcome of a strategy that flags brokers, then sheds from those it may
    (``flagged``: each one's figures, with ``skipped`` when it was passed over): ``Balanced``
    when none was flagged, ``NoBundles`` naming why when every flagged one was skipped."""
    if decided or not flagged:
        return outcome(decided, ReasonKind.BALANCED, none_text)
    # One flagged and not skipped had no bundle the strategy may move (recently unloaded,
    # of a system namespace...).
    reasons = "; ".join(
        f"{broker}: {figures.get('skipped', 'no bundle that may move')}"
        if isinstance(figures, Mapping)
        else broker
        for broker, figures in flagged.items()
    )
    return outcome(False, ReasonKind.NO_BUNDLES, f"every flagged broker was skipped ({reasons})")


def java_int(value: float) -> int:
    """Java's ``(int) double``: NaN is 0, values beyond the int range saturate, the rest
    truncate toward zero."""
    if math.isnan(value):
        return 0
    if value >= _INT_MAX:
        return _INT_MAX
    if value <= _INT_MIN:
        return _INT_MIN
    return int(value)


def java_int_add(left: int, right: int) -> int:
    """Java ``int`` addition, which wraps around on overflow."""
    return (left + right + 2**31) % 2**32 - 2**31


def sheddable_bundles_by(
    snapshot: LoadSnapshot,
    broker: BrokerId,
    metric: str,
) -> list[tuple[str, float]]:
    """The broker's bundles that have bundle data, are not recently unloaded and are not in a
    system namespace (Pulsar's ``getBundleDataForLoadShedding`` filtered to the broker), with
    their short-term ``metric`` (``"throughput"`` or ``"rate"``), heaviest first.

    Pulsar sorts a stream of its bundle-data map stably; equal values keep the order of
    ``snapshot.bundles`` here. Cost: O(b log b) for the broker's b bundles."""
    order = snapshot.index.bundle_order
    recent = snapshot.recently_unloaded_bundles
    candidates: list[tuple[str, float]] = []
    for bundle in snapshot.bundles_of(broker):
        data = snapshot.bundles.get(bundle)
        if data is None or bundle in recent:
            continue
        if is_system_namespace(bundle.rpartition("/")[0]):
            continue
        short = data.short_term_data
        value = (
            short.msg_throughput_in + short.msg_throughput_out
            if metric == "throughput"
            else short.msg_rate_in + short.msg_rate_out
        )
        candidates.append((bundle, value))
    candidates.sort(key=lambda item: (-item[1], order[item[0]]))
    return candidates


def select_until_offloaded(
    candidates: Sequence[tuple[str, float]], minimum_to_offload: float
) -> list[tuple[str, float]]:
    """Pulsar's selection loop: walk the candidates heaviest first, taking each while less
    than ``minimum_to_offload`` is marked; at least one is always taken."""
    chosen: list[tuple[str, float]] = []
    marked = 0.0
    for bundle, throughput in candidates:
        # Pulsar re-tests ``marked < minimum || nothing selected`` for every bundle; marked
        # only grows, so once the test fails it fails for the rest.
        if not (marked < minimum_to_offload or not chosen):
            break
        chosen.append((bundle, throughput))
        marked += throughput
    return chosen
