"""Copying a subtree out of a store as JSON and back in — how an operator inspects a cluster's
metadata or brings in a copy of a Pulsar cluster's ``/loadbalance`` tree.

The dump format is one JSON object::

    {"root": "/loadbalance",
     "records": {"/loadbalance/brokers/b1:8080": {"json": {...}, "ephemeral": true}, ...}}

Each value is ``{"json": v}`` when the bytes are JSON in the compact form they are written back
in (as Ballast writes its records), ``{"text": s}`` when they are other UTF-8 text (JSON spaced
out, with a key repeated, ``1E2``, ``NaN``: written back as JSON they would change), else
``{"base64": s}``; an empty value is ``{"text": ""}``. So a load writes back exactly the bytes
dumped. Records are listed
parents first. Loading writes persistent records, and leaves out the ephemeral ones unless
asked: they belong to the sessions of the cluster dumped (its brokers' registrations, its
leader, its bundles' owners), and kept for good they would make a cluster on this store wait
for a leader that never goes away and list brokers that are not its own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ballast.metadata.chunking import CHUNK_ROOT, UnreadableValueError
from ballast.metadata.store import MetadataError, MetadataStore, Record, join, validate_path
from ballast.model.naming import not_utf8
from ballast.tasks import gather_or_cancel


class DumpFormatError(ValueError):
    """A dump that cannot be loaded; the message names the record."""


# ZooKeeper's own node at an ensemble's root (its quotas and dynamic configuration): no client
# may write it, so at a ZooKeeper ensemble's root it is neither dumped nor loaded (in any other
# store, or under a chroot, a record of that name is data like any other).
ZOOKEEPER_ROOT = "/zookeeper"


def _zookeepers_own(path: str) -> bool:
    return path == ZOOKEEPER_ROOT or path.startswith(ZOOKEEPER_ROOT + "/")


def encode_value(value: bytes) -> dict[str, Any]:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode()}
    if text.strip():
        try:
            parsed = msgspec.json.decode(value)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if _json_bytes(parsed) == value:  # written back as it is
                return {"json": parsed}
    return {"text": text}


def _json_bytes(value: Any) -> bytes | None:
    try:
        return msgspec.json.encode(value)
    except (msgspec.EncodeError, RecursionError, TypeError, ValueError):
        return None


_ENTRY_KEYS = frozenset({"json", "text", "base64", "ephemeral"})


def decode_value(path: str, entry: Any) -> bytes:
    if not isinstance(entry, dict) or len(entry.keys() & {"json", "text", "base64"}) != 1:
        raise DumpFormatError(f'{path}: expected {{"json"|"text"|"base64": ...}}')
    unknown = sorted(entry.keys() - _ENTRY_KEYS)
    if unknown:
        raise DumpFormatError(
            f"{path}: {unknown[0]} is no key of a record (json, text, base64, ephemeral)"
        )
    if not isinstance(entry.get("ephemeral", False), bool):
        raise DumpFormatError(f"{path}: ephemeral must be true or false")
    if "json" in entry:
        encoded = _json_bytes(entry["json"])
        if encoded is None or not _finite(entry["json"]):
            raise DumpFormatError(f"{path}: json holds a value JSON cannot carry (NaN, Infinity)")
        return encoded
    if "text" in entry:
        if not isinstance(entry["text"], str):
            raise DumpFormatError(f"{path}: text must be a string")
        return str(entry["text"]).encode()
    try:
        return base64.b64decode(str(entry["base64"]), validate=True)
    except (binascii.Error, ValueError):
        raise DumpFormatError(f"{path}: base64 is malformed") from None


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (a dump read leniently may hold them)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True


# Requests a dump or a load keeps in flight. ZooKeeper answers each in about a round trip, so
# one at a time spent a round trip per record in a row (a load of 20,000 records, 30 s on a
# local ensemble); a few dozen at once keep it busy without queueing thousands.
IN_FLIGHT = 32


async def dump_tree(
    store: MetadataStore,
    root: str,
    *,
    ensemble_root: bool = False,
    left_out: list[UnreadableValueError] | None = None,
) -> dict[str, Any]:
    """Every record at and below ``root`` (parents first, children sorted); with
    ``ensemble_root`` (a ZooKeeper store without a chroot), not ZooKeeper's own node unless
    ``root`` is in it. A record whose value does not read back (a large value's chunks
    missing, bytes another client wrote that look like Ballast's layout) raises
    UnreadableValueError; given ``left_out``, it goes there instead and the dump carries on
    with the rest, its children included, so that one broken record does not hide a tree.
    Siblings are read concurrently (:data:`IN_FLIGHT` requests at most), the result in the
    same order as one at a time."""
    validate_path(root)
    # ZooKeeper's own node is left out of a dump of the tree above it, not of itself: asked
    # for by name, it is what the dump is of.
    skip_zookeepers_own = ensemble_root and not _zookeepers_own(root)
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def visit(path: str) -> list[tuple[str, dict[str, Any]] | UnreadableValueError]:
        """The records at and below ``path`` in dump order, the unreadable ones as errors."""
        if (
            path == CHUNK_ROOT
            or path.endswith(CHUNK_ROOT)
            or (skip_zookeepers_own and _zookeepers_own(path))
        ):
            # the store's own bookkeeping, not data: at its root, or at a chroot's when the
            # dump is of an ensemble's root (the manifests above find their chunks there);
            # and ZooKeeper's own node
            return []
        found: list[tuple[str, dict[str, Any]] | UnreadableValueError] = []
        try:
            async with gate:
                record = await store.get(path)
        except UnreadableValueError as exc:
            if left_out is None:
                raise
            found.append(exc)  # and its children are dumped
        else:
            if record is None:
                return []
            if path != "/":
                entry = encode_value(record.value)
                if record.stat.is_ephemeral:
                    entry["ephemeral"] = True
                found.append((path, entry))
        async with gate:
            names = await store.children(path)
        for below in await gather_or_cancel(visit(join(path, name)) for name in names):
            found.extend(below)
        return found

    records: dict[str, Any] = {}
    for item in await visit(root):
        if isinstance(item, UnreadableValueError):
            assert left_out is not None  # raised above otherwise
            left_out.append(item)
        else:
            records[item[0]] = item[1]
    return {"root": root, "records": records}


class LoadInterrupted(Exception):
    """The load was cancelled (Ctrl-C) after writing some of its records."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    written: int
    unchanged: int


@dataclass(frozen=True, slots=True)
class DumpRecords:
    """What a load writes: (path, value) parents before children, how many ephemeral
    records were left out, and how many of ZooKeeper's own (``/zookeeper``, loaded into an
    ensemble's root from a dump that holds it)."""

    records: list[tuple[str, bytes]]
    ephemeral_skipped: int
    zookeeper_skipped: int = 0


def dump_records(
    dump: Mapping[str, Any], *, keep_ephemeral: bool = False, ensemble_root: bool = False
) -> DumpRecords:
    """The records of ``dump``, without its ephemeral ones unless ``keep_ephemeral`` (nor,
    loaded into a ZooKeeper ensemble's root, ``ensemble_root``, ZooKeeper's own node);
    DumpFormatError if the dump is not one (checked before any store is touched): it needs a
    ``root`` path and ``records`` at or below it."""
    root = dump.get("root")
    if not isinstance(root, str):
        raise DumpFormatError('a dump needs a "root" path (as `ballast metadata dump` writes)')
    _check_utf8(root, "root")
    try:
        validate_path(root)
    except MetadataError as exc:
        raise DumpFormatError(f"root: {exc}") from None
    records = dump.get("records")
    if not isinstance(records, dict):
        raise DumpFormatError('a dump needs a "records" object')
    prefix = root.rstrip("/") + "/"
    prepared: list[tuple[str, bytes]] = []
    skipped = zookeeper = 0
    for path, entry in records.items():
        _check_utf8(path, f"records[{json.dumps(path)}]")
        _check_utf8(entry, f"records[{json.dumps(path)}]")
        try:
            validate_path(path)
        except MetadataError as exc:
            raise DumpFormatError(str(exc)) from None
        if path != root and not path.startswith(prefix):
            raise DumpFormatError(f"{path} is not under the dump's root {root}")
        value = decode_value(path, entry)
        if ensemble_root and _zookeepers_own(path):
            zookeeper += 1
            continue
        if isinstance(entry, dict) and entry.get("ephemeral") is True and not keep_ephemeral:
            skipped += 1
            continue
        prepared.append((path, value))
    return DumpRecords(sorted(prepared, key=lambda item: item[0].count("/")), skipped, zookeeper)


def _check_utf8(value: Any, where: str) -> None:
    """DumpFormatError naming the first string in ``value`` (keys too) that UTF-8 cannot
    encode — a lone surrogate such as JSON's ``"\\udcff"`` — by its place under ``where``:
    no store can hold it, and finding it here, before any write, keeps a load all or nothing.
    ``value`` may be nested as deep as the JSON parser allows: walked without recursion."""
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        item, place = pending.pop()
        if isinstance(item, str):
            shown = not_utf8(item, from_bytes=False)
            if shown is not None:
                raise DumpFormatError(f'{place}: "{shown}" is not valid UTF-8 text')
        elif isinstance(item, list):
            pending.extend(reversed([(v, f"{place}[{n}]") for n, v in enumerate(item)]))
        elif isinstance(item, dict):
            for key, v in reversed(list(item.items())):
                pending.append((v, f"{place}[{json.dumps(key)}]"))
                pending.append((key, place))


# How a load stopped part way is finished: what it wrote compares unchanged, and --overwrite
# replaces a record left half written (a large value's chunks without their manifest).
_FINISH = "loading the same dump again with --overwrite finishes it"


async def load_tree(
    store: MetadataStore, records: list[tuple[str, bytes]], *, overwrite: bool = False
) -> LoadResult:
    """Write ``records`` (from :func:`dump_records`: parents before children). An existing
    record with other content is an error unless ``overwrite``; identical ones are left
    alone. Every record is compared before the first is written, so a refused load writes
    nothing. Records are read, and those of one depth written, concurrently
    (:data:`IN_FLIGHT` at most)."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def current(path: str) -> Record | UnreadableValueError | None:
        async with gate:
            try:
                return await store.get(path)
            except UnreadableValueError as exc:
                return exc

    found = await gather_or_cancel(current(path) for path, _ in records)
    changed: list[tuple[str, bytes]] = []
    unchanged = 0
    for (path, value), record in zip(records, found, strict=True):
        if isinstance(record, UnreadableValueError):
            if not overwrite:
                raise DumpFormatError(
                    f"{path} exists and holds {record.reason}: use --overwrite to replace it"
                )
            changed.append((path, value))
            continue
        if record is not None and record.value == value:
            unchanged += 1
            continue
        if record is not None and record.value and not overwrite:
            raise DumpFormatError(f"{path} exists with other content (use --overwrite)")
        changed.append((path, value))
    written = 0

    async def write(path: str, value: bytes) -> None:
        nonlocal written
        async with gate:
            await store.put(path, value)
        written += 1

    try:
        # One depth at a time: a record's parent is written before it.
        for _, level in itertools.groupby(changed, key=lambda item: item[0].count("/")):
            await gather_or_cancel(write(path, value) for path, value in level)
    except MetadataError as exc:
        raise MetadataError(
            "",
            f"{exc} — the load stopped there: {written} of {len(changed)} records were "
            f"written before it (those being written then may be too); once its cause is "
            f"mended, {_FINISH}",
        ) from None
    except asyncio.CancelledError:
        raise LoadInterrupted(
            f"interrupted: {written} of {len(changed)} records were written (those being "
            f"written then may be too); {_FINISH}"
        ) from None
    return LoadResult(len(changed), unchanged)
