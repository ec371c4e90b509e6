"""The decisions the balance layer returns, and why each was taken.

A decision is a value: the strategy that made it never performs it. ``Unload`` releases a bundle
(placement chooses the next owner later), ``Transfer`` moves it to a chosen broker, ``Split``
cuts it, ``Assign`` gives an unowned bundle an owner. Each carries a :class:`Reason`: readable
text for operators and a :class:`ReasonKind` for code and metrics (the kinds of Pulsar's
``UnloadDecision.Reason``, plus the split and placement kinds).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from ballast.model.bundles import BundleName

BrokerId: TypeAlias = str
"""A broker as Pulsar names it: ``host:port`` of its web service (any string is accepted)."""

JsonValue: TypeAlias = (
    str | int | float | bool | Sequence["JsonValue"] | Mapping[str, "JsonValue"] | None
)
"""A JSON-ready value, for the figures (``stats``) strategies report."""


class ReasonKind(enum.Enum):
    """Why a decision was taken, or why a run decided nothing.

    The first ten are Pulsar's ``UnloadDecision.Reason`` values (the extensible load manager's
    unload counters use them); the others name the split threshold that was crossed (or, for
    ``MaxBundles``, the namespace's bundle limit that kept a split from happening) and how a
    broker was chosen for a bundle.
    """

    OVERLOADED = "Overloaded"
    UNDERLOADED = "Underloaded"
    BALANCED = "Balanced"
    NO_BUNDLES = "NoBundles"
    COOL_DOWN = "CoolDown"
    OUTDATED_DATA = "OutDatedData"
    NO_LOAD_DATA = "NoLoadData"
    NO_BROKERS = "NoBrokers"
    HIT_COUNT = "HitCount"
    UNKNOWN = "Unknown"
    TOPICS = "Topics"
    SESSIONS = "Sessions"
    MSG_RATE = "MsgRate"
    BANDWIDTH = "Bandwidth"
    MAX_BUNDLES = "MaxBundles"
    PREALLOCATED = "Preallocated"
    LEAST_LOADED = "LeastLoaded"
    ROUND_ROBIN = "RoundRobin"
    PAIRED = "Paired"
    RANDOM = "Random"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Reason:
    """``kind`` for code, ``text`` for people (``"broker usage 91.2% >= threshold 85%"``)."""

    kind: ReasonKind
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Unload:
    """Release ``bundle`` from ``broker``; the next lookup places it."""

    bundle: BundleName
    broker: BrokerId
    reason: Reason


@dataclass(frozen=True, slots=True)
class Transfer:
    """Move ``bundle`` from ``source`` to ``destination``."""

    bundle: BundleName
    source: BrokerId
    destination: BrokerId
    reason: Reason


@dataclass(frozen=True, slots=True)
class Split:
    """Cut ``bundle`` (owned by ``broker``) with the named split algorithm."""

    bundle: BundleName
    broker: BrokerId
    algorithm: str
    reason: Reason


@dataclass(frozen=True, slots=True)
class Assign:
    """Give ``bundle`` to ``broker``."""

    bundle: BundleName
    broker: BrokerId
    reason: Reason


Move: TypeAlias = Unload | Transfer
Decision: TypeAlias = Unload | Transfer | Split | Assign


def decision_to_json(decision: Decision) -> dict[str, JsonValue]:
    """The output form of ``ballast decide``: ``{"action", "bundle", "broker",
    "destination"?, "algorithm"?, "reason", "reasonKind"}`` with the bundle in canonical
    (lowercase) form and ``broker`` the current owner (the source of a transfer)."""
    body: dict[str, JsonValue]
    if isinstance(decision, Unload):
        body = {"action": "unload", "bundle": str(decision.bundle), "broker": decision.broker}
    elif isinstance(decision, Transfer):
        body = {
            "action": "transfer",
            "bundle": str(decision.bundle),
            "broker": decision.source,
            "destination": decision.destination,
        }
    elif isinstance(decision, Split):
        body = {
            "action": "split",
            "bundle": str(decision.bundle),
            "broker": decision.broker,
            "algorithm": decision.algorithm,
        }
    else:
        body = {"action": "assign", "bundle": str(decision.bundle), "broker": decision.broker}
    body["reason"] = decision.reason.text
    body["reasonKind"] = decision.reason.kind.value
    return body


def outcome(decided: bool, skip_reason: ReasonKind, skip_text: str = "") -> dict[str, JsonValue]:
    """The ``outcome`` / ``reason`` figures every shedding strategy, shedding cycle and split
    check reports: ``Success`` when it decided something, else ``Skip`` and why."""
    if decided:
        return {"outcome": "Success"}
    body: dict[str, JsonValue] = {"outcome": "Skip", "reason": skip_reason.value}
    if skip_text:
        body["detail"] = skip_text
    return body


def percent(fraction: float) -> str:
    """A load fraction as a readable percentage (``0.912`` → ``91.2%``)."""
    return f"{fraction * 100:.1f}%"


def mib(bytes_per_s: float) -> str:
    """A throughput in MiB/s, for reasons."""
    return f"{bytes_per_s / (1024 * 1024):.2f} MiB/s"
