"""Admin changes handed to the leader's controller by whichever broker received them.

A request forwarded to a leader that stops answering (paused, cut off from the store) follows
the leadership: when another broker is elected while it waits, the request goes to the new
leader rather than waiting out the transport's timeout. The old leader cannot act on it
afterwards: its writes are fenced by its epoch, and brokers refuse its commands.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ballast.controller.commands import TransportError
from ballast.controller.requests import AnyRequest, RequestReply, failed
from ballast.metadata import paths
from ballast.tasks import cancel_and_wait

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

# Leader changes a request follows before it gives up: more within one request means an
# election that does not settle, which the admin is better told about.
MAX_LEADER_CHANGES = 3


async def to_leader(node: BrokerNode, request: AnyRequest) -> RequestReply:
    """Hand a change to the leader's controller (this broker's own, or over the transport)."""
    for _ in range(MAX_LEADER_CHANGES + 1):
        controller = node.controller
        if controller is not None and controller.running:
            return await controller.request(request)
        leader = await node.leader_id()
        if leader is None or leader == node.broker_id:
            return failed(503, "no leader is elected yet; retry")
        reply = await _forward(node, leader, request)
        if reply is not None:
            return reply
    return failed(
        503, f"the leadership changed {MAX_LEADER_CHANGES} times during the request; retry"
    )


async def _forward(node: BrokerNode, leader: str, request: AnyRequest) -> RequestReply | None:
    """``leader``'s reply to ``request``, or None when another broker became the leader
    while it was awaited."""
    changed = asyncio.Event()
    watch = await node.store.watch(paths.LEADER, lambda _notification: changed.set())
    call = asyncio.create_task(node.transport.call_leader(leader, request))
    try:
        while True:
            woken = asyncio.create_task(changed.wait())
            await asyncio.wait((call, woken), return_when=asyncio.FIRST_COMPLETED)
            await cancel_and_wait(woken)
            if call.done():
                try:
                    return call.result()
                except TransportError as exc:
                    return failed(503, str(exc))
            changed.clear()
            now = await node.leader_id()
            if now is not None and now != leader:
                return None
    finally:
        watch.cancel()
        await cancel_and_wait(call)
