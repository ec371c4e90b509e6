"""End to end: ``ballast metadata`` against a SQLite store and a real ZooKeeper."""

from __future__ import annotations

import base64
import json
import os
import random
import stat
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from ballast.clock import Clock
from ballast.metadata.memory import MemoryMetadataStore
from ballast.metadata.sqlite import SqliteServer
from ballast.metadata.values import MANIFEST, Manifest
from ballast.metadata.zkserver import LocalZooKeeper
from tests.conftest import REPO

Run = Callable[..., CompletedProcess[str]]

PULSAR_DUMP = {
    "root": "/loadbalance",
    "records": {
        "/loadbalance/brokers/10.0.0.1:8080": {
            "json": {"webServiceUrl": "http://10.0.0.1:8080", "cpu": {"usage": 3.1, "limit": 100}},
            "ephemeral": True,
        },
        "/loadbalance/bundle-data/public/default/0x00000000_0x40000000": {
            "json": {"shortTermData": {"maxSamples": 10}, "topics": 3}
        },
        "/loadbalance/note": {"text": "plain text"},
        "/loadbalance/blob": {"base64": "AAEC/w=="},
    },
}


def test_load_ls_get_dump_round_trip(ballast: Run, tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'meta.db'}"
    dump_file = tmp_path / "pulsar.json"
    dump_file.write_text("\ufeff" + json.dumps(PULSAR_DUMP), encoding="utf-8")  # with a BOM
    loaded = ballast("metadata", "load", str(dump_file), "--store", store)
    assert loaded.returncode == 0, loaded.stderr
    # the dumped cluster's broker registration is its session's, not this store's
    assert "3 records written, 0 unchanged, 1 ephemeral left out" in loaded.stderr
    assert ballast("metadata", "ls", "/loadbalance/brokers", "--store", store).returncode == 1
    kept = ballast("metadata", "load", str(dump_file), "--store", store, "--keep-ephemeral")
    assert "1 records written, 3 unchanged" in kept.stderr
    listing = ballast("metadata", "ls", "/loadbalance", "--store", store)
    assert listing.stdout.split() == ["blob", "brokers", "bundle-data", "note"]
    got = ballast(
        "metadata", "get", "/loadbalance/brokers/10.0.0.1:8080", "--store", store, "--json"
    )
    body = json.loads(got.stdout)
    assert body["value"]["json"]["cpu"] == {"usage": 3.1, "limit": 100}
    assert body["stat"]["ephemeralOwner"] is None  # loaded records are persistent
    binary = ballast("metadata", "get", "/loadbalance/blob", "--store", store)
    assert binary.stdout == "AAEC/w==\n"  # the value alone, for base64 -d
    assert binary.stderr == "(4 bytes, not UTF-8 text: shown as base64)\n"
    dumped = json.loads(ballast("metadata", "dump", "/loadbalance", "--store", store).stdout)
    records = dumped["records"]
    assert records["/loadbalance/blob"] == {"base64": "AAEC/w=="}
    assert records["/loadbalance/note"] == {"text": "plain text"}
    assert records["/loadbalance/bundle-data/public/default/0x00000000_0x40000000"] == {
        "json": {"shortTermData": {"maxSamples": 10}, "topics": 3}
    }
    again = ballast("metadata", "load", str(dump_file), "--store", store, "--keep-ephemeral")
    assert "0 records written, 4 unchanged" in again.stderr
    # The dump is a load snapshot too: ballast decide (and a simulation's [copy]) read it.
    dumped_file = tmp_path / "dumped.json"
    dumped_file.write_text(json.dumps(dumped), encoding="utf-8")
    placed = ballast(
        "decide", "place", str(dumped_file), "--bundle", "public/default/0x40000000_0x80000000"
    )
    assert placed.returncode == 0, placed.stderr
    assert json.loads(placed.stdout)["decisions"][0]["broker"] == "10.0.0.1:8080"


