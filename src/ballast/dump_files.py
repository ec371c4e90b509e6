"""A dump of Pulsar's ``/loadbalance`` tree as a directory holds it, one file per node, read
into the mapping :func:`ballast.balance.snapshot_json.dump_to_object` assembles."""

from __future__ import annotations

from pathlib import Path


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
