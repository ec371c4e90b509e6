"""``ballast metadata``: browse a metadata store, dump a subtree as JSON and load it back."""

from __future__ import annotations

import asyncio
import errno
import json
import math
import os
import re
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from ballast.atomic_files import replaced_whole
from ballast.cli.common import fail, for_terminal, print_json, read_json_arg, warn
from ballast.clock import SystemClock
from ballast.metadata.chunking import ChunkingStore, UnreadableValueError
from ballast.metadata.dump import (
    DumpFormatError,
    LoadInterrupted,
    dump_records,
    dump_tree,
    encode_value,
    load_tree,
)
from ballast.metadata.factory import InvalidStoreUrlError, MetadataStores, parse_store_url
from ballast.metadata.sqlite import StoreFileBusyError, StoreFileError
from ballast.metadata.store import InvalidPathError, MetadataError, MetadataStore, Record
from ballast.model.naming import not_utf8

T = TypeVar("T")

metadata_app = typer.Typer(
    help="Browse a metadata store (sqlite:PATH or zk:host:port[/chroot]); dump and load "
    "subtrees as JSON.",
    no_args_is_help=True,
)

StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        help="Store URL: sqlite:PATH, zk:host:port[,host:port...][/chroot] "
        "(memory: is in-process and empty here).",
    ),
]


def _utf8_path(path: str) -> str:
    """``path`` as given; exit 2 when it is not UTF-8 text (bytes a shell passed through):
    no store can encode it, and ZooKeeper's client would fail on it in its own thread."""
    shown = not_utf8(path)
    if shown is not None:
        fail(f'path "{shown}" is not valid UTF-8 text')
    return path


PathArgument = Annotated[
    str, typer.Argument(help="Record path, e.g. /loadbalance/brokers.", callback=_utf8_path)
]


def _with_store(
    url: str, action: Callable[[MetadataStore], Awaitable[T]], *, create: bool = False
) -> T:
    """Run ``action`` on the store at ``url``. A ``sqlite:`` file, or a ZooKeeper chroot,
    must exist unless ``create``: opening one makes it, so a misspelt path would read as an
    empty store."""
    try:
        parsed = parse_store_url(url)
    except InvalidStoreUrlError as exc:
        fail(str(exc))
    if create:
        _refuse_memory(url)
    if parsed.scheme == "sqlite" and not create and not Path(parsed.target).is_file():
        fail(f"no store at {url}: {parsed.target} is not a file")
    if parsed.scheme == "sqlite" and Path(parsed.target).is_dir():
        fail(f"no store at {url}: {parsed.target} is a directory; give a file in it")

    async def run() -> T:
        # Only load writes: the others may look at a file a running standalone holds.
        stores = MetadataStores(SystemClock(), read_only=not create)
        store = await stores.connect(url, session_timeout_s=10.0, create=create)
        try:
            return await action(store)
        finally:
            await store.close()
            stores.close()

    try:
        return asyncio.run(run())
    except LoadInterrupted as exc:
        fail(str(exc), code=130)
    except StoreFileBusyError as exc:  # held by a running process: a store failure
        fail(str(exc), code=1)
    except (InvalidPathError, DumpFormatError, StoreFileError) as exc:
        fail(str(exc))  # StoreFileError: a file that is no store (not SQLite, unreadable)
    except MetadataError as exc:
        fail(str(exc), code=1)


def _refuse_memory(url: str) -> None:
    """Exit 2 when ``url`` is a ``memory:`` store, which a command must not write: it lives
    only inside this process, so what it wrote would be gone as the command exits."""
    try:
        scheme = parse_store_url(url).scheme
    except InvalidStoreUrlError:
        return  # _with_store says why
    if scheme == "memory":
        fail(
            f"{url} is a memory store, which lives only inside one process: what this "
            "command wrote would be gone when it exits; give sqlite:PATH or zk:host:port"
        )


def _ensemble_root(url: str) -> bool:
    """Whether ``url`` is a ZooKeeper ensemble's root (no chroot), where ``/zookeeper`` is
    ZooKeeper's own node; False for a URL that is not one (``_with_store`` says why)."""
    try:
        return parse_store_url(url).is_ensemble_root
    except InvalidStoreUrlError:
        return False


