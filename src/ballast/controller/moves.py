"""Carrying out the controller's decisions through the command channel. Each move runs in its
own task so the event queue never waits on a broker; when a move ends, a
:class:`MoveFinished` event tells the controller what the cluster looks like now.

- assign: the chosen broker takes ownership;
- unload: the owner releases the bundle (the next lookup places it);
- transfer (the extensible load manager's hand-off): the source marks the bundle releasing to the
  destination and stops serving it, the destination takes the record over atomically, the
  source forgets it — the bundle always has an owner record; if the destination fails, the
  source releases the bundle instead;
- split: the owner splits and owns the children (optionally unloading them).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ballast.controller.channel import BrokerGoneError, ChannelHaltedError, ControllerChannel
from ballast.controller.commands import (
    AnyCommand,
    AssignBundle,
    CommandReply,
    ForgetBundle,
    SplitBundle,
    TakeOverBundle,
    TransferBundle,
    UnloadBundle,
)
from ballast.controller.events import ControllerEvent
from ballast.controller.requests import RequestReply
from ballast.tasks import spawn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MoveFinished(ControllerEvent):
    """A move ended. ``owner`` is who owns the bundle now (None: nobody, or unknown);
    ``children`` the bundles a split produced."""

    name = "move-finished"
    move_id: int
    kind: str
    bundle: str
    ok: bool
    owner: str | None
    source: str | None = None
    children: tuple[str, ...] = ()
    message: str = ""


@dataclass(slots=True)
class MoveStats:
    assigned: int = 0
    unloaded: int = 0
    transferred: int = 0
    split: int = 0
    failed: int = 0


def move_reply(event: MoveFinished, owner: str | None, placing: str | None = None) -> RequestReply:
    """What the admin who asked for the move hears; ``owner`` is who owns the bundle now,
    ``placing`` the broker it is being assigned to when it has none.

    A move fails when the cluster changed under it (a broker left or stopped answering, a
    newer leader fenced it off), so a retry may succeed: 503, saying where the bundle is."""
    result: dict[str, object] = {"owner": event.owner, "children": list(event.children)}
    if event.ok:
        return RequestReply(
            ok=True, message=event.message or f"{event.kind} of {event.bundle} done", result=result
        )
    if owner is not None:
        where = f"it is owned by {owner}"
    elif placing is not None:
        where = f"it had no owner, and is being assigned to {placing}"
    else:
        where = "it has no owner now, and the next lookup places it"
    return RequestReply(
        ok=False,
        status=503,
        message=f"{event.kind} of {event.bundle} failed: {event.message}; {where}",
        result=result,
    )


class MoveExecutor:
    """Issues the commands of each move, stamped with ``epoch``."""

    def __init__(
        self, channel: ControllerChannel, epoch: int, report: Callable[[MoveFinished], None]
    ) -> None:
        self._channel = channel
        self._epoch = epoch
        self._report = report
        self._tasks: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self.stats = MoveStats()

    def _start(self, name: str, coro: object) -> None:
        task = spawn(name, coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, broker: str, command: AnyCommand) -> CommandReply:
        try:
            return await self._channel.send(broker, command)
        except ChannelHaltedError:
            return CommandReply(ok=False, message="not sent: this controller stopped")
        except BrokerGoneError:
            return CommandReply(ok=False, message=f"{broker} left the cluster")

    def _finish(self, event: MoveFinished) -> None:
        if not event.ok:
            self.stats.failed += 1
            log.info("%s of %s failed: %s", event.kind, event.bundle, event.message)
        self._report(event)

    def assign(self, bundle: str, broker: str) -> int:
        """Start the move; returns its id (carried by its MoveFinished)."""
        move_id = next(self._ids)

        async def run() -> None:
            reply = await self._send(broker, AssignBundle(epoch=self._epoch, bundle=bundle))
            if reply.ok:
                self.stats.assigned += 1
            self._finish(
                MoveFinished(
                    move_id,
                    "assign",
                    bundle,
                    reply.ok,
                    broker if reply.ok else None,
                    message=reply.message,
                )
            )

        self._start(f"assign-{bundle}", run())
        return move_id

    def unload(self, bundle: str, owner: str) -> int:
        move_id = next(self._ids)

        async def run() -> None:
            reply = await self._send(owner, UnloadBundle(epoch=self._epoch, bundle=bundle))
            if reply.ok:
                self.stats.unloaded += 1
            self._finish(
                MoveFinished(
                    move_id,
                    "unload",
                    bundle,
                    reply.ok,
                    None if reply.ok else owner,
                    source=owner,
                    message=reply.message,
                )
            )

        self._start(f"unload-{bundle}", run())
        return move_id

    def transfer(self, bundle: str, source: str, destination: str) -> int:
        move_id = next(self._ids)

        async def run() -> None:
            marked = await self._send(
                source,
                TransferBundle(epoch=self._epoch, bundle=bundle, destination=destination),
            )
            if not marked.ok:
                self._finish(
                    MoveFinished(
                        move_id,
                        "transfer",
                        bundle,
                        False,
                        source,
                        source=source,
                        message=marked.message,
                    )
                )
                return
            taken = await self._send(destination, TakeOverBundle(epoch=self._epoch, bundle=bundle))
            if taken.ok:
                await self._send(source, ForgetBundle(epoch=self._epoch, bundle=bundle))
                self.stats.transferred += 1
                self._finish(
                    MoveFinished(move_id, "transfer", bundle, True, destination, source=source)
                )
                return
            # The destination could not take it: the source lets it go; lookups place it.
            await self._send(source, UnloadBundle(epoch=self._epoch, bundle=bundle))
            self._finish(
                MoveFinished(
                    move_id, "transfer", bundle, False, None, source=source, message=taken.message
                )
            )

        self._start(f"transfer-{bundle}", run())
        return move_id

    def split(
        self, bundle: str, owner: str, algorithm: str, boundaries: tuple[int, ...], unload: bool
    ) -> int:
        move_id = next(self._ids)

        async def run() -> None:
            reply = await self._send(
                owner,
                SplitBundle(
                    epoch=self._epoch,
                    bundle=bundle,
                    algorithm=algorithm,
                    boundaries=boundaries,
                    unload=unload,
                ),
            )
            if reply.ok and reply.children:
                self.stats.split += 1
            self._finish(
                MoveFinished(
                    move_id,
                    "split",
                    bundle,
                    reply.ok,
                    owner,
                    source=owner,
                    children=reply.children,
                    message=reply.message,
                )
            )

        self._start(f"split-{bundle}", run())
        return move_id

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
