"""Opening a metadata store from a Pulsar-style URL:

- ``memory:`` or ``memory:NAME`` — in-process; every store opened with the same URL through one
  :class:`MetadataStores` shares one tree (the brokers of a standalone process or a simulation);
- ``sqlite:PATH`` — the same, kept durable in a SQLite file;
- ``zk:host:port[,host:port...][/chroot]`` — a ZooKeeper ensemble; without a scheme
  (``host:port,...``) too, as Pulsar takes a URL with none of its schemes for ZooKeeper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ballast.clock import Clock
from ballast.metadata.chunking import ChunkingStore
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.sqlite import SqliteServer
from ballast.metadata.store import MetadataError, MetadataStore
from ballast.metadata.values import UnpackCache
from ballast.model.naming import not_utf8


class InvalidStoreUrlError(MetadataError):
    def __init__(self, url: str, reason: str) -> None:
        super().__init__("", f'invalid metadata store URL "{not_utf8(url) or url}": {reason}')
        self.reason = reason


@dataclass(frozen=True, slots=True)
class StoreUrl:
    scheme: str  # "memory", "sqlite" or "zk"
    target: str  # tree name, file path, or host list with optional chroot

    def __str__(self) -> str:
        return f"{self.scheme}:{self.target}"

    @property
    def is_ensemble_root(self) -> bool:
        """A ZooKeeper store without a chroot: its ``/zookeeper`` is ZooKeeper's own node."""
        return self.scheme == "zk" and "/" not in self.target


def parse_store_url(url: str) -> StoreUrl:
    """Parse and check a store URL (see the module docstring)."""
    scheme, sep, target = url.partition(":")
    if sep and scheme not in ("memory", "sqlite", "zk") and "://" not in url:
        try:  # host:port[,...][/chroot], Pulsar's ZooKeeper default
            return parse_store_url(f"zk:{url}")
        except InvalidStoreUrlError as exc:
            if re.match(r"\d+(/|,|$)", target):  # host:port: what follows it is wrong
                raise InvalidStoreUrlError(url, exc.reason) from None
            # not a host list either: the scheme is what is wrong
    if not sep:
        raise InvalidStoreUrlError(url, "expected memory:, sqlite:PATH or zk:host:port")
    if scheme == "memory":
        return StoreUrl("memory", target.lstrip("/") or "default")
    if scheme == "sqlite":
        if not target:
            raise InvalidStoreUrlError(url, "sqlite: needs a file path")
        return StoreUrl("sqlite", target)
    if scheme == "zk":
        hosts, _, chroot = target.lstrip("/").partition("/")
        unencodable = not_utf8(chroot)
        if unencodable is not None:  # kazoo would fail on it deep in its connection thread
            raise InvalidStoreUrlError(url, f'chroot "/{unencodable}" is not valid UTF-8 text')
        if not hosts:
            raise InvalidStoreUrlError(url, "zk: needs host:port[,host:port...]")
        for host in hosts.split(","):
            name, colon, port = host.rpartition(":")
            shown_host = not_utf8(host)
            if shown_host is not None:
                raise InvalidStoreUrlError(url, f'host "{shown_host}" is not valid UTF-8 text')
            bracketed = name.startswith("[") and name.endswith("]")  # an IPv6 address
            if (
                not colon
                or not name
                or (":" in name and not bracketed)
                or not port.isdigit()
                or not 0 < int(port) < 65536
            ):
                raise InvalidStoreUrlError(url, f'"{host}" is not host:port')
        steps = chroot.split("/")
        if chroot and any(step in ("", ".", "..") for step in steps):
            raise InvalidStoreUrlError(url, f'chroot "/{chroot}" is not a clean path')
        return StoreUrl("zk", hosts + (f"/{chroot}" if chroot else ""))
    raise InvalidStoreUrlError(url, f'unknown scheme "{scheme}" (memory, sqlite or zk)')


class MetadataStores:
    """Opens stores by URL and owns the in-process servers behind ``memory:`` and ``sqlite:``
    URLs, so every broker of one process that opens the same URL sees the same tree."""

    def __init__(self, clock: Clock, *, read_only: bool = False) -> None:
        """``read_only``: ``sqlite:`` files are opened to be read (another process may be
        serving them) and never written."""
        self._clock = clock
        self._read_only = read_only
        self._servers: dict[StoreUrl, MemoryServer] = {}
        self._unpacked = UnpackCache()

    def server(self, url: str) -> MemoryServer:
        """The in-process server of a ``memory:`` or ``sqlite:`` URL (created on first use)."""
        parsed = parse_store_url(url)
        if parsed.scheme == "zk":
            raise InvalidStoreUrlError(url, "a ZooKeeper store has no in-process server")
        server = self._servers.get(parsed)
        if server is None:
            if parsed.scheme == "memory":
                server = MemoryServer(self._clock)
            else:
                server = SqliteServer(self._clock, Path(parsed.target), read_only=self._read_only)
            self._servers[parsed] = server
        return server

    async def connect(
        self, url: str, *, session_timeout_s: float = 30.0, create: bool = True
    ) -> MetadataStore:
        """A new client (with its own session) of the store at ``url``, with large values
        chunked (:class:`~ballast.metadata.chunking.ChunkingStore`). Without ``create`` a
        ZooKeeper chroot that does not exist is an error rather than made."""
        parsed = parse_store_url(url)
        if parsed.scheme == "zk":
            from ballast.metadata.zookeeper import ZooKeeperMetadataStore

            # One client per process (a broker): each value version is read once, so a
            # cache would only hold memory.
            return ChunkingStore(
                await ZooKeeperMetadataStore.connect(
                    parsed.target, session_timeout_s=session_timeout_s, create=create
                )
            )
        # The clients of an in-process server read each other's large values: share one cache.
        backend = MemoryMetadataStore(self.server(url), session_timeout_s)
        return ChunkingStore(backend, unpacked=self._unpacked)

    def close(self) -> None:
        """Release the servers (closes SQLite files). Close the stores first."""
        for server in self._servers.values():
            if isinstance(server, SqliteServer):
                server.close()
        self._servers.clear()