@metadata_app.command("ls")
def ls_command(
    path: PathArgument,
    store: StoreOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the children of PATH. Exits 1 if there is no record at PATH."""

    async def listing(s: MetadataStore) -> list[str] | None:
        if path != "/" and await s.exists(path) is None:
            return None
        return await s.children(path)

    names = _with_store(store, listing)
    if names is None:
        fail(f"no record at {path}", code=1)
    if as_json:
        print_json(names)
    else:
        for name in names:
            typer.echo(name)


@metadata_app.command("get")
def get_command(
    path: PathArgument,
    store: StoreOption,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print value and stat as one JSON object.")
    ] = False,
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Write the value's bytes as they are, with nothing added."),
    ] = False,
) -> None:
    """Print the value of PATH: JSON indented, other text with its control characters
    escaped, anything else as base64. Exits 1 if there is none."""
    if raw and as_json:
        fail("--raw and --json are two ways to print the value: give one")

    async def read(s: MetadataStore) -> tuple[Record | None, UnreadableValueError | None]:
        try:
            return await s.get(path), None
        except UnreadableValueError as exc:  # shown as stored, rather than not at all
            inner = s.inner if isinstance(s, ChunkingStore) else s
            return await inner.get(path), exc

    record, unreadable = _with_store(store, read)
    if record is None:
        fail(f"no record at {path}", code=1)
    if unreadable is not None:
        warn(f"{path} holds {unreadable.reason}: shown below as the bytes stored")
    if raw:
        typer.echo(record.value, nl=False)
    elif as_json:
        _print_record_json(path, record)
    else:
        _print_value(record.value)
    if unreadable is not None:
        raise typer.Exit(1)


def _print_record_json(path: str, record: Record) -> None:
    stat = record.stat
    print_json(
        {
            "path": path,
            "value": encode_value(record.value),
            "stat": {
                "version": stat.version,
                "createdMs": stat.created_ms,
                "modifiedMs": stat.modified_ms,
                "ephemeralOwner": stat.ephemeral_owner,
            },
        }
    )


def _print_value(value: bytes) -> None:
    """A value for a reader: JSON indented, other UTF-8 text with its control characters
    escaped (a value must not recolour or rewrite the terminal), anything else as base64.
    stdout holds the value alone; stderr says when it is not shown as it is stored."""
    encoded = encode_value(value)
    if "base64" in encoded:
        typer.echo(encoded["base64"])  # for base64 -d
        typer.echo(f"({len(value)} bytes, not UTF-8 text: shown as base64)", err=True)
        return
    parsed = (encoded["json"],) if "json" in encoded else _json_to_show(encoded["text"])
    if parsed is not None:
        shown = json.dumps(parsed[0], indent=2, ensure_ascii=False)
        typer.echo(_JSON_ESCAPED.sub(lambda m: f"\\u{ord(m[0]):04x}", shown))
        return
    text = encoded["text"]
    shown = for_terminal(text)
    typer.echo(shown)
    if shown != text:
        typer.echo("(control characters shown escaped, as \\x1b; --raw writes them)", err=True)


# What json.dumps(ensure_ascii=False) leaves in a string that a terminal acts on (it escapes
# only C0), or that cannot be written (a lone surrogate, from a stored "\ud800"): JSON escapes.
_JSON_ESCAPED = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _json_to_show(text: str) -> tuple[Any] | None:
    """``text`` parsed as JSON (in a tuple, as it may be null), or None when it is not JSON
    or would be shown changed in more than layout: a key given twice, NaN, Infinity, or a
    number a float cannot hold as written (digits past its precision, 1E400 as Infinity); one
    it holds is shown in Python's notation (1E2 as 100.0, 0.00003 as 3e-05: the same value)."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def exact(literal: str) -> float:
        number = float(literal)
        if not math.isfinite(number) or Decimal(repr(number)) != Decimal(literal):
            raise ValueError(f"{literal} would be shown as another number")
        return number

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({key for key, _ in pairs}) != len(pairs):
            raise ValueError("a key given twice")
        return dict(pairs)

    try:
        parsed = json.loads(
            text,
            parse_constant=no_constant,
            parse_float=exact,
            object_pairs_hook=unique_keys,
        )
        return (parsed,)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return None


@metadata_app.command("dump")
def dump_command(
    path: PathArgument,
    store: StoreOption,
    out: Annotated[
        str | None, typer.Option("--out", help="Write here instead of stdout (-: stdout).")
    ] = None,
) -> None:
    """Dump PATH and everything below it as JSON (see docs/metadata.md for the format).
    Exits 1 if there is no record at PATH, or if a record's value does not read back (it is
    left out, the rest dumped, and stderr names it)."""
    left_out: list[UnreadableValueError] = []
    if out is not None and not out.strip():
        fail("--out is empty: give a file name, or leave it out to write to stdout")
    target = None if out in (None, "-") else Path(out)

    async def dumping(s: MetadataStore) -> dict[str, Any] | None:
        if path != "/" and await s.exists(path) is None:
            return None
        return await dump_tree(s, path, ensemble_root=_ensemble_root(store), left_out=left_out)

    dumped = _with_store(store, dumping)
    if dumped is None:
        fail(f"no record at {path}", code=1)
    text = json.dumps(dumped, indent=1, sort_keys=False)
    if target is None:
        typer.echo(text)
    else:
        try:
            _write_whole(target, text + "\n")
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}")
        typer.echo(f"{len(dumped['records'])} records written to {out}", err=True)
    if left_out:
        _report_left_out(left_out)


