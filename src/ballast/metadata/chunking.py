"""Values of any size on every backend: :class:`ChunkingStore` wraps a backend, compresses large
values and, when a value still exceeds one record's limit, writes it as chunk records under
``/ballast-chunks/<path hash>/<content digest>/`` and stores a small manifest at the record's
own path.

The manifest write is the commit point, so the interface's rules hold for large values too:
the versioned CAS, ``multi`` atomicity and watches all apply to the manifest record; chunks of
an ephemeral record are ephemeral in the same session, so they vanish with it. A reader that
finds a chunk missing (the value was replaced under it) reads the manifest again.

Chunk sets a record no longer uses are deleted when the record is deleted or rewritten with
another large value; a large value overwritten by a small one leaves its chunks until then.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence

from ballast.metadata.store import (
    ConnectionState,
    Create,
    Delete,
    MetadataError,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    Op,
    Record,
    SetValue,
    Stat,
    StateListener,
    ValueTooLargeError,
    WatchCallback,
    WatchHandle,
    join,
    validate_path,
)
from ballast.metadata.values import (
    MAX_STORED_BYTES,
    Manifest,
    UnpackCache,
    UnpackError,
    pack,
    unpack,
)

CHUNK_ROOT = "/ballast-chunks"
MAX_VALUE_BYTES = 64 * 1024 * 1024  # after compression
_READ_ATTEMPTS = 10


class UnreadableValueError(MetadataError):
    """A stored value that does not read back as a value: marked as Ballast's layout
    (compressed, or a large value's manifest) but not in it, or a manifest whose chunks are
    missing. The bytes stored at the path are the inner store's ``get``; ``reason`` says
    what the path holds ("a value that does not decompress")."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.reason = reason


class _StaleManifest(Exception):
    """A chunk named by the manifest is gone: the value was replaced while being read."""


def chunk_directory(path: str) -> str:
    """Where the chunk sets of the record at ``path`` live."""
    return join(CHUNK_ROOT, hashlib.sha256(path.encode()).hexdigest()[:32])


class ChunkingStore(MetadataStore):
    """A :class:`MetadataStore` with no practical value-size limit, over one that has one."""

    def __init__(
        self,
        inner: MetadataStore,
        *,
        chunk_bytes: int = MAX_STORED_BYTES,
        max_value_bytes: int = MAX_VALUE_BYTES,
        unpacked: UnpackCache | None = None,
    ) -> None:
        """``unpacked``: a cache shared with the other clients of the process, if any."""
        self.inner = inner
        self._chunk_bytes = chunk_bytes
        self._max_value_bytes = max_value_bytes
        self._unpack = unpack if unpacked is None else unpacked.unpack

    # -- encoding ---------------------------------------------------------------------------

    async def _encode(self, path: str, value: bytes, ephemeral: bool) -> tuple[bytes, str | None]:
        """The bytes to store at ``path``, and the chunk set written for them, if any."""
        validate_path(path)
        packed = pack(value)
        if len(packed) > self._max_value_bytes:
            raise ValueTooLargeError(path, len(packed), self._max_value_bytes)
        if len(packed) <= self._chunk_bytes:
            return packed, None
        digest = hashlib.sha256(path.encode() + b"\x00" + packed).hexdigest()[:32]
        directory = join(chunk_directory(path), digest)
        count = 0
        for offset in range(0, len(packed), self._chunk_bytes):
            # NodeExists: the same content under the same path, the chunk is already there.
            with contextlib.suppress(NodeExistsError):
                await self.inner.put(
                    join(directory, f"{count:06d}"),
                    packed[offset : offset + self._chunk_bytes],
                    -1,
                    ephemeral=ephemeral,
                )
            count += 1
        return Manifest(directory, count, len(packed)).encode(), directory

    async def _decode(self, path: str, stored: bytes) -> bytes:
        try:
            manifest = Manifest.decode(stored)
        except UnpackError as exc:
            raise UnreadableValueError(path, f"a value {exc}") from None
        if manifest is None:
            return self._unpacked(path, stored)
        directory = manifest.directory
        parts: list[bytes] = []
        for index in range(manifest.count):
            record = await self.inner.get(join(directory, f"{index:06d}"))
            if record is None and index == 0:
                elsewhere = await self._under_a_chroot(path, directory)
                if elsewhere is not None:
                    directory = elsewhere
                    record = await self.inner.get(join(directory, f"{index:06d}"))
            if record is None:
                raise _StaleManifest
            parts.append(record.value)
        packed = b"".join(parts)
        if len(packed) != manifest.size:
            raise _StaleManifest
        return self._unpacked(path, packed)

    def _unpacked(self, path: str, packed: bytes) -> bytes:
        try:
            return self._unpack(packed)
        except UnpackError as exc:
            raise UnreadableValueError(path, f"a value that does not decompress ({exc})") from None

    async def _under_a_chroot(self, path: str, directory: str) -> str | None:
        """Where the chunks a manifest at ``path`` names are, when not where it says. A
        manifest names them from the root its writer saw: read from above a ZooKeeper chroot
        (an ensemble's root, say), they are under that chroot, one of ``path``'s ancestors.
        None if they are nowhere (the value was replaced while being read)."""
        ancestor = path
        while (ancestor := ancestor.rsplit("/", 1)[0]) != "":
            if await self.inner.exists(join(ancestor + directory, "000000")) is not None:
                return ancestor + directory
        return None

    async def _collect(self, path: str, keep: str | None) -> None:
        """Delete the chunk sets of ``path`` other than ``keep``."""
        directory = chunk_directory(path)
        try:
            names = await self.inner.children(directory)
            for name in names:
                if join(directory, name) != keep:
                    await self.inner.delete_recursive(join(directory, name))
            if keep is None and names:
                await self.inner.delete(directory)
        except NoNodeError:
            pass

    async def _drop(self, directory: str | None) -> None:
        if directory is not None:
            await self.inner.delete_recursive(directory)

    # -- reads ------------------------------------------------------------------------------

    async def get(self, path: str) -> Record | None:
        versions: set[int] = set()
        for _ in range(_READ_ATTEMPTS):
            record = await self.inner.get(path)
            if record is None:
                return None
            try:
                return Record(await self._decode(path, record.value), record.stat)
            except _StaleManifest:
                versions.add(record.stat.version)
                continue
        if len(versions) == 1:  # the same manifest every time: its chunks are not there
            raise UnreadableValueError(path, "a large value whose chunks are missing")
        raise MetadataError(path, "value changed too often while it was being read")

    async def exists(self, path: str) -> Stat | None:
        return await self.inner.exists(path)

    async def children(self, path: str) -> list[str]:
        names = await self.inner.children(path)
        if path == "/":
            return [n for n in names if join("/", n) != CHUNK_ROOT]
        return names

    # -- writes -----------------------------------------------------------------------------

    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> Stat:
        stored, directory = await self._encode(path, value, ephemeral)
        try:
            stat = await self.inner.put(path, stored, expected_version, ephemeral=ephemeral)
        except MetadataError:
            await self._drop(directory)
            raise
        if directory is not None:
            await self._collect(path, keep=directory)
        return stat

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        await self.inner.delete(path, expected_version)
        await self._collect(path, keep=None)

    async def multi(self, ops: Sequence[Op]) -> list[Stat | None]:
        encoded: list[Op] = []
        written: dict[str, str] = {}
        try:
            for op in ops:
                if isinstance(op, Create):
                    stored, directory = await self._encode(op.path, op.value, op.ephemeral)
                    encoded.append(Create(op.path, stored, op.ephemeral))
                elif isinstance(op, SetValue):
                    stored, directory = await self._encode(op.path, op.value, False)
                    encoded.append(SetValue(op.path, stored, op.version))
                else:
                    directory = None
                    encoded.append(op)
                if directory is not None:
                    written[op.path] = directory
            results = await self.inner.multi(encoded)
        except MetadataError:
            for directory in written.values():
                await self._drop(directory)
            raise
        for op in ops:
            if isinstance(op, Delete):
                await self._collect(op.path, keep=None)
            elif op.path in written:
                await self._collect(op.path, keep=written[op.path])
        return results

    # -- everything else is the inner store's ------------------------------------------------

    async def watch(self, path: str, callback: WatchCallback) -> WatchHandle:
        return await self.inner.watch(path, callback)

    def add_state_listener(self, listener: StateListener) -> None:
        self.inner.add_state_listener(listener)

    @property
    def state(self) -> ConnectionState:
        return self.inner.state

    @property
    def session_id(self) -> int:
        return self.inner.session_id

    @property
    def session_timeout_s(self) -> float:
        return self.inner.session_timeout_s

    async def close(self) -> None:
        await self.inner.close()
