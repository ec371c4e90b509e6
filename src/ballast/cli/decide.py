"""``ballast decide``: what Pulsar's load manager would decide on a load snapshot — which
bundles to shed, which to split, where to place one. The operator's what-if tool; the decisions
are printed, never carried out."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import Decision, decision_to_json
from ballast.balance.placement.select import select_broker_for_assignment
from ballast.balance.placement.strategies import (
    PLACEMENT_STRATEGIES,
    PlacementState,
    UnknownPlacementStrategy,
    placement_strategy,
)
from ballast.balance.shedding.registry import SHEDDERS, UnknownStrategy, shedding_strategy
from ballast.balance.snapshot_json import (
    ParsedSnapshot,
    parse_snapshot,
    state_with,
    strategy_state,
)
from ballast.balance.split import find_bundles_to_split, run_split_cycle
from ballast.cli.common import fail, given_path, print_json, read_text_arg, settings_from, warn
from ballast.model.bundles import InvalidBundle, canonical_bundle
from ballast.model.codec import ModelError, json_safe
from ballast.model.config import PlacementConfig, SheddingConfig, SplitConfig
from ballast.model.config.settings import PLACEMENT_ALIASES
from ballast.snapshot_files import read_snapshot_path

decide_app = typer.Typer(
    help="What Pulsar's load manager would decide on a load snapshot (nothing is carried out).",
    no_args_is_help=True,
)


class Scope(StrEnum):
    cycle = "cycle"
    strategy = "strategy"


SnapshotArg = Annotated[
    str,
    typer.Argument(
        metavar="SNAPSHOT",
        help="Snapshot JSON file, - for stdin, or a directory holding a dump of Pulsar's "
        "/loadbalance tree (brokers/, broker-time-average/, bundle-data/).",
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="broker.conf-style settings file.")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"),
]
NowOpt = Annotated[
    int | None,
    typer.Option(
        "--now-ms",
        min=0,
        max=2**63 - 1,  # a Java long, as Pulsar keeps times
        help="The current time, epoch ms (default: the wall clock).",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the random tie-breaks (placement).")]


def _wall_clock_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def load_snapshot(argument: str) -> ParsedSnapshot:
    """Read and parse SNAPSHOT; exit 2 naming the JSON path of a problem. Warnings go to
    stderr."""
    given_path(argument, "SNAPSHOT", "a snapshot file, - for stdin, or a dump directory")
    try:
        if argument == "-":
            parsed = parse_snapshot(read_text_arg(argument))
        else:
            parsed = read_snapshot_path(Path(argument))
    except OSError as exc:
        fail(f"cannot read {exc.filename or argument}: {exc.strerror or exc}")
    except ModelError as exc:
        fail(f"malformed snapshot: {exc}")
    except InvalidBundle as exc:
        fail(f"malformed snapshot: {exc}")
    for message in parsed.warnings:
        warn(message)
    return parsed


def _emit(
    decisions: Sequence[Decision], state: Mapping[str, Any], stats: Mapping[str, Any]
) -> None:
    print_json(
        json_safe(
            {
                "decisions": [decision_to_json(d) for d in decisions],
                "state": dict(state),
                "stats": dict(stats),
            }
        )
    )


def _state_of(parsed: ParsedSnapshot, key: str, type_: type[Any]) -> Any:
    try:
        return strategy_state(parsed.state, key, type_)
    except ModelError as exc:
        fail(f"malformed snapshot: {exc}")


@decide_app.command("shed")
def shed_command(
    snapshot: SnapshotArg,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help=f"{', '.join(SHEDDERS)} (Pulsar class names accepted; "
            "default: loadBalancerLoadSheddingStrategy).",
        ),
    ] = None,
    scope: Annotated[
        Scope,
        typer.Option(
            "--scope",
            help="cycle: the load manager's whole shedding cycle (grace period, policy checks, "
            "a destination for each move); strategy: the strategy's own answer.",
        ),
    ] = Scope.cycle,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    now_ms: NowOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Which bundles the shedding strategy would move off which brokers."""
    settings = settings_from(config, overrides)
    name = settings.get_str("loadBalancerLoadSheddingStrategy") if strategy is None else strategy
    try:
        shedder = shedding_strategy(name)
    except UnknownStrategy as exc:
        fail(str(exc))
    parsed = load_snapshot(snapshot)
    now = now_ms if now_ms is not None else _wall_clock_ms()
    strategy_config = shedder.config_from_settings(settings)
    state = _state_of(parsed, shedder.name, shedder.state_type)
    if scope is Scope.strategy:
        result = shedder.find(parsed.snapshot, state, strategy_config, now)
        stats = dict(result.stats)
        if result.expired_unloaded_brokers:
            stats["expiredRecentlyUnloadedBrokers"] = list(result.expired_unloaded_brokers)
        _emit(result.decisions, state_with(parsed.state, {shedder.name: result.state}), stats)
        return
    placement_state = _state_of(parsed, "placement", PlacementState)
    cycle = run_shedding_cycle(
        parsed.snapshot,
        shedder,
        state,
        strategy_config,
        shedding=SheddingConfig.from_settings(settings),
        placement=PlacementConfig.from_settings(settings),
        placement_state=placement_state,
        rng=random.Random(seed),
        now_ms=now,
    )
    updates: dict[str, Any] = {shedder.name: cycle.strategy_state}
    if shedder.modular:
        updates["placement"] = cycle.placement_state
    stats = dict(cycle.stats)
    if cycle.expired_unloaded_brokers:
        stats["expiredRecentlyUnloadedBrokers"] = list(cycle.expired_unloaded_brokers)
    _emit(cycle.decisions, state_with(parsed.state, updates), stats)