def _report_left_out(left_out: list[UnreadableValueError]) -> NoReturn:
    """Name the records a dump left out, and how to see or mend them; exit 1 (a load of the
    dump would not restore them)."""
    for exc in left_out:
        warn(
            f"left out {exc.path}: it holds {exc.reason} (`ballast metadata get {exc.path}` "
            "shows the bytes stored; replace the record, or delete it, to dump it)"
        )
    fail(f"{len(left_out)} record(s) left out of the dump: their values do not read back", code=1)


def _write_whole(out: Path, text: str) -> None:
    """Write ``out`` whole or not at all (a full disk leaves no half dump that a later ``load``
    would refuse, nor an earlier dump cut short), creating its missing directories as ``load``
    and ``standalone --store sqlite:`` do for theirs (through a symlink, its target's)."""
    directory = Path(os.path.realpath(out)).parent
    for place in (directory, *directory.parents):  # mkdir would say only "File exists"
        if place.exists():
            if not place.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, f"{place} is a file, not a directory")
            break
    directory.mkdir(parents=True, exist_ok=True)
    with replaced_whole(out) as partial:
        partial.write_text(text, encoding="utf-8")


@metadata_app.command("load")
def load_command(
    dump_file: Annotated[str, typer.Argument(metavar="DUMP", help="A dump file, or - for stdin.")],
    store: StoreOption,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace records that exist with other content.")
    ] = False,
    keep_ephemeral: Annotated[
        bool,
        typer.Option(
            "--keep-ephemeral",
            help="Load the dump's ephemeral records too, as persistent ones (brokers, leader, "
            "owners of the cluster dumped): only into a store no broker will run on.",
        ),
    ] = False,
) -> None:
    """Load a dump made by `ballast metadata dump` into a store. Records become persistent;
    the ephemeral ones (another cluster's sessions) are left out unless --keep-ephemeral."""
    _refuse_memory(store)
    dumped = read_json_arg(dump_file)
    if not isinstance(dumped, dict):
        fail(f"{dump_file}: a dump is a JSON object")
    try:
        loaded = dump_records(
            dumped, keep_ephemeral=keep_ephemeral, ensemble_root=_ensemble_root(store)
        )
    except DumpFormatError as exc:
        fail(f"{dump_file}: {exc}")
    result = _with_store(
        store, lambda s: load_tree(s, loaded.records, overwrite=overwrite), create=True
    )
    skipped = (
        f", {loaded.ephemeral_skipped} ephemeral left out (--keep-ephemeral loads them)"
        if loaded.ephemeral_skipped
        else ""
    )
    if loaded.zookeeper_skipped:
        skipped += f", {loaded.zookeeper_skipped} of ZooKeeper's own (/zookeeper) left out"
    typer.echo(f"{result.written} records written, {result.unchanged} unchanged{skipped}", err=True)