def test_dump_out_creates_its_directories_and_writes_whole_or_nothing(
    ballast: Run, tmp_path: Path
) -> None:
    store = f"sqlite:{tmp_path / 'meta.db'}"
    dump_file = tmp_path / "pulsar.json"
    dump_file.write_text(json.dumps(PULSAR_DUMP), encoding="utf-8")
    assert ballast("metadata", "load", str(dump_file), "--store", store).returncode == 0
    nested = tmp_path / "backups" / "today" / "lb.json"
    written = ballast("metadata", "dump", "/loadbalance", "--store", store, "--out", str(nested))
    assert written.returncode == 0, written.stderr
    assert json.loads(nested.read_text())["records"]["/loadbalance/note"] == {"text": "plain text"}
    # A target that cannot be written leaves nothing beside it.
    (tmp_path / "taken").mkdir()
    refused = ballast("metadata", "dump", "/", "--store", store, "--out", str(tmp_path / "taken"))
    assert refused.returncode == 2 and "cannot write" in refused.stderr
    assert not [path.name for path in tmp_path.iterdir() if "partial" in path.name]
    assert not list((tmp_path / "taken").iterdir())
    under_a_file = ballast(
        "metadata", "dump", "/", "--store", store, "--out", str(dump_file / "x" / "d.json")
    )  # fmt: skip
    assert under_a_file.returncode == 2
    assert f"{dump_file} is a file, not a directory" in under_a_file.stderr  # not "File exists"
    empty = ballast("metadata", "dump", "/", "--store", store, "--out", "")
    assert empty.returncode == 2 and "--out is empty" in empty.stderr
    dash = ballast("metadata", "dump", "/loadbalance", "--store", store, "--out", "-")
    assert dash.returncode == 0 and json.loads(dash.stdout)["root"] == "/loadbalance"
    assert not (REPO / "-").exists()  # stdout, as load reads - as stdin


def test_dump_out_writes_through_a_symlink_and_into_a_pipe(ballast: Run, tmp_path: Path) -> None:
    """What is at ``--out`` stays what it is: renaming the dump over it would turn a link,
    a pipe or a device into a plain file."""
    store = f"sqlite:{tmp_path / 'meta.db'}"
    dump_file = tmp_path / "pulsar.json"
    dump_file.write_text(json.dumps(PULSAR_DUMP), encoding="utf-8")
    assert ballast("metadata", "load", str(dump_file), "--store", store).returncode == 0
    (tmp_path / "real").mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "real" / "lb.json")
    written = ballast("metadata", "dump", "/loadbalance", "--store", store, "--out", str(link))
    assert written.returncode == 0, written.stderr
    assert link.is_symlink()
    assert json.loads((tmp_path / "real" / "lb.json").read_text())["records"]
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # so that the writer's open returns
    try:
        piped = ballast("metadata", "dump", "/loadbalance", "--store", store, "--out", str(pipe))
        assert piped.returncode == 0, piped.stderr
        assert stat.S_ISFIFO(pipe.lstat().st_mode)
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert json.loads(received)["records"] == json.loads(link.read_text())["records"]


def test_a_store_file_a_running_process_holds_is_read_not_written(
    ballast: Run, tmp_path: Path, clock: Clock
) -> None:
    """ls, get and dump read the file of a running standalone; load, which writes, is refused
    (two processes writing one file were two clusters)."""
    db = tmp_path / "held.db"
    dump_file = tmp_path / "pulsar.json"
    dump_file.write_text(json.dumps(PULSAR_DUMP), encoding="utf-8")
    assert ballast("metadata", "load", str(dump_file), "--store", f"sqlite:{db}").returncode == 0
    held = SqliteServer(clock, db)  # as a running standalone holds it
    try:
        listing = ballast("metadata", "ls", "/loadbalance", "--store", f"sqlite:{db}")
        assert listing.returncode == 0 and "note" in listing.stdout.split(), listing.stderr
        refused = ballast("metadata", "load", str(dump_file), "--store", f"sqlite:{db}")
        assert refused.returncode == 1 and "another process has it open" in refused.stderr
    finally:
        held.close()


