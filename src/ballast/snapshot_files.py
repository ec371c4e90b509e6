"""A load snapshot read from a path, as ``ballast decide`` and a simulation's ``[copy]`` take
one: a snapshot JSON file (or the file ``ballast metadata dump`` writes), or a directory laid
out like Pulsar's ``/loadbalance`` tree, one file per node."""

from __future__ import annotations

from pathlib import Path

from ballast.balance.snapshot_json import (
    DUMP_SECTIONS,
    ParsedSnapshot,
    dump_to_object,
    parse_snapshot,
    snapshot_from_object,
)


def read_dump_directory(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` by its path relative to it (``brokers/10.0.0.1:8080``),
    in name order; hidden files and files in hidden directories are left out. A file that
    cannot be read raises :class:`OSError` naming it."""
    files: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            files[relative.as_posix()] = path.read_bytes()
    return files


def read_snapshot_path(path: Path) -> ParsedSnapshot:
    """The snapshot at ``path`` (a dump directory — its ``loadbalance/`` directory where it
    has one — or a file), with the dump's warnings before
    the snapshot's. Raises :class:`OSError` if it cannot be read, and what
    :func:`~ballast.balance.snapshot_json.parse_snapshot` raises if it does not parse."""
    if not path.is_dir():
        return parse_snapshot(path.read_bytes())
    if (path / "loadbalance").is_dir() and not any(
        (path / section).is_dir() for section in DUMP_SECTIONS
    ):  # a dump of the store's root, as the importer takes: not beside /loadbalance's own
        path = path / "loadbalance"
    obj, warnings = dump_to_object(read_dump_directory(path))
    parsed = snapshot_from_object(obj)
    return ParsedSnapshot(parsed.snapshot, parsed.state, (*warnings, *parsed.warnings))
