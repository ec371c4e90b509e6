"""``ballast metadata``: browse a metadata store, dump a subtree as JSON and load it back."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ballast.atomic_files import replaced_whole
from ballast.cli.common import fail, print_json, read_json_arg
from ballast.clock import SystemClock
from ballast.metadata.dump import (
    DumpFormatError,
    dump_records,
    dump_tree,
    encode_value,
    load_tree,
)
from ballast.metadata.factory import InvalidStoreUrlError, MetadataStores, parse_store_url
from ballast.metadata.sqlite import StoreFileBusyError, StoreFileError
from ballast.metadata.store import InvalidPathError, MetadataError, MetadataStore

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
PathArgument = Annotated[str, typer.Argument(help="Record path, e.g. /loadbalance/brokers.")]


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
    except StoreFileBusyError as exc:  # held by a running process: a store failure
        fail(str(exc), code=1)
    except (InvalidPathError, DumpFormatError, StoreFileError) as exc:
        fail(str(exc))  # StoreFileError: a file that is no store (not SQLite, unreadable)
    except MetadataError as exc:
        fail(str(exc), code=1)


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
) -> None:
    """Print the value of PATH (pretty-printed when it is JSON). Exits 1 if there is none."""

    async def read(s: MetadataStore) -> Any:
        return await s.get(path)

    record = _with_store(store, read)
    if record is None:
        fail(f"no record at {path}", code=1)
    value = encode_value(record.value)
    if as_json:
        stat = record.stat
        print_json(
            {
                "path": path,
                "value": value,
                "stat": {
                    "version": stat.version,
                    "createdMs": stat.created_ms,
                    "modifiedMs": stat.modified_ms,
                    "ephemeralOwner": stat.ephemeral_owner,
                },
            }
        )
    elif "json" in value:
        print_json(value["json"])
    elif "text" in value:
        typer.echo(value["text"])
    else:
        typer.echo(value["base64"])
        # stdout stays the value alone (for base64 -d); stderr says how it is written
        typer.echo(f"({len(record.value)} bytes, not UTF-8 text: shown as base64)", err=True)


@metadata_app.command("dump")
def dump_command(
    path: PathArgument,
    store: StoreOption,
    out: Annotated[Path | None, typer.Option("--out", help="Write here instead of stdout.")] = None,
) -> None:
    """Dump PATH and everything below it as JSON (see docs/metadata.md for the format).
    Exits 1 if there is no record at PATH."""

    async def dumping(s: MetadataStore) -> dict[str, Any] | None:
        if path != "/" and await s.exists(path) is None:
            return None
        return await dump_tree(s, path, ensemble_root=_ensemble_root(store))

    dumped = _with_store(store, dumping)
    if dumped is None:
        fail(f"no record at {path}", code=1)
    text = json.dumps(dumped, indent=1, sort_keys=False)
    if out is None:
        typer.echo(text)
    else:
        try:
            _write_whole(out, text + "\n")
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}")
        typer.echo(f"{len(dumped['records'])} records written to {out}", err=True)


def _write_whole(out: Path, text: str) -> None:
    """Write ``out`` whole or not at all (a full disk leaves no half dump that a later ``load``
    would refuse, nor an earlier dump cut short), creating its missing directories as ``load``
    and ``standalone --store sqlite:`` do for theirs (through a symlink, its target's)."""
    Path(os.path.realpath(out)).parent.mkdir(parents=True, exist_ok=True)
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