def test_conflicts_and_bad_input(ballast: Run, tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'meta.db'}"
    first = tmp_path / "a.json"
    first.write_text(json.dumps({"root": "/", "records": {"/x": {"text": "one"}}}))
    second = tmp_path / "b.json"
    second.write_text(json.dumps({"root": "/", "records": {"/x": {"text": "two"}}}))
    assert ballast("metadata", "load", str(first), "--store", store).returncode == 0
    conflict = ballast("metadata", "load", str(second), "--store", store)
    assert conflict.returncode == 2 and "--overwrite" in conflict.stderr
    assert ballast("metadata", "load", str(second), "--store", store, "--overwrite").returncode == 0
    assert ballast("metadata", "get", "/x", "--store", store).stdout.strip() == "two"
    # A refused load writes nothing: /a would come first, /x is the conflict.
    partly = tmp_path / "c.json"
    partly.write_text(
        json.dumps({"root": "/", "records": {"/a": {"text": "new"}, "/x": {"text": "three"}}})
    )
    refused = ballast("metadata", "load", str(partly), "--store", store)
    assert refused.returncode == 2 and "/x exists with other content" in refused.stderr
    assert ballast("metadata", "ls", "/", "--store", store).stdout.split() == ["x"]
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"root": "/", "records": {"/caf\xe9": {"text": "x"}}}')
    rootless = tmp_path / "rootless.json"
    rootless.write_text(json.dumps({"records": {"/x": {"text": "x"}}}))
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"root": "/a", "records": {"/b": {"text": "x"}}}))
    not_a_dump = tmp_path / "empty.json"
    not_a_dump.write_text("{}")
    merged = tmp_path / "merged.json"  # two dumps merged by hand: the second /y hid the first
    merged.write_text('{"root": "/", "records": {"/y": {"text": "1"}, "/y": {"text": "2"}}}')
    for args, needle in (
        (["get", "/missing", "--store", store], "no record at /missing"),
        (["ls", "/missing", "--store", store], "no record at /missing"),
        (["dump", "/missing", "--store", store], "no record at /missing"),
        (["dump", "/x", "--store", store, "--out", str(tmp_path)], "cannot write"),
        (["load", str(latin), "--store", store], "is not UTF-8 text"),
        (["load", str(not_a_dump), "--store", f"sqlite:{tmp_path / 'new.db'}"], "root"),
        (["load", str(rootless), "--store", store], 'a dump needs a "root" path'),
        (["load", str(outside), "--store", store], "/b is not under the dump's root /a"),
        (["load", str(merged), "--store", store], 'the key "/y" is given twice in one object'),
        (["ls", "relative", "--store", store], "invalid path"),
        (["ls", "/", "--store", "nosuch:thing"], "invalid metadata store URL"),
        (["load", str(tmp_path / "none.json"), "--store", store], "cannot read"),
        (["ls", "/", "--store", f"sqlite:{tmp_path / 'typo.db'}"], "no store at"),
        (["load", str(first), "--store", f"sqlite:{tmp_path}"], "is a directory; give a file"),
    ):
        result = ballast("metadata", *args)
        assert result.returncode in (1, 2), args
        assert needle in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    # A file that is no SQLite database is bad input (exit 2), not a store failure (1).
    garbage = tmp_path / "garbage.db"
    garbage.write_text("garbage\n")
    for command in (["ls", "/"], ["load", str(first)]):
        result = ballast("metadata", *command, "--store", f"sqlite:{garbage}")
        assert result.returncode == 2 and "file is not a database" in result.stderr, command
    assert not (tmp_path / "typo.db").exists()  # reading a store never creates one
    assert not (tmp_path / "new.db").exists()  # nor does a load of what is not a dump
    assert not (tmp_path.parent / f"{tmp_path.name}.lock").exists()  # nor a lock beside a dir


