"""Importers: turn load data written elsewhere into history snapshots.

``pulsar-dump``: a copy of a Pulsar cluster's ``/loadbalance`` tree as files, one file per
node holding the node's JSON::

    <dump>/brokers/<broker>                         LocalBrokerData
    <dump>/broker-time-average/<broker>             TimeAverageBrokerData
    <dump>/bundle-data/<tenant>/<ns>/<range>        BundleData (v1: <tenant>/<cluster>/<ns>/<range>)

``<dump>`` may also be a directory that contains ``loadbalance/``. Other nodes are ignored.
The whole dump is one snapshot: brokers and their bundles (from each report's ``lastStats``),
plus the leader's stored bundle and broker averages (a reporting broker without stored averages
gets them computed from its bundles' data, as the leader does). A dump has no per-topic load.

``decide-snapshot``: a snapshot file of ``ballast decide`` (the JSON of
:mod:`ballast.balance.snapshot_json`), read exactly as ``ballast decide`` reads it: brokers and
their bundles, the bundle data (``bundles``) and the brokers' time averages (``timeAverages``,
or computed from the bundle data when absent, as decide does). A bundle a report lists in
``bundles`` without ``lastStats`` (hand-made snapshots) is written with zero load. The parts a
history has no table for (recently unloaded bundles and brokers, namespaces, policies,
``brokerLoadData``, strategy ``state``) are left out, with a warning each.

Importers are registered by name in :data:`IMPORTERS`; :func:`detect_format` tells them apart
by content (a directory is a dump, a JSON object with ``brokers`` a decide snapshot).

Pure apart from reading the given path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ballast.balance.snapshot import reported_bundles
from ballast.balance.snapshot_json import KNOWN_KEYS, is_metadata_dump, parse_snapshot
from ballast.model.bundles import InvalidBundle, canonical_bundle
from ballast.model.codec import ModelError
from ballast.model.loaddata import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
)
from ballast.pipeline.history import (
    HistoryError,
    HistorySnapshot,
    broker_average_row,
    broker_row,
    bundle_average_row,
    bundle_rows,
)
from ballast.pipeline.synthetic_spec import LAST_MS


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """``cluster`` names the source cluster; ``snapshot_ms`` fixes the snapshot time (None:
    the source's own time, for a Pulsar dump the newest ``lastUpdate`` of its reports)."""

    cluster: str
    snapshot_ms: int | None = None


def _loadbalance_root(path: Path) -> Path:
    if not path.is_dir():
        raise HistoryError(f"{path} is not a directory")
    nested = path / "loadbalance"
    return nested if nested.is_dir() else path


def _files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith("."))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise HistoryError(f"cannot read {path}: {exc.strerror or exc}") from None


def _snapshot_time(
    options: ImportOptions, reports: Mapping[str, LocalBrokerData], none_there: str
) -> int:
    """The snapshot's time: ``options.snapshot_ms``, or else the newest ``lastUpdate`` of the
    reports. ``none_there`` says what holds no reports when there are none to take it from."""
    if options.snapshot_ms is not None:
        return options.snapshot_ms
    if not reports:
        raise HistoryError(f"{none_there} to take the snapshot time from; give it (--at)")
    newest = max(report.last_update for report in reports.values())
    if newest <= 0:  # no report says when it was made: 1970 would be a guess
        raise HistoryError(
            "no broker report has a lastUpdate to take the snapshot time from; give it (--at)"
        )
    if newest > LAST_MS:  # a clock gone wrong, or a lastUpdate in another unit
        raise HistoryError(
            f"the newest lastUpdate of the broker reports, {newest}, is after 9999-12-31 "
            "(UTC); give the snapshot time (--at)"
        )
    return newest


