"""Faults of the in-process transport between brokers, for tests that need a move to be slow
while something else happens."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.controller.commands import AnyCommand, CommandReply


@contextlib.contextmanager
def delayed(
    cluster: LocalCluster, clock: Clock, kind: type[AnyCommand], delay_s: float
) -> Iterator[None]:
    """Every command of type ``kind`` reaches its broker ``delay_s`` late (clock time)."""
    send = cluster.in_process.send

    async def slow(broker_id: str, command: AnyCommand) -> CommandReply:
        if isinstance(command, kind):
            await clock.sleep(delay_s)
        return await send(broker_id, command)

    cluster.in_process.send = slow  # type: ignore[method-assign]
    try:
        yield
    finally:
        cluster.in_process.send = send  # type: ignore[method-assign]