@pytest.mark.integration
def test_against_a_real_zookeeper(
    ballast: Run, tmp_path: Path, zookeeper_server: LocalZooKeeper
) -> None:
    store = f"{zookeeper_server.url}/cli-test"
    dump_file = tmp_path / "pulsar.json"
    dump_file.write_text(json.dumps(PULSAR_DUMP))
    loaded = ballast("metadata", "load", str(dump_file), "--store", store, "--keep-ephemeral")
    assert loaded.returncode == 0, loaded.stderr
    listing = ballast("metadata", "ls", "/loadbalance/brokers", "--store", store)
    assert listing.stdout.split() == ["10.0.0.1:8080"]
    # a reader of a chroot that does not exist is told so; the chroot is not made
    typo = ballast("metadata", "ls", "/", "--store", f"{zookeeper_server.url}/cli-tset")
    assert typo.returncode == 1
    assert "the chroot /cli-tset does not exist" in typo.stderr
    root = ballast("metadata", "ls", "/", "--store", zookeeper_server.url)
    assert "cli-test" in root.stdout.split() and "cli-tset" not in root.stdout.split()
    # a large (chunked) value written through the chroot reads from the ensemble's root too
    blob = base64.b64encode(random.Random(7).randbytes(3_000_000)).decode()
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"root": "/big", "records": {"/big/blob": {"base64": blob}}}))
    assert ballast("metadata", "load", str(big), "--store", store).returncode == 0
    got = ballast(
        "metadata", "get", "/cli-test/big/blob", "--store", zookeeper_server.url, "--json"
    )
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["value"] == {"base64": blob}
    whole = ballast("metadata", "dump", "/", "--store", zookeeper_server.url)
    assert whole.returncode == 0, whole.stderr
    records = json.loads(whole.stdout)["records"]
    assert records["/cli-test/big/blob"] == {"base64": blob}
    assert not [p for p in records if "ballast-chunks" in p]  # bookkeeping left out
    assert not [p for p in records if p.startswith("/zookeeper")]  # and ZooKeeper's own node
    # ... unless it is what the dump is of
    own = ballast("metadata", "dump", "/zookeeper", "--store", zookeeper_server.url)
    assert own.returncode == 0, own.stderr
    assert "/zookeeper/quota" in json.loads(own.stdout)["records"]
    (tmp_path / "whole.json").write_text(whole.stdout)
    again = ballast(
        "metadata", "load", str(tmp_path / "whole.json"), "--store", zookeeper_server.url
    )
    assert again.returncode == 0, again.stderr  # it loads back: nothing it may not write
    for bad in ("/a/../b", "//a", "/a/./b"):
        unclean = ballast("metadata", "ls", "/", "--store", f"{zookeeper_server.url}{bad}")
        assert unclean.returncode == 2 and "is not a clean path" in unclean.stderr, bad
    unreachable = ballast("metadata", "ls", "/", "--store", "zk:127.0.0.1:1")
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip() == (
        "error: cannot connect to ZooKeeper at 127.0.0.1:1 (Connection time-out: nothing "
        "listens at 127.0.0.1:1)"
    )


def _load(ballast: Run, tmp_path: Path, store: str, dump: dict[str, object]) -> None:
    dump_file = tmp_path / "load.json"
    dump_file.write_text(json.dumps(dump), encoding="utf-8")
    loaded = ballast("metadata", "load", str(dump_file), "--store", store)
    assert loaded.returncode == 0, loaded.stderr


def test_a_path_that_is_not_utf8_text_is_refused_in_one_line(ballast: Run, tmp_path: Path) -> None:
    """Bytes a shell passes that are not UTF-8 read as "no record" on sqlite:, and made
    ZooKeeper's client fail with a traceback."""
    store = f"sqlite:{tmp_path / 'meta.db'}"
    _load(ballast, tmp_path, store, {"root": "/qa", "records": {"/qa/x": {"text": "x"}}})
    for command in ("get", "ls", "dump"):
        result = ballast("metadata", command, "/qa/\udcff", "--store", store)
        assert result.returncode == 2, command
        assert result.stderr == 'error: path "/qa/\\xff" is not valid UTF-8 text\n', command