def import_pulsar_dump(path: Path, options: ImportOptions) -> HistorySnapshot:
    """One snapshot from a ``/loadbalance`` dump (see the module docstring). Raises
    :class:`HistoryError` naming the file and JSON path of anything it cannot read, or when
    the dump has no reports and no ``snapshot_ms`` was given."""
    root = _loadbalance_root(path)
    # A history's tables hold Parquet files (one found is enough); a dump's nodes are JSON.
    if any(next((root / table).glob("**/*.parquet"), None) for table in ("brokers", "bundles")):
        raise HistoryError(
            f"{path} is a history (Parquet tables), not a dump of /loadbalance: "
            "give it to a job as --history"
        )
    reports: dict[str, LocalBrokerData] = {}
    for file in _files(root / "brokers"):
        broker = file.relative_to(root / "brokers").as_posix()
        try:
            reports[broker] = LocalBrokerData.from_json(_read(file))
        except ModelError as exc:
            raise HistoryError(f"{file}: {exc}") from None
    averages: dict[str, TimeAverageBrokerData] = {}
    for file in _files(root / "broker-time-average"):
        broker = file.relative_to(root / "broker-time-average").as_posix()
        try:
            averages[broker] = TimeAverageBrokerData.from_json(_read(file))
        except ModelError as exc:
            raise HistoryError(f"{file}: {exc}") from None
    bundle_data: dict[str, BundleData] = {}
    for file in _files(root / "bundle-data"):
        relative = file.relative_to(root / "bundle-data").as_posix()
        try:
            bundle = canonical_bundle(relative)
        except InvalidBundle as exc:
            raise HistoryError(f"{file}: not a bundle path: {exc}") from None
        try:
            bundle_data[bundle] = BundleData.from_json(_read(file))
        except ModelError as exc:
            raise HistoryError(f"{file}: {exc}") from None
    if not (reports or averages or bundle_data):
        raise HistoryError(
            f"{path} holds no load data (brokers/, broker-time-average/, bundle-data/): "
            "nothing to import"
        )
    return HistorySnapshot(
        snapshot_ms=_snapshot_time(
            options, reports, f"{path} holds no broker reports (brokers/<id>)"
        ),
        cluster=options.cluster,
        brokers=tuple(broker_row(b, r) for b, r in sorted(reports.items())),
        bundles=tuple(row for b, r in sorted(reports.items()) for row in bundle_rows(b, r)),
        bundle_averages=tuple(bundle_average_row(b, d) for b, d in sorted(bundle_data.items())),
        broker_averages=tuple(
            broker_average_row(b, a, len(reports[b].last_stats) if b in reports else 0)
            for b, a in sorted(_with_missing_averages(averages, reports, bundle_data).items())
        ),
    )


def _with_missing_averages(
    averages: Mapping[str, TimeAverageBrokerData],
    reports: Mapping[str, LocalBrokerData],
    bundle_data: Mapping[str, BundleData],
) -> dict[str, TimeAverageBrokerData]:
    """The stored broker averages, and for each reporting broker without one, the averages
    computed from its bundles' data, as Pulsar's leader does on every update (and as a
    decide snapshot without ``timeAverages`` is read)."""
    computed = {
        broker: TimeAverageBrokerData.from_bundles(sorted(reported_bundles(report)), bundle_data)
        for broker, report in reports.items()
        if broker not in averages
    }
    return {**averages, **computed}


# Parts of a decide snapshot the history tables hold; a warning names each of the others.
KEPT = ("brokers", "timeAverages", "bundles")
NOT_KEPT = tuple(key for key in KNOWN_KEYS if key not in KEPT)


