"""kazoo's client as the ZooKeeper store uses it: made with the store's reconnect policy,
started in a thread of its own (cancellable), stopped, and renewed with a new session; the
session timeout each connect is granted; errors of a ZooKeeper that does not answer; watches
taken back from the server (ZooKeeper's removeWatches, which kazoo does not offer)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient, _prefix_root
from kazoo.protocol.serialization import int_struct, write_string

from ballast.metadata.store import MetadataError

T = TypeVar("T")


class ZooKeeperUnavailableError(MetadataError):
    """No ZooKeeper server answered in time."""

    def __init__(self, hosts: str, reason: str) -> None:
        super().__init__("", f"cannot connect to ZooKeeper at {hosts} ({reason})")


RECONNECT_MAX_DELAY_S = 0.5
"""The longest pause between attempts to reach ZooKeeper again. kazoo's own doubles up to an
hour, so a broker came back tens of seconds after ZooKeeper did and found its session, which
ZooKeeper had kept, expired meanwhile. At 1 s, a broker whose attempt fell just after its
session timeout took a session as lost that ZooKeeper, back a second earlier, still held."""


def new_client(hosts: str, session_timeout_s: float) -> KazooClient:
    return KazooClient(
        hosts=hosts,
        timeout=session_timeout_s,
        connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": RECONNECT_MAX_DELAY_S},
    )


class GrantedTimeout:
    """The session timeout a server granted, in seconds, once one has: kazoo uses it but
    does not keep it. Written by kazoo's connection thread, read by the event loop (one
    float, replaced whole)."""

    def __init__(self) -> None:
        self.seconds: float | None = None


class LastHeard:
    """When the client last read a packet from its server (on the clock given to
    :func:`note_connection`), once connected: an answer, a watch event, a ping's reply or the
    connect's own. Written by kazoo's connection thread, read by the event loop (one float,
    replaced whole)."""

    def __init__(self) -> None:
        self.at: float | None = None


def note_connection(
    client: KazooClient, granted: GrantedTimeout, heard: LastHeard, now: Callable[[], float]
) -> None:
    """Have ``client`` note in ``granted`` the timeout each connect is granted (kazoo's
    connection handler returns a read timeout of two thirds of it, in milliseconds, from
    ``_connect``), and in ``heard`` when it reads each packet, by ``now`` (called in kazoo's
    thread: the loop's ``time``). A kazoo without these methods leaves the timeout asked and
    nothing heard."""
    connection = getattr(client, "_connection", None)
    connect = getattr(connection, "_connect", None)
    read = getattr(connection, "_read_socket", None)
    if connection is None:
        return
    if connect is not None:

        def connect_and_note(*args: Any, **kwargs: Any) -> Any:
            timeouts = connect(*args, **kwargs)
            granted.seconds = round(timeouts[0] * 1.5) / 1000
            heard.at = now()
            return timeouts

        connection._connect = connect_and_note
    if read is not None:

        def read_and_note(*args: Any, **kwargs: Any) -> Any:
            packet = read(*args, **kwargs)
            heard.at = now()
            return packet

        connection._read_socket = read_and_note


def drop_connection(client: KazooClient) -> None:
    """Close ``client``'s connection to its server, not its session: kazoo's connection
    thread finds the socket broken and connects again, with the same session, as ZooKeeper's
    Java client does when it has not heard from its server for the read timeout."""
    sock = getattr(getattr(client, "_connection", None), "_socket", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def renew(client: KazooClient) -> None:
    """End ``client``'s session (kazoo resets it on stop) and start connecting with a new one,
    in the background: it reports CONNECTED when a server answers."""
    client.stop()
    client.start_async()


async def start_client(
    loop: asyncio.AbstractEventLoop, client: KazooClient, hosts: str, timeout_s: float
) -> None:
    """Start ``client`` (up to ``timeout_s``) in a thread of its own, so that a caller can
    cancel the wait (a broker asked to stop while ZooKeeper does not answer): the default
    executor's threads are joined when the loop closes, and the process would hang on until
    the timeout. A cancelled start stops the client once it is done."""
    started: asyncio.Future[None] = loop.create_future()

    def start() -> None:
        try:
            client.start(timeout=timeout_s)
        except Exception as exc:  # kazoo's timeout is a generic handler error
            stop_client(client)
            call_in_loop(loop, settle_error, started, exc)
            return
        if not call_in_loop(loop, _hand_over, started, client):
            stop_client(client)  # the loop is gone

    threading.Thread(target=start, name="zookeeper-connect", daemon=True).start()
    try:
        await started
    except Exception as exc:
        said = str(exc) or type(exc).__name__
        # kazoo says "Connection time-out" whatever kept it out: find what did.
        why = await asyncio.to_thread(why_unreachable, hosts)
        raise ZooKeeperUnavailableError(hosts, f"{said}: {why}" if why else said) from None


def why_unreachable(hosts: str, probe_timeout_s: float = 1.0) -> str:
    """What keeps each server of ``hosts`` (``h:p,h:p[/chroot]``) out of reach: a name that
    does not resolve, a port nothing listens on, or one that accepts a connection (then it
    is no ZooKeeper, or a slow one); "" if that cannot be told."""
    found: list[str] = []
    for server in hosts.partition("/")[0].split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit():
            continue
        try:
            with socket.create_connection((host, int(port)), timeout=probe_timeout_s):
                found.append(f"{server} accepts connections but did not answer as ZooKeeper")
        except socket.gaierror:
            found.append(f"{host} does not resolve to an address")
        except ConnectionRefusedError:
            found.append(f"nothing listens at {server}")
        except OSError as exc:
            found.append(f"{server}: {exc.strerror or exc}")
    return "; ".join(found)


def _hand_over(started: asyncio.Future[None], client: KazooClient) -> None:
    """On the loop: the started client to its waiter, or, when the wait was cancelled, to a
    thread that stops it."""
    if started.done():
        threading.Thread(
            target=stop_client, args=(client,), name="zookeeper-stop", daemon=True
        ).start()
    else:
        started.set_result(None)


def call_in_loop(
    loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any
) -> bool:
    """Schedule ``callback`` on ``loop`` from another thread; False if the loop is closed."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        return False
    return True


def stop_client(client: KazooClient) -> None:
    try:
        client.stop()
    finally:
        client.close()


def settle_value(future: asyncio.Future[T], value: T) -> None:
    """Complete ``future`` unless it is done already (its waiter gave up)."""
    if not future.done():
        future.set_result(value)


def settle_error(future: asyncio.Future[Any], exc: BaseException) -> None:
    """Fail ``future`` unless it is done already (its waiter gave up)."""
    if not future.done():
        future.set_exception(exc)


class _RemoveWatches:
    """ZooKeeper's removeWatches request (opcode 18, ZooKeeper 3.5 on), in the form kazoo's
    connection sends its own requests: a path and the kind of watches (3: any)."""

    type = 18
    ANY = 3

    def __init__(self, path: str) -> None:
        self.path = path

    def serialize(self) -> bytearray:
        data = bytearray()
        data.extend(write_string(self.path))
        data.extend(int_struct.pack(self.ANY))
        return data

    @classmethod
    def deserialize(cls, _bytes: bytes, _offset: int) -> None:
        return None  # the answer is its header alone

    def __repr__(self) -> str:
        return f"RemoveWatches(path={self.path!r})"


def unwatch(client: KazooClient, path: str, watcher: Callable[..., Any], *, send: bool) -> None:
    """Take ``watcher``'s one-shot watches of ``path`` back: out of kazoo's tables (which would
    call it when they fire and set it again at every reconnect), and, when it was the client's
    last watcher of ``path`` and ``send``, from the server too. A one-shot watch otherwise stays
    on the server until it fires, which, on a record that never comes (a namespace's policies
    looked up under a name that does not exist), is never: Pulsar avoids them with one
    persistent recursive watch, which kazoo cannot set either. Fire and forget: a server
    that has no such watch left (it fired meanwhile) answers NoWatcher, which is dropped."""
    full = _prefix_root(client.chroot, path)  # the path as kazoo sent it, its tables' key
    left = False
    # kazoo's connection thread pops these tables as watches fire; each step here is one
    # operation on them, which the GIL keeps whole.
    for table in (client._data_watchers, client._child_watchers):
        watchers = table.get(full)
        if watchers is None:
            continue
        watchers.discard(watcher)
        if watchers:
            left = True
        else:
            table.pop(full, None)
    if left or not send:
        return
    client._call(_RemoveWatches(full), client.handler.async_result())