def test_a_dump_with_a_string_utf8_cannot_encode_writes_nothing(
    ballast: Run, tmp_path: Path
) -> None:
    store = f"sqlite:{tmp_path / 'meta.db'}"
    _load(ballast, tmp_path, store, {"root": "/qa", "records": {"/qa/x": {"text": "x"}}})
    bad = tmp_path / "sur.json"  # valid JSON: "\udcff" is a lone surrogate's escape
    bad.write_text('{"root":"/qs","records":{"/qs/a":{"text":"ok"},"/qs/b":{"text":"\\udcff"}}}')
    result = ballast("metadata", "load", str(bad), "--store", store)
    assert result.returncode == 2
    assert result.stderr == (
        f'error: {bad}: records["/qs/b"]["text"]: "\\udcff" is not valid UTF-8 text\n'
    )
    assert ballast("metadata", "ls", "/", "--store", store).stdout.split() == ["qa"]
    fresh = tmp_path / "fresh.db"
    assert ballast("metadata", "load", str(bad), "--store", f"sqlite:{fresh}").returncode == 2
    assert not fresh.exists()


def test_load_refuses_a_memory_store(ballast: Run, tmp_path: Path) -> None:
    """What a load wrote into memory: was gone as the command exited, yet it said written."""
    dump_file = tmp_path / "d.json"
    dump_file.write_text(json.dumps(PULSAR_DUMP))
    for url in ("memory:", "memory:cluster"):
        result = ballast("metadata", "load", str(dump_file), "--store", url)
        assert result.returncode == 2, url
        assert result.stderr.count("\n") == 1 and "lives only inside one process" in result.stderr
        assert "sqlite:PATH or zk:" in result.stderr


def test_get_shows_a_value_for_a_reader_and_raw_gives_its_bytes(
    ballast: Run, tmp_path: Path
) -> None:
    """JSON is indented whatever its layout, its text shown as itself; control characters of
    text are escaped (an ANSI sequence recoloured the terminal); --raw is the bytes stored."""
    store = f"sqlite:{tmp_path / 'meta.db'}"
    values = {
        "/v/spaced": {"text": '{ "a" : 1 }'},
        "/v/accent": {"json": "é"},
        "/v/ansi": {"text": "\x1b[31mRED\x1b[0m\x00\nnext\tline\x9b"},
        "/v/twice": {"text": '{"a":1,"a":2}'},  # shown as it is: indented, one key would go
        "/v/c1": {"json": {"k": "\x9b31m"}},
        "/v/huge": {"text": "[1E400]"},  # as a float it would be Infinity: shown as it is
        # a number a float cannot hold (1.0 would be shown): the text as it is
        "/v/long": {"text": '{"long": 1.00000000000000000001}'},
        # numbers it holds, in other notations (Ballast's own reports write 0.00003...)
        "/v/numbers": {"text": '{"f": 0.00003211909075872973, "e": 1E2, "i": -12}'},
    }
    _load(ballast, tmp_path, store, {"root": "/v", "records": values})

    def get(path: str, *options: str) -> CompletedProcess[str]:
        result = ballast("metadata", "get", path, "--store", store, *options)
        assert result.returncode == 0, result.stderr
        return result

    assert get("/v/spaced").stdout == '{\n  "a": 1\n}\n'
    assert get("/v/accent").stdout == '"é"\n'
    ansi = get("/v/ansi")
    assert ansi.stdout == "\\x1b[31mRED\\x1b[0m\\x00\nnext\tline\\x9b\n"
    assert "--raw" in ansi.stderr
    assert get("/v/ansi", "--raw").stdout == "\x1b[31mRED\x1b[0m\x00\nnext\tline\x9b"
    assert get("/v/twice").stdout == '{"a":1,"a":2}\n'
    assert get("/v/c1").stdout == '{\n  "k": "\\u009b31m"\n}\n'
    assert get("/v/huge").stdout == "[1E400]\n"
    assert get("/v/spaced", "--raw").stdout == '{ "a" : 1 }'
    assert get("/v/long").stdout == '{"long": 1.00000000000000000001}\n'
    numbers = get("/v/numbers").stdout
    assert numbers == '{\n  "f": 3.211909075872973e-05,\n  "e": 100.0,\n  "i": -12\n}\n'
    assert json.loads(numbers) == json.loads(values["/v/numbers"]["text"])  # the same values
    both = ballast("metadata", "get", "/v/spaced", "--store", store, "--raw", "--json")
    assert both.returncode == 2 and "--raw and --json are two ways" in both.stderr


