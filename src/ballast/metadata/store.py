"""The ``MetadataStore`` interface: a ZooKeeper-shaped hierarchical store of versioned byte
values, with sessions, ephemeral records, watches and atomic multi-operations.

Every backend (``memory``, ``sqlite``, ``zookeeper``) implements this contract and passes the
shared contract suite in ``tests/metadata/``. Recipes (election, registry, ownership) are
written against it only.

Concurrency contract: a store object is used from one asyncio event loop. Watch callbacks and
connection-state listeners run on that loop, one at a time, in the order the changes happened.
"""

from __future__ import annotations

import abc
import contextlib
import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ballast.model.naming import name_memo

# -- errors -----------------------------------------------------------------------------------


class MetadataError(Exception):
    """Base of every error a store raises; backends never leak their own exception types."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{message}: {path}" if path else message)
        self.path = path


class NoNodeError(MetadataError):
    """The record (or, for a create, its parent when parents are not created) does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "no such record")


class NodeExistsError(MetadataError):
    """A create found the record already there."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "record already exists")


class BadVersionError(MetadataError):
    """A conditional write or check found another version."""

    def __init__(self, path: str, expected: int, actual: int | None = None) -> None:
        found = "" if actual is None else f", found {actual}"
        super().__init__(path, f"expected version {expected}{found}")
        self.expected = expected
        self.actual = actual


class NotEmptyError(MetadataError):
    """A delete of a record that still has children."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "record has children")


class InvalidPathError(MetadataError):
    """A path the store cannot hold (see :func:`validate_path`)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, f"invalid path ({reason})")


class ValueTooLargeError(MetadataError):
    """A value that stays over the store's size limit even compressed."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(path, f"value of {size} bytes exceeds the {limit}-byte limit")


class ConnectionLossError(MetadataError):
    """The store could not be reached; the operation may or may not have happened. Retry once
    connected (state ``CONNECTED``)."""

    def __init__(self, path: str = "", message: str = "connection to the store lost") -> None:
        super().__init__(path, message)


class SessionExpiredError(MetadataError):
    """The session ended; its ephemeral records are gone."""

    def __init__(self, path: str = "") -> None:
        super().__init__(path, "session expired")


class StoreClosedError(MetadataError):
    """The store object was closed."""

    def __init__(self) -> None:
        super().__init__("", "store closed")


class MultiOpError(MetadataError):
    """An atomic multi-operation failed as a whole; ``index`` and ``cause`` say which operation
    failed and why. None of the operations took effect."""

    def __init__(self, index: int, cause: MetadataError) -> None:
        super().__init__(cause.path, f"operation {index} of multi failed ({cause})")
        self.index = index
        self.cause = cause


# -- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stat:
    """Metadata of a record. ``version`` starts at 0 and grows by one on every write;
    ``ephemeral_owner`` is the owning session's id, or None for a persistent record."""

    version: int
    created_ms: int
    modified_ms: int
    ephemeral_owner: int | None = None

    @property
    def is_ephemeral(self) -> bool:
        return self.ephemeral_owner is not None


@dataclass(frozen=True, slots=True)
class Record:
    value: bytes
    stat: Stat


class ConnectionState(enum.Enum):
    """kazoo's connection states. SUSPENDED: disconnected, the session may still be alive —
    assume nothing. LOST: the session expired, or the store has been cut off for a whole
    session timeout and takes it as expired (the server will have expired it, or will once it
    runs again); its ephemeral records are gone or going. A store reconnects by itself after
    LOST with a new session and reports CONNECTED again."""

    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"