def read_decide_snapshot(
    path: Path, options: ImportOptions
) -> tuple[HistorySnapshot, tuple[str, ...]]:
    """One snapshot from a ``ballast decide`` snapshot file, and warnings (the file's own, and
    one per part the history does not keep). The snapshot time is ``options.snapshot_ms`` or
    else the newest ``lastUpdate`` of the brokers. Raises :class:`HistoryError` naming the
    JSON path of a problem."""
    if not path.is_file():
        raise HistoryError(f"{path} is not a file")
    data = _read(path)
    try:
        parsed = parse_snapshot(data)
        raw = msgspec.json.decode(data)
    except (ModelError, InvalidBundle) as exc:
        raise HistoryError(f"{path}: malformed snapshot: {exc}") from None
    warnings = list(parsed.warnings)
    warnings.extend(f"{key} is not kept in a history; left out" for key in NOT_KEPT if raw.get(key))
    snapshot = parsed.snapshot
    reports = {broker: _with_stats(data.local_data) for broker, data in snapshot.brokers.items()}
    unreported = sum(
        len(report.last_stats) - len(snapshot.local(broker).last_stats)
        for broker, report in reports.items()
    )
    if unreported:
        # ``ballast`` reads a bundle's load from its owner's report first, so a bundle it
        # would have weighed by the leader's averages is idle once imported.
        warnings.append(
            f"{unreported} bundles listed without lastStats are written with zero load; "
            "strategies that read each bundle's reported load see them idle"
        )
    if not (reports or snapshot.bundles):
        raise HistoryError(f"{path} holds no brokers and no bundles: nothing to import")
    history = HistorySnapshot(
        snapshot_ms=_snapshot_time(options, reports, f"{path} holds no brokers"),
        cluster=options.cluster,
        brokers=tuple(broker_row(b, r) for b, r in sorted(reports.items())),
        bundles=tuple(row for b, r in sorted(reports.items()) for row in bundle_rows(b, r)),
        bundle_averages=tuple(
            bundle_average_row(b, d) for b, d in sorted(snapshot.bundles.items())
        ),
        broker_averages=tuple(
            broker_average_row(b, d.time_average_data, len(d.local_data.last_stats))
            for b, d in sorted(snapshot.brokers.items())
        ),
    )
    return history, tuple(warnings)


def _with_stats(report: LocalBrokerData) -> LocalBrokerData:
    """A report whose ``lastStats`` covers every bundle it lists: a bundle a hand-made
    snapshot names only in ``bundles`` is written with zero load (a history row needs stats;
    the balancing code reads the same set of served bundles either way)."""
    missing = report.bundles - report.last_stats.keys()
    if not missing:
        return report
    stats = {bundle: NamespaceBundleStats() for bundle in missing}
    return msgspec.structs.replace(report, last_stats={**stats, **report.last_stats})


def import_decide_snapshot(path: Path, options: ImportOptions) -> HistorySnapshot:
    """:func:`read_decide_snapshot` without its warnings."""
    return read_decide_snapshot(path, options)[0]


def detect_format(path: Path) -> str:
    """The importer for ``path`` by its content: a directory is a ``pulsar-dump``; a file
    holding a JSON object with ``brokers`` is a ``decide-snapshot``, one with ``root`` and
    ``records`` a ``metadata-dump`` (``ballast metadata dump /loadbalance``)."""
    if path.is_dir():
        return "pulsar-dump"
    if not path.is_file():
        raise HistoryError(f"{path} does not exist")
    try:
        obj = msgspec.json.decode(_read(path))
    except (msgspec.DecodeError, RecursionError) as exc:
        raise HistoryError(
            f"{path} is neither a dump directory nor a JSON snapshot: not valid JSON ({exc})"
        ) from None
    if isinstance(obj, dict) and "brokers" in obj:
        return "decide-snapshot"
    if is_metadata_dump(obj):
        return "metadata-dump"
    raise HistoryError(
        f"{path} is JSON but neither a ballast decide snapshot (no brokers) nor a metadata dump"
    )


Importer = Callable[[Path, ImportOptions], HistorySnapshot]

IMPORTERS: dict[str, Importer] = {
    "pulsar-dump": import_pulsar_dump,
    "decide-snapshot": import_decide_snapshot,
    # read as ballast decide reads it: its /loadbalance records make the snapshot
    "metadata-dump": import_decide_snapshot,
}


def importer(name: str) -> Importer:
    """An importer by name; unknown names list the valid ones."""
    try:
        return IMPORTERS[name]
    except KeyError:
        raise HistoryError(
            f'unknown import format "{name}"; choose one of {", ".join(IMPORTERS)}'
        ) from None