async def test_a_record_that_does_not_read_back_is_shown_as_stored_and_left_out_of_a_dump(
    ballast: Run, tmp_path: Path, clock: Clock
) -> None:
    """Bytes that look like Ballast's large-value manifest but are not one (another client
    wrote them) failed ``get`` with an internal error, and a manifest whose chunks are
    missing failed the dump of the whole tree."""
    db = tmp_path / "meta.db"
    server = SqliteServer(clock, db)
    try:
        raw = MemoryMetadataStore(server)  # no chunking: the bytes land as they are
        await raw.put("/qa/good", b"1")
        await raw.put("/qa/fake", MANIFEST + b"not json")
        await raw.put("/qa/gone", Manifest("/ballast-chunks/none/x", 2, 10).encode())
        await raw.close()
    finally:
        server.close()
    store = f"sqlite:{db}"
    got = ballast("metadata", "get", "/qa/fake", "--store", store)
    assert got.returncode == 1
    assert got.stdout == "\\x00ballast-chunks\\x00not json\n"
    assert "warning: /qa/fake holds a value marked as a large value's manifest" in got.stderr
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr
    dumped = ballast("metadata", "dump", "/qa", "--store", store)
    assert dumped.returncode == 1
    assert sorted(json.loads(dumped.stdout)["records"]) == ["/qa", "/qa/good"]
    assert "left out /qa/fake:" in dumped.stderr and "left out /qa/gone:" in dumped.stderr
    assert dumped.stderr.endswith(
        "error: 2 record(s) left out of the dump: their values do not read back\n"
    )


@pytest.mark.integration
def test_text_that_is_not_utf8_never_reaches_zookeeper(
    ballast: Run, tmp_path: Path, zookeeper_server: LocalZooKeeper
) -> None:
    """kazoo failed on it in its connection thread: a traceback, then a lost connection."""
    store = f"{zookeeper_server.url}/cli-utf8"
    got = ballast("metadata", "get", "/qa/\udcff", "--store", store)
    assert got.returncode == 2
    assert got.stderr == 'error: path "/qa/\\xff" is not valid UTF-8 text\n'
    chroot = ballast("metadata", "ls", "/", "--store", f"{zookeeper_server.url}/\udcff")
    assert chroot.returncode == 2 and chroot.stderr.count("\n") == 1
    assert 'chroot "/\\xff" is not valid UTF-8 text' in chroot.stderr
    bad = tmp_path / "sur.json"
    bad.write_text('{"root":"/qs","records":{"/qs/\\udcff":{"json":1}}}')
    loaded = ballast("metadata", "load", str(bad), "--store", store)
    assert loaded.returncode == 2
    assert (
        loaded.stderr
        == f'error: {bad}: records["/qs/\\udcff"]: "/qs/\\udcff" is not valid UTF-8 text\n'
    )
    root = ballast("metadata", "ls", "/", "--store", zookeeper_server.url)
    assert "cli-utf8" not in root.stdout.split()  # nothing written, not even the chroot
