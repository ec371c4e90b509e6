"""The durable embedded backend (``sqlite:PATH``): the ``memory:`` server, with every persistent
record also kept in a SQLite file, so a standalone cluster keeps its namespaces and policies
across restarts. Ephemeral records are never written: they die with their sessions, and so
with the process.

Concurrency contract: as the memory backend. Each committed change is written to SQLite in one
transaction on the event-loop thread before the operation returns (a few milliseconds, in WAL
mode); one process may open a file at a time, which a lock on ``<file>.lock`` enforces.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from ballast.clock import Clock
from ballast.file_lock import hold_exclusive
from ballast.metadata.memory import MemoryServer
from ballast.metadata.store import MetadataError, parent_of
from ballast.metadata.stored_node import Change, StoredNode

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    path TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    version INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    modified_ms INTEGER NOT NULL
)
"""


class StoreFileError(MetadataError):
    """The SQLite file cannot be opened or written."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, f"cannot use store file ({reason})")


class StoreFileBusyError(StoreFileError):
    """Another process holds the SQLite file (a running standalone or broker): try later."""


class SqliteServer(MemoryServer):
    """A :class:`MemoryServer` whose persistent records survive restarts in ``db_path``."""

    def __init__(self, clock: Clock, db_path: Path, *, read_only: bool = False) -> None:
        """``read_only``: for looking at a file another process may be serving (it is read
        once, as it is then); any write is refused."""
        super().__init__(clock)
        self.db_path = db_path
        self.read_only = read_only
        self._lock: int | None = None
        # Opened by its file: URI, always: SQLite builds that read URIs take a plain name
        # beginning with "file:" as one ("file:x.db?mode=memory" would be a database in
        # memory, or another file than the one locked and checked here).
        uri = db_path.resolve().as_uri()
        try:
            if read_only:  # touches nothing: no directory, no journal mode, no schema
                self._db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
                _check_schema(self._db)
            else:
                if db_path.is_dir():  # before the lock: no ``<dir>.lock`` left beside it
                    raise StoreFileError(str(db_path), "it is a directory, not a file")
                if db_path.is_file():  # nor beside another application's database
                    with contextlib.closing(
                        sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
                    ) as existing:
                        _check_schema(existing)
                db_path.parent.mkdir(parents=True, exist_ok=True)
                self._lock = _hold_lock(db_path)
                self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
            rows = self._db.execute(
                "SELECT path, value, version, created_ms, modified_ms FROM records ORDER BY path"
            ).fetchall()
        except (sqlite3.Error, OSError) as exc:
            self.close()  # the lock too: a retry must not read as another process holding it
            raise StoreFileError(str(db_path), str(exc)) from None
        for path, value, version, created_ms, modified_ms in rows:
            self.nodes[path] = StoredNode(bytes(value), version, created_ms, modified_ms, None)
        for path in sorted(self.nodes, key=lambda p: p.count("/")):
            if path != "/":
                self._link(path)

    def _link(self, path: str) -> None:
        parent = parent_of(path)
        if parent not in self.nodes:  # tolerate a file edited by hand: recreate the parent
            now = self.clock.wall_ms()
            self.nodes[parent] = StoredNode(b"", 0, now, now, None)
            if parent != "/":
                self._link(parent)
        self.nodes[parent].children.add(path.rsplit("/", 1)[1])

    def on_commit(self, changes: list[Change]) -> None:
        rows = [(p, n) for p, n in changes if n is None or n.ephemeral_owner is None]
        if not rows:
            return
        if self.read_only:
            raise StoreFileError(str(self.db_path), "it was opened to be read, not written")
        try:
            self._db.execute("BEGIN")
            for path, node in rows:
                if node is None:
                    self._db.execute("DELETE FROM records WHERE path = ?", (path,))
                else:
                    self._db.execute(
                        "INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?)",
                        (path, node.value, node.version, node.created_ms, node.modified_ms),
                    )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._db.execute("ROLLBACK")
            raise StoreFileError(str(self.db_path), str(exc)) from None

    def close(self) -> None:
        db = getattr(self, "_db", None)  # None when opening it failed
        if db is not None:
            db.close()
        if self._lock is not None:
            os.close(self._lock)  # releases the lock
            self._lock = None


def _check_schema(db: sqlite3.Connection) -> None:
    """Refuse a SQLite file of another application (a mistyped ``sqlite:`` path): a store is
    an empty file or one with Ballast's ``records`` table."""
    tables = sorted(name for (name,) in db.execute("SELECT name FROM sqlite_master"))
    if tables and "records" not in tables:
        raise sqlite3.DatabaseError(
            f"it is not a Ballast store: it holds {', '.join(tables[:5])}"
            f"{', ...' if len(tables) > 5 else ''} and no records table"
        )


def _hold_lock(db_path: Path) -> int:
    """An exclusive lock on ``<file>.lock`` for as long as the file is open: each process
    keeps the tree in memory and writes it through, so a second process on the same file
    would be a second, diverging cluster (each electing its own leader)."""
    lock = hold_exclusive(db_path.parent / f"{db_path.name}.lock")
    if lock is None:
        raise StoreFileBusyError(
            str(db_path),
            "another process has it open; a store file serves one process (its brokers "
            "share it), brokers in several processes share a zk: store",
        ) from None
    return lock
