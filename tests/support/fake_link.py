"""A client connection for tests of the broker's topics: it keeps what the broker sends."""

from __future__ import annotations

from ballast.protocol.commands import Command


class FakeLink:
    def __init__(self, version: int = 20, unsent: int = 0) -> None:
        self.protocol_version = version
        self.remote = "127.0.0.1:50000"
        self.client_version = "fake-client 1.0"
        self.closed = False
        self.frames: list[bytes] = []
        self.commands: list[Command] = []
        self.unsent = unsent

    def send(self, data: bytes) -> None:
        self.frames.append(data)

    def send_parts(self, header: bytes, body: bytes) -> None:
        self.frames.append(header + body)

    def send_command(self, command: Command) -> None:
        self.commands.append(command)

    def unsent_bytes(self) -> int:
        return self.unsent

    def producer_closed_by_broker(self, producer_id: int, assigned_url: str | None) -> None:
        raise AssertionError("not used")

    def consumer_closed_by_broker(self, consumer_id: int, assigned_url: str | None) -> None:
        raise AssertionError("not used")
