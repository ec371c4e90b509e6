"""Requests to the leader's controller from any broker: admin changes, and a stopping
broker's drain.

A request follows the leadership. Forwarded to a leader that stops answering (paused, cut
off from the store), it goes to the next leader once another broker is elected, rather than
waiting out the transport's timeout; the old leader cannot act on it afterwards, since its
writes are fenced by its epoch and brokers refuse its commands. Between leaders (none elected
yet, or one elected whose controller is still starting) it waits up to LEADER_WAIT_S for one
to run: those answers mean the request was not handled, so sending it again is safe. A leader
that cannot be reached at all (killed: its record stays until its session expires) is waited
for as long as that expiry and LEADER_WAIT_S take, and then the election after it as any other.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ballast.controller.commands import TransportError
from ballast.controller.requests import AnyRequest, RequestReply, failed
from ballast.coordination.election import read_leader
from ballast.metadata import paths
from ballast.tasks import cancel_and_wait

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

# How long a request waits for a leader to run (an election and the winner's start, which
# rebuilds its image from the store), and how often it looks meanwhile.
LEADER_WAIT_S = 10.0
LEADER_POLL_S = 0.1
# Leader changes a request follows before it gives up: more within one request means an
# election that does not settle, which the admin is better told about.
MAX_LEADER_CHANGES = 3
# The wait's state before it waits for anything (None means "for a leader to be elected").
_NOT_WAITING = object()


async def to_leader(
    node: BrokerNode, request: AnyRequest, *, until: float | None = None
) -> RequestReply:
    """Hand ``request`` to the leader's controller (this broker's own, or over the
    transport), following leader changes. ``until`` (``node.clock.monotonic()`` time) bounds
    the whole wait: a 503 after it. A 503 with ``not_leader`` says no leader ran to take the
    request within LEADER_WAIT_S (or ``until``)."""
    clock = node.clock
    changes = 0
    term: int | None = None  # the epoch of the last leader seen
    # What the current wait is for: a leadership's epoch, or None between leaders. Each is
    # waited for afresh: a killed leader's record goes a whole session after the first
    # failed call, and the next election only starts then.
    waiting_for: object = _NOT_WAITING
    waiting_since = 0.0
    while True:
        controller = node.controller
        if controller is not None and controller.running:
            return await controller.request(request)
        leader = await read_leader(node.store)
        if leader is not None:
            if term is not None and leader.epoch != term:
                changes += 1
                if changes > MAX_LEADER_CHANGES:
                    return failed(
                        503,
                        f"the leadership changed {MAX_LEADER_CHANGES} times during the "
                        "request; retry",
                    )
            term = leader.epoch
        patience = LEADER_WAIT_S
        if leader is not None and leader.broker_id != node.broker_id:
            try:
                reply = await _forward(node, leader.broker_id, request, until)
            except TransportError as exc:
                # No connection: nothing was sent. A leader killed keeps its record until its
                # session expires, so wait for the next one as between leaders, for as long
                # as that expiry and an election take (it answered 503 at once).
                why = f"the leader cannot be reached ({exc}); retry"
                patience = node.store.session_timeout_s + LEADER_WAIT_S
            else:
                if reply is None:  # another broker was elected meanwhile
                    continue
                if not reply.not_leader:
                    return reply
                why = f"{reply.message} yet; retry"  # elected, its controller still starting
        elif leader is not None:
            why = f"{node.broker_id} is elected, and not yet started as the leader; retry"
        else:
            why = "no leader is elected yet; retry"
        now = clock.monotonic()
        current = None if leader is None else leader.epoch
        if current != waiting_for:
            waiting_for, waiting_since = current, now
        if now - waiting_since >= patience or (until is not None and now >= until):
            # Not handled: the asker may send it again.
            return RequestReply(ok=False, status=503, message=why, not_leader=True)
        await clock.sleep(LEADER_POLL_S)


async def _forward(
    node: BrokerNode, leader: str, request: AnyRequest, until: float | None
) -> RequestReply | None:
    """``leader``'s reply to ``request``, or None when another broker became the leader
    while it was awaited; a 503 if ``until`` passes first. Raises :class:`TransportError`
    when no connection to ``leader`` could be made."""
    changed = asyncio.Event()
    watch = await node.store.watch(paths.LEADER, lambda _notification: changed.set())
    call = asyncio.create_task(node.transport.call_leader(leader, request))
    deadline = (
        None
        if until is None
        else asyncio.create_task(node.clock.sleep(max(0.0, until - node.clock.monotonic())))
    )
    try:
        while True:
            woken = asyncio.create_task(changed.wait())
            waits = {call, woken} if deadline is None else {call, woken, deadline}
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            await cancel_and_wait(woken)
            if call.done():
                try:
                    return call.result()
                except TransportError as exc:
                    if exc.unreachable:
                        raise  # never sent: the caller waits for a leader to answer
                    return failed(503, str(exc))
            if deadline is not None and deadline.done():
                return failed(503, f"the leader {leader} did not answer in time")
            changed.clear()
            current = await node.leader_id()
            if current is not None and current != leader:
                return None
    finally:
        watch.cancel()
        await cancel_and_wait(call, deadline)
