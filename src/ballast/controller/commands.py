"""What the controller tells brokers to do, and the transport that carries it.

Every command carries the epoch of the leadership that issued it; a broker remembers the highest
epoch it has seen and rejects commands from older ones, so a deposed leader cannot move bundles
(Kafka stamps every controller request with the controller epoch the same way). Commands are
msgspec structs tagged by kind, so the HTTP transport sends them as JSON unchanged.
"""

from __future__ import annotations

from typing import Protocol

import msgspec


class Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    epoch: int
    bundle: str  # canonical bundle name


class AssignBundle(Command, frozen=True, kw_only=True, tag="assign"):
    """Take ownership of ``bundle`` and load its topics (idempotent)."""


class UnloadBundle(Command, frozen=True, kw_only=True, tag="unload"):
    """Stop serving ``bundle`` and release it; the next lookup places it again."""


class TransferBundle(Command, frozen=True, kw_only=True, tag="transfer"):
    """Mark ``bundle`` releasing to ``destination`` and stop serving it; the destination then
    takes it over without a gap."""

    destination: str


class TakeOverBundle(Command, frozen=True, kw_only=True, tag="take-over"):
    """Complete a transfer to this broker."""


class ForgetBundle(Command, frozen=True, kw_only=True, tag="forget"):
    """The hand-off of a transferred bundle completed: drop the claim."""


class SplitBundle(Command, frozen=True, kw_only=True, tag="split"):
    """Split ``bundle`` with ``algorithm`` (at ``boundaries`` for specified positions), own the
    children, unload them if ``unload``."""

    algorithm: str
    boundaries: tuple[int, ...] = ()
    unload: bool = False


class CloseTopics(Command, frozen=True, kw_only=True, tag="close-topics"):
    """``topics`` (of ``bundle``) were deleted: disconnect their clients and stop serving them,
    as Pulsar's forced delete closes each partition's producers and consumers (Kafka's
    ``StopReplica`` with delete, for a deleted topic's replicas)."""

    topics: tuple[str, ...]


AnyCommand = (
    AssignBundle
    | UnloadBundle
    | TransferBundle
    | TakeOverBundle
    | ForgetBundle
    | SplitBundle
    | CloseTopics
)


class CommandReply(msgspec.Struct, frozen=True, kw_only=True):
    """``ok`` or not, why, and for a split the children bundle names."""

    ok: bool
    message: str = ""
    children: tuple[str, ...] = ()
    stale_epoch: bool = False


class TransportError(Exception):
    """The command did not reach the broker (or its answer did not come back); retry.
    ``unreachable``: no connection was made, so the broker surely did not get it."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class AdminTransport(Protocol):
    async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
        """Deliver ``command`` to ``broker_id``; TransportError if it cannot."""
        ...


def encode_command(command: AnyCommand) -> bytes:
    return msgspec.json.encode(command)


_COMMAND_DECODER: msgspec.json.Decoder[AnyCommand] = msgspec.json.Decoder(AnyCommand)


def decode_command(data: bytes) -> AnyCommand:
    """Raises msgspec.ValidationError / DecodeError for a malformed command."""
    return _COMMAND_DECODER.decode(data)
