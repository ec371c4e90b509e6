"""An exclusive lock on a file for as long as a process holds it: one process at a time for a
ZooKeeper data directory, a SQLite store or a simulator's output directory."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def hold_exclusive(path: Path) -> int | None:
    """Lock ``path`` (``flock``, not waiting), a directory or a file (created if missing): the
    open descriptor, which holds the lock until it is closed or the process ends, or None when
    another holds it. OSError when the path cannot be opened at all."""
    flags = os.O_RDONLY if path.is_dir() else os.O_RDWR | os.O_CREAT
    handle = os.open(path, flags, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        return None
    return handle
