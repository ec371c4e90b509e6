"""Files that appear whole or not at all: written beside their place under a hidden name and
renamed into it, so a process stopped meanwhile (a signal, a full disk) leaves the old file or
the new one, never a cut-off one, and readers of the directory skip the hidden name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replaced_whole(target: Path) -> Iterator[Path]:
    """The path to write ``target``'s new content to; renamed over ``target`` when the block
    ends without an error, removed when it raises. A symlink is followed: the file it points
    to is replaced, the link stays. What is no regular file (a device, a pipe) is given to be
    written into as it is, since renaming a file over it would replace it."""
    real = Path(os.path.realpath(target))
    if real.exists() and not real.is_file():
        yield real
        return
    partial = real.with_name(f".{real.name}.tmp")
    try:
        yield partial
        os.replace(partial, real)
    finally:
        partial.unlink(missing_ok=True)
