"""The controller's channel to the brokers (Kafka's ``ControllerChannelManager``): one queue
and one sender task per broker, so a slow or dead broker delays only its own commands. A
command that cannot be delivered is retried with exponential backoff until it is delivered, the
broker leaves, or the channel stops; a command the broker rejects is not retried.

Concurrency contract: one event loop; ``send`` is called from the controller's task.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from ballast.clock import Clock
from ballast.controller.commands import AdminTransport, AnyCommand, CommandReply, TransportError
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)


class BrokerGoneError(Exception):
    """The broker left before its command was delivered."""


class ChannelHaltedError(BrokerGoneError):
    """The command was not delivered because this controller stopped (its leadership lost,
    or the broker stopping): the broker it was for may well be in the cluster still."""


@dataclass(slots=True)
class _Pending:
    command: AnyCommand
    result: asyncio.Future[CommandReply]


@dataclass(slots=True)
class _Lane:
    queue: deque[_Pending] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


@dataclass(slots=True)
class ChannelStats:
    sent: int = 0
    retries: int = 0
    rejected: int = 0


class ControllerChannel:
    """Per-broker command queues with retry. A broker removed (it left the cluster) gets no
    new queue from a later ``send`` — its commands fail at once — until it is added again (it
    rejoined); a channel halted (leadership lost) sends nothing more."""

    def __init__(
        self,
        transport: AdminTransport,
        clock: Clock,
        *,
        initial_backoff_s: float = 0.1,
        max_backoff_s: float = 5.0,
    ) -> None:
        self._transport = transport
        self._clock = clock
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        self._lanes: dict[str, _Lane] = {}
        self._gone: set[str] = set()
        self._halted = False
        self.stats = ChannelStats()

    def add_broker(self, broker_id: str) -> None:
        self._gone.discard(broker_id)
        if broker_id not in self._lanes and not self._halted:
            lane = _Lane()
            lane.task = spawn(f"channel-{broker_id}", self._send_loop(broker_id, lane))
            self._lanes[broker_id] = lane

    async def remove_broker(self, broker_id: str) -> None:
        self._gone.add(broker_id)
        await self._close_lane(broker_id, BrokerGoneError)

    async def _close_lane(self, broker_id: str, error: type[BrokerGoneError]) -> None:
        lane = self._lanes.pop(broker_id, None)
        if lane is None:
            return
        await cancel_and_wait(lane.task)
        self._fail_pending(broker_id, lane, error)

    def halt(self) -> None:
        """Leadership is lost: send nothing more, now. Every queued command fails (its
        broker is as good as gone for this controller); :meth:`stop` still cleans up."""
        self._halted = True
        for broker_id, lane in self._lanes.items():
            if lane.task is not None:
                lane.task.cancel()
            self._fail_pending(broker_id, lane, ChannelHaltedError)

    @staticmethod
    def _fail_pending(broker_id: str, lane: _Lane, error: type[BrokerGoneError]) -> None:
        while lane.queue:
            pending = lane.queue.popleft()
            if not pending.result.done():
                pending.result.set_exception(error(broker_id))
                pending.result.exception()

    def brokers(self) -> list[str]:
        return sorted(self._lanes)

    def send(self, broker_id: str, command: AnyCommand) -> asyncio.Future[CommandReply]:
        """Queue ``command`` for ``broker_id``; the future completes with its reply, or fails
        with :class:`BrokerGoneError` if the broker left (or leaves before it is delivered),
        or the channel was halted."""
        future: asyncio.Future[CommandReply] = asyncio.get_running_loop().create_future()
        if self._halted:
            future.set_exception(ChannelHaltedError(broker_id))
            return future
        if broker_id in self._gone:
            future.set_exception(BrokerGoneError(broker_id))
            return future
        if broker_id not in self._lanes:  # a broker placement knows of before its join event
            self.add_broker(broker_id)
        lane = self._lanes[broker_id]
        lane.queue.append(_Pending(command, future))
        lane.ready.set()
        return future

    def queued(self, broker_id: str) -> int:
        lane = self._lanes.get(broker_id)
        return 0 if lane is None else len(lane.queue)

    async def stop(self) -> None:
        self._halted = True
        for broker_id in list(self._lanes):
            await self._close_lane(broker_id, ChannelHaltedError)

    async def _send_loop(self, broker_id: str, lane: _Lane) -> None:
        while True:
            while not lane.queue:
                lane.ready.clear()
                await lane.ready.wait()
            pending = lane.queue[0]
            backoff = self._initial_backoff_s
            while True:
                try:
                    reply = await self._transport.send(broker_id, pending.command)
                    break
                except TransportError as exc:
                    self.stats.retries += 1
                    log.debug("retrying %s to %s: %s", pending.command, broker_id, exc)
                    await self._clock.sleep(backoff)
                    backoff = min(backoff * 2, self._max_backoff_s)
            lane.queue.popleft()
            self.stats.sent += 1
            if not reply.ok:
                self.stats.rejected += 1
            if not pending.result.done():
                pending.result.set_result(reply)
