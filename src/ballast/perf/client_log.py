"""The Pulsar client's own log, read back. The client writes it (INFO and up) to a temporary
file; ``ballast perf`` echoes its warnings and errors to stderr, as the client's console logger
would, and keeps the few facts it needs to explain a failure in words: whether the client
ever reached a broker, its last connection error, and the broker's last refusal (the C++
consumer does not put the broker's text in its exception, only in this log).

Why a file: a Python ``logging.Logger`` costs the client's threads the GIL on every log call,
DEBUG ones included (its wrapper reports every level enabled) — half the publish rate of a
measurement; the console logger writes to stdout, into ``--json`` output, and keeps nothing.

Concurrency contract: the client appends to the file from its threads; one reader (the event
loop) calls :meth:`ClientLog.poll`. The rest of the module is pure.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulsar

# "2026-11-24 17:56:56.291 WARN  [140289647638208] ClientConnection:1731 | message"
# (the thread id is decimal with libstdc++, hexadecimal with libc++)
_LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+)\s+\[[^\]]*\] (?P<source>\S+) \| (?P<message>.*)$")
# "[127.0.0.1:56388 -> 127.0.0.1:19650] Received error response from server:
#  ResultNotAllowedError (persistent://t/n/x: persistent topics need ...) -- req_id: 0"
_REFUSAL = re.compile(
    r"Received error response from server: (?:Result)?(?P<result>\w+) \((?P<reason>.*)\)"
    r" -- req_id"
)
# "[local -> remote] " before a connection's messages; local is "<none>" before it is open
_PEER = re.compile(r"^\[(?P<local>[^\]]*?) -> (?P<remote>[^\]]*)\] ")
_CONNECTION_SOURCES = ("ClientConnection", "HTTPLookupService")
SHOWN_LEVELS = frozenset({"WARN", "ERROR"})


@dataclass(frozen=True, slots=True)
class LogLine:
    level: str  # DEBUG, INFO, WARN or ERROR
    source: str  # the client's source file and line, "ClientConnection:485"
    message: str
    text: str  # the whole line, as the client wrote it


def parse_line(text: str) -> LogLine | None:
    """One line of the client's log, or None for a line not in its format (a continuation)."""
    found = _LINE.match(text)
    if found is None:
        return None
    return LogLine(found["level"], found["source"], found["message"], text)


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error the broker answered a request with."""

    result: str  # the client's name for it: "NotAllowedError"
    reason: str  # the broker's text


@dataclass
class ClientFacts:
    """What the client's log said so far, for explaining a failure."""

    # The client opened a TCP connection to some broker ("Connected to broker", which the
    # client logs before Pulsar's handshake: it says nothing of what answered).
    reached_broker: bool = False
    closed_connections: int = 0  # connections the client saw end ("Connection disconnected")
    last_connection_error: str | None = None
    last_refusal: Refusal | None = None

    def update(self, line: LogLine) -> None:
        if not line.source.startswith(_CONNECTION_SOURCES):
            return
        peer = _PEER.match(line.message)
        message = line.message[peer.end() :] if peer else line.message
        if line.level == "INFO":
            if message == "Connected to broker":
                self.reached_broker = True
            elif message.startswith("Connection disconnected") and not (
                peer and peer["local"] == "<none>"  # an attempt that never opened
            ):
                self.closed_connections += 1
        elif line.level in SHOWN_LEVELS:
            refusal = _REFUSAL.search(message)
            if refusal is not None:
                self.last_refusal = Refusal(refusal["result"], refusal["reason"])
            else:  # the server it was for, when the line names it
                self.last_connection_error = f"{peer['remote']}: {message}" if peer else message


def _last_error(facts: ClientFacts) -> str:
    error = facts.last_connection_error
    return f" (the client's last error: {error})" if error else ""


def _story(url: str, facts: ClientFacts, *, so_far: bool = False) -> str:
    """How the client's connections went, as far as its log tells."""
    if not facts.reached_broker:
        return f"no connection to a broker via {url}{' yet' if so_far else ''}{_last_error(facts)}"
    story = f"the client connected via {url}"
    if facts.closed_connections:
        times = "once" if facts.closed_connections == 1 else f"{facts.closed_connections} times"
        story += f", but the connection was closed {times}"
    refusal = facts.last_refusal
    if refusal is not None:
        story += f"; the broker's last error: {refusal.result}: {refusal.reason}"
    elif facts.closed_connections > 1 and facts.last_connection_error is None:
        # what a web port does with Pulsar's handshake: reads it as bad HTTP, and hangs up
        story += " with no error said: is that a broker's binary port, not its web port?"
    # after a first broker, the one a lookup sends it to may be out of reach
    return story + _last_error(facts)


def creation_failure(
    url: str, what: str, error_name: str, facts: ClientFacts, waited_s: float
) -> str:
    """Why ``what`` ("a producer for TOPIC") could not be created after ``waited_s``, in
    words: from the client's error (``error_name``: its exception's name, "Timeout",
    "NotAllowedError" ...) and what its log said. Claims only what the log shows."""
    if error_name == "Timeout":
        if not facts.reached_broker:
            return (
                f"could not connect to a broker via {url} within {waited_s:.0f} s"
                f"{_last_error(facts)}"
            )
        return f"could not create {what} within {waited_s:.0f} s: {_story(url, facts)}"
    refusal = facts.last_refusal
    if refusal is not None and refusal.result == error_name:
        return f"the cluster refused {what}: {error_name}: {refusal.reason}"
    return f"could not create {what}: {error_name}; {_story(url, facts)}"


def stopped_connecting(url: str, what: str, why: str, facts: ClientFacts) -> str:
    """A run stopped (``why``: "interrupted after 1.2 s", "--duration 2 s passed") before
    ``what`` was created."""
    return f"{why} before {what} was created: {_story(url, facts, so_far=True)}"


def _ignore(_line: str) -> None:
    pass


class ClientLog:
    """A temporary file for one client's log: :meth:`logger` for the client, :meth:`poll` to
    echo the new warnings and errors (through ``echo``) and update :attr:`facts`,
    :meth:`close` to read the rest and remove the file."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        descriptor, self.path = tempfile.mkstemp(prefix="ballast-perf-client-", suffix=".log")
        os.close(descriptor)
        self._file = open(self.path, encoding="utf-8", errors="replace")  # noqa: SIM115
        self._echo = echo
        self._partial = ""
        self._echoing = False  # the last line was echoed (so are its continuation lines)
        self.facts = ClientFacts()

    def logger(self) -> Any:
        # INFO, not DEBUG: the client checks the level before it formats a line, and logs
        # per message only at DEBUG.
        return pulsar.FileLogger(pulsar.LoggerLevel.Info, self.path)

    def poll(self) -> None:
        if self._file.closed:
            return
        text = self._partial + self._file.read()
        *lines, self._partial = text.split("\n")
        for raw in lines:
            line = parse_line(raw)
            if line is not None:
                self.facts.update(line)
                self._echoing = line.level in SHOWN_LEVELS
            if self._echoing and raw:
                self._echo(raw)

    def opened(self) -> None:
        """The client has opened the file (it does when it is constructed): remove its name
        now, so that no way of ending the process (SIGKILL, an abort) leaves it behind; the
        client writes and this reads through the open file."""
        self._remove()

    def close(self) -> None:
        """Read the rest without echoing it (what the client logs while it closes, pending
        calls ending "Disconnected", is no news) and close the file."""
        if self._file.closed:
            return
        self._echo = _ignore
        self._partial += "\n"
        self.poll()
        self._file.close()
        self._remove()

    def _remove(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
