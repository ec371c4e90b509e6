"""The durable embedded backend keeps persistent records across a restart, not ephemerals."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ballast.clock import Clock
from ballast.metadata.factory import InvalidStoreUrlError, MetadataStores, parse_store_url
from ballast.metadata.sqlite import SqliteServer, StoreFileError


async def test_persistent_records_survive_a_restart(clock: Clock, tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'cluster.db'}"
    first = MetadataStores(clock)
    store = await first.connect(url)
    await store.put("/admin/policies/public/default", b'{"bundles":{"numBundles":4}}')
    await store.put("/admin/policies/public/default", b'{"bundles":{"numBundles":8}}')
    await store.put("/loadbalance/brokers/b1:8080", b"{}", ephemeral=True)
    await store.put("/gone", b"x")
    await store.delete("/gone")
    await store.close()
    first.close()

    second = MetadataStores(clock)
    again = await second.connect(url)
    record = await again.get("/admin/policies/public/default")
    assert record is not None
    assert record.value == b'{"bundles":{"numBundles":8}}'
    assert record.stat.version == 1  # versions survive too, so CAS keeps working
    assert await again.children("/admin/policies") == ["public"]
    assert await again.exists("/loadbalance/brokers/b1:8080") is None
    assert await again.exists("/gone") is None
    await again.put("/admin/policies/public/default", b"{}", 1)
    await again.close()
    second.close()


async def test_a_write_the_file_refuses_is_not_applied(clock: Clock, tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'cluster.db'}"
    stores = MetadataStores(clock)
    store = await stores.connect(url)
    await store.put("/x", b"v0")
    server = stores.server(url)
    assert isinstance(server, SqliteServer)
    writable = server._db
    # the file can no longer be written (a full disk, a read-only mount)
    server._db = sqlite3.connect(
        f"file:{tmp_path / 'cluster.db'}?mode=ro", uri=True, isolation_level=None
    )
    try:
        with pytest.raises(StoreFileError):
            await store.put("/x", b"v1", 0)
        with pytest.raises(StoreFileError):
            await store.put("/y/z", b"new")  # parents made on the way are undone too
    finally:
        server._db.close()
        server._db = writable
    record = await store.get("/x")
    assert record is not None and (record.value, record.stat.version) == (b"v0", 0)
    assert await store.exists("/y") is None
    await store.put("/x", b"v1", 0)  # the version the refused write would have taken
    await store.close()
    stores.close()


def test_a_store_file_serves_one_process_at_a_time(clock: Clock, tmp_path: Path) -> None:
    """Each process keeps the tree in memory: two on one file were two clusters, each with
    its own leader. A second opening is refused until the first closes."""
    db = tmp_path / "cluster.db"
    first = SqliteServer(clock, db)
    script = (
        "import sys; from pathlib import Path; from ballast.clock import SystemClock;"
        "from ballast.metadata.sqlite import SqliteServer, StoreFileError\n"
        "try: SqliteServer(SystemClock(), Path(sys.argv[1]))\n"
        "except StoreFileError as e: print(e); sys.exit(3)"
    )
    other = subprocess.run(
        [sys.executable, "-c", script, str(db)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.returncode == 3, other.stderr
    assert "another process has it open" in other.stdout
    with pytest.raises(StoreFileError, match="another process has it open"):
        SqliteServer(clock, db)  # nor twice in one process (the factory shares one server)
    before = sorted(p.name for p in tmp_path.iterdir())
    reader = SqliteServer(clock, db, read_only=True)  # reading it is fine, and writes nothing
    assert "/" in reader.nodes
    with pytest.raises(StoreFileError, match="opened to be read"):
        reader.on_commit([("/x", None)])
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    first.close()
    SqliteServer(clock, db).close()


def test_unusable_file_is_a_clear_error(clock: Clock, tmp_path: Path) -> None:
    not_a_db = tmp_path / "junk.db"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreFileError, match="cannot use store file"):
        SqliteServer(clock, not_a_db)
    with pytest.raises(StoreFileError, match="cannot use store file"):  # again: no lock left
        SqliteServer(clock, not_a_db)
    with pytest.raises(sqlite3.Error):
        sqlite3.connect(str(not_a_db)).execute("SELECT * FROM records")


async def test_a_file_name_beginning_with_file_is_that_file_not_a_uri(
    clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite builds that read URIs took ``file:x.db?mode=memory`` for a database in memory:
    a load there wrote nothing durable, under a lock on another name."""
    monkeypatch.chdir(tmp_path)
    url = "sqlite:file:x.db?mode=memory"
    stores = MetadataStores(clock)
    store = await stores.connect(url)
    await store.put("/kept", b"v")
    await store.close()
    stores.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "file:x.db?mode=memory",
        "file:x.db?mode=memory.lock",
    ]
    reader = SqliteServer(clock, Path("file:x.db?mode=memory"), read_only=True)
    assert reader.nodes["/kept"].value == b"v"
    reader.close()


def test_a_sqlite_file_of_another_application_is_refused(clock: Clock, tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
    db.close()
    for read_only in (False, True):
        with pytest.raises(StoreFileError, match="not a Ballast store: it holds accounts"):
            SqliteServer(clock, other, read_only=read_only)
    with sqlite3.connect(other) as db:  # nothing was added to it
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master")]
    db.close()
    assert tables == ["accounts"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no app.db.lock beside it
    SqliteServer(clock, tmp_path / "empty.db").close()  # an empty file becomes a store


def test_a_directory_is_no_store_file_and_gets_no_lock_beside_it(
    clock: Clock, tmp_path: Path
) -> None:
    (tmp_path / "stores").mkdir()
    with pytest.raises(StoreFileError, match="it is a directory, not a file"):
        SqliteServer(clock, tmp_path / "stores")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stores"]  # no stores.lock


@pytest.mark.parametrize(
    ("url", "scheme", "target"),
    [
        ("memory:", "memory", "default"),
        ("memory:test", "memory", "test"),
        ("sqlite:/tmp/x.db", "sqlite", "/tmp/x.db"),
        ("zk:127.0.0.1:2181", "zk", "127.0.0.1:2181"),
        ("zk:a:1,b:2/ballast/prod", "zk", "a:1,b:2/ballast/prod"),
        # No scheme: ZooKeeper, as Pulsar reads a URL without one of its schemes.
        ("127.0.0.1:2181", "zk", "127.0.0.1:2181"),
        ("zk1:2181,zk2:2181/pulsar", "zk", "zk1:2181,zk2:2181/pulsar"),
    ],
)
def test_store_urls(url: str, scheme: str, target: str) -> None:
    parsed = parse_store_url(url)
    assert (parsed.scheme, parsed.target) == (scheme, target)


@pytest.mark.parametrize(
    "url",
    ["", "localhost:2181x", "zk:", "zk:host", "zk:host:99999", "sqlite:", "zk:a:1/c/", "zk:a:b:1"],
)
def test_bad_store_urls(url: str) -> None:
    with pytest.raises(InvalidStoreUrlError):
        parse_store_url(url)


@pytest.mark.parametrize("url", ["etcd:x:1", "rocksdb:/data/md", "oxia://o:6648", "bogus:"])
def test_a_scheme_ballast_lacks_is_named_not_taken_for_a_host(url: str) -> None:
    with pytest.raises(InvalidStoreUrlError, match=f'unknown scheme "{url.partition(":")[0]}"'):
        parse_store_url(url)