@decide_app.command("split")
def split_command(
    snapshot: SnapshotArg,
    scope: Annotated[
        Scope,
        typer.Option(
            "--scope",
            help="strategy (default): Pulsar's BundleSplitterTask; cycle: also the load "
            "manager's checks (auto split enabled, two brokers or more, bundle still splittable).",
        ),
    ] = Scope.strategy,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    now_ms: NowOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Which bundles would be split, and with which algorithm."""
    del now_ms, seed  # accepted for symmetry; the split decision uses neither
    settings = settings_from(config, overrides)
    parsed = load_snapshot(snapshot)
    split_config = SplitConfig.from_settings(settings)
    if scope is Scope.cycle:
        result = run_split_cycle(parsed.snapshot, split_config)
    else:
        result = find_bundles_to_split(parsed.snapshot, split_config)
    _emit(result.decisions, dict(parsed.state), result.stats)


@decide_app.command("place")
def place_command(
    snapshot: SnapshotArg,
    bundle: Annotated[
        str, typer.Option("--bundle", help="The bundle to place: tenant/ns/0x..._0x....")
    ],
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help=f"{', '.join(PLACEMENT_STRATEGIES)} (Pulsar class names accepted; "
            "default: loadBalancerLoadPlacementStrategy).",
        ),
    ] = None,
    non_persistent: Annotated[
        bool,
        typer.Option("--non-persistent", help="The bundle serves non-persistent topics."),
    ] = False,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    now_ms: NowOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Which broker would get BUNDLE (Pulsar's selectBrokerForAssignment)."""
    del now_ms  # placement does not depend on time
    settings = settings_from(config, overrides)
    placement = PlacementConfig.from_settings(settings)
    if strategy is not None:
        name = PLACEMENT_ALIASES.get(strategy, strategy)
        try:
            placement_strategy(name)
        except UnknownPlacementStrategy as exc:
            fail(str(exc))
        placement = dataclasses.replace(placement, strategy=name)
    try:
        name_text = canonical_bundle(bundle)
    except InvalidBundle as exc:
        fail(str(exc))
    parsed = load_snapshot(snapshot)
    namespace, _, range_text = name_text.rpartition("/")
    known = parsed.snapshot.namespaces.get(namespace)
    if known is not None and range_text not in {str(r) for r in known.ranges}:
        fail(f"bundle {name_text} is not a bundle of namespace {namespace} (see namespaces)")
    state = _state_of(parsed, "placement", PlacementState)
    result = select_broker_for_assignment(
        parsed.snapshot,
        name_text,
        placement,
        state,
        random.Random(seed),
        non_persistent=non_persistent,
    )
    stats = dict(result.stats)
    if result.preallocation is not None:
        stats["preallocation"] = {
            "bundle": result.preallocation.bundle,
            "broker": result.preallocation.broker,
            "newBundleData": result.preallocation.new_bundle_data,
        }
    decisions = [result.decision] if result.decision is not None else []
    _emit(decisions, state_with(parsed.state, {"placement": result.state}), stats)