class EventType(enum.Enum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"
    CHILDREN_CHANGED = "children-changed"


@dataclass(frozen=True, slots=True)
class Notification:
    """A change seen by a watch: ``path`` is the watched record for CREATED / MODIFIED /
    DELETED, and the watched parent for CHILDREN_CHANGED."""

    type: EventType
    path: str


# -- multi-operations -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """Succeeds iff the record exists with ``version``."""

    path: str
    version: int


@dataclass(frozen=True, slots=True)
class Create:
    """Creates a record that must not exist; its parent must exist (multi does not create
    parents)."""

    path: str
    value: bytes
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetValue:
    """Overwrites an existing record, if ``version`` is given only at that version."""

    path: str
    value: bytes
    version: int | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int | None = None


Op = Check | Create | SetValue | Delete


# -- the interface ----------------------------------------------------------------------------

StateListener = Callable[[ConnectionState], None]
WatchCallback = Callable[[Notification], None]


class WatchHandle(abc.ABC):
    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop delivering notifications (idempotent)."""


@name_memo(maxsize=1 << 18)
def validate_path(path: str) -> None:
    """Paths are absolute (``/a/b``), without a trailing slash (except the root ``/``), without
    empty, ``.`` or ``..`` segments and without control characters — ZooKeeper's rules.
    Memoised (paths are checked again on every operation; an invalid path raises, so it is
    never cached), those up to ``MEMOISED_NAME_LENGTH`` long (the cache counts entries)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(str(path), "must start with /")
    if path == "/":
        return
    if path.endswith("/"):
        raise InvalidPathError(path, "must not end with /")
    for segment in path[1:].split("/"):
        if segment == "":
            raise InvalidPathError(path, "empty segment")
        if segment in (".", ".."):
            raise InvalidPathError(path, f'segment "{segment}" is not allowed')
    if _CONTROL_CHARACTERS.search(path) is not None:
        raise InvalidPathError(path, "control characters are not allowed")
    refused = _NOT_IN_ZOOKEEPER_PATHS.search(path)
    if refused is not None:
        raise InvalidPathError(
            path.encode("utf-8", "backslashreplace").decode("utf-8"),
            f"character U+{ord(refused[0]):04X} is not allowed",
        )


_CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
# ZooKeeper's PathUtils refuses these UTF-16 units too: surrogates (so every character past
# U+FFFF, which Java holds as a pair of them), the private use area and U+FFF0 to U+FFFF.
_NOT_IN_ZOOKEEPER_PATHS = re.compile("[\ud800-\uf8ff\ufff0-\U0010ffff]")


def parent_of(path: str) -> str:
    head, _, _ = path.rpartition("/")
    return head or "/"


def join(*parts: str) -> str:
    """Join path segments: ``join("/a", "b", "c")`` is ``/a/b/c``."""
    return "/" + "/".join(p.strip("/") for p in parts if p.strip("/"))


class MetadataStore(abc.ABC):
    """A client of a metadata store, holding one session.

    All methods are coroutines unless noted; all raise only :class:`MetadataError` subclasses.
    Operations while disconnected raise :class:`ConnectionLossError`; after ``close()``,
    :class:`StoreClosedError`.
    """

    # -- reads ------------------------------------------------------------------------------

    @abc.abstractmethod
    async def get(self, path: str) -> Record | None:
        """The value and stat of ``path``, or None if there is no record."""

    @abc.abstractmethod
    async def exists(self, path: str) -> Stat | None:
        """The stat of ``path``, or None."""

    @abc.abstractmethod
    async def children(self, path: str) -> list[str]:
        """Names (not paths) of the children of ``path``, sorted; ``[]`` if ``path`` has none
        or does not exist."""

    # -- writes -----------------------------------------------------------------------------

    @abc.abstractmethod
    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> Stat:
        """Write ``value`` at ``path`` and return the new stat.

        ``expected_version``: None — create the record or overwrite it unconditionally;
        ``-1`` — create it, :class:`NodeExistsError` if it exists; ``n >= 0`` — overwrite it
        only at version ``n``: :class:`NoNodeError` if missing, :class:`BadVersionError` if at
        another version. Missing parents are created as empty persistent records. ``ephemeral``
        applies when the record is created: it is then bound to this store's session and removed
        when the session ends (``close()``) or expires. Values larger than the store's limit
        are compressed, or rejected with :class:`ValueTooLargeError`.
        """

    @abc.abstractmethod
    async def delete(self, path: str, expected_version: int | None = None) -> None:
        """Delete ``path`` (at ``expected_version`` if given). :class:`NoNodeError` if missing,
        :class:`BadVersionError` on another version, :class:`NotEmptyError` if it has
        children. Any session may delete any record, ephemeral ones included (as in
        ZooKeeper)."""

    @abc.abstractmethod
    async def multi(self, ops: Sequence[Op]) -> list[Stat | None]:
        """Apply ``ops`` atomically, in order: all take effect or none does. Returns, per
        operation, the new stat (Create, SetValue) or None (Check, Delete). On failure raises
        :class:`MultiOpError` naming the first failing operation."""

    # -- watches and sessions ---------------------------------------------------------------

    @abc.abstractmethod
    async def watch(self, path: str, callback: WatchCallback) -> WatchHandle:
        """A persistent watch, armed when this returns: ``callback`` gets a notification when
        the record at ``path`` is created, modified or deleted, and when a child of ``path`` is
        created or deleted (CHILDREN_CHANGED) — until cancelled. ``path`` need not exist.

        Notifications run on the event loop, one at a time, in the order of the changes; a
        callback must not block. Delivery is at-least-once per burst: several quick changes of
        one record may arrive as one notification (ZooKeeper's one-shot watches are re-armed
        after each event), so a consumer re-reads the state it cares about. Changes made while
        disconnected are reported after the reconnect."""

    @abc.abstractmethod
    def add_state_listener(self, listener: StateListener) -> None:
        """Call ``listener`` on every connection-state change, on the event loop."""

    @property
    @abc.abstractmethod
    def state(self) -> ConnectionState:
        """The current connection state."""

    @property
    @abc.abstractmethod
    def session_id(self) -> int:
        """The id of the current session (changes after LOST)."""

    @property
    @abc.abstractmethod
    def session_timeout_s(self) -> float:
        """Seconds of silence after which the session expires."""

    @abc.abstractmethod
    async def close(self) -> None:
        """End the session (its ephemeral records are removed) and release resources.
        Idempotent."""

    # -- helpers built on the primitives ----------------------------------------------------

    async def get_children_values(self, path: str) -> dict[str, Record]:
        """Every child of ``path`` with its record (children that vanish meanwhile are left
        out)."""
        result: dict[str, Record] = {}
        for name in await self.children(path):
            record = await self.get(join(path, name))
            if record is not None:
                result[name] = record
        return result

    async def ensure(self, path: str) -> None:
        """Create an empty record at ``path`` (and its missing parents) unless one is there: the
        structural parent of records a multi will create."""
        if await self.exists(path) is None:
            with contextlib.suppress(NodeExistsError):
                await self.put(path, b"", -1)

    async def delete_recursive(self, path: str) -> None:
        """Delete ``path`` and everything below it (records that vanish meanwhile are fine)."""
        for name in await self.children(path):
            await self.delete_recursive(join(path, name))
        with contextlib.suppress(NoNodeError):
            await self.delete(path)
