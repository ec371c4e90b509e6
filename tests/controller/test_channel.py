"""The command channel: per-broker queues, retry with backoff, broker removal."""

from __future__ import annotations

import pytest

from ballast.clock import Clock
from ballast.controller.channel import BrokerGoneError, ChannelHaltedError, ControllerChannel
from ballast.controller.commands import (
    AnyCommand,
    AssignBundle,
    CommandReply,
    SplitBundle,
    TransportError,
    decode_command,
    encode_command,
)


class FlakyTransport:
    """Fails the first ``failures`` sends to each broker, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: dict[str, int] = {}
        self.delivered: list[tuple[str, AnyCommand]] = []

    async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
        self.attempts[broker_id] = self.attempts.get(broker_id, 0) + 1
        if self.attempts[broker_id] <= self.failures:
            raise TransportError("down")
        self.delivered.append((broker_id, command))
        return CommandReply(ok=True)


async def test_retries_with_backoff_in_order(clock: Clock) -> None:
    transport = FlakyTransport(failures=3)
    channel = ControllerChannel(transport, clock, initial_backoff_s=1.0, max_backoff_s=4.0)
    first = channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))
    second = channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0x80000000"))
    assert (await first).ok and (await second).ok
    assert clock.monotonic() == pytest.approx(1 + 2 + 4)  # 3 failures: 1s, 2s, 4s
    assert [c.bundle for _, c in transport.delivered] == [
        "t/ns/0x00000000_0xffffffff",
        "t/ns/0x00000000_0x80000000",
    ]
    assert channel.stats.retries == 3 and channel.stats.sent == 2
    await channel.stop()


async def test_a_dead_broker_delays_only_its_own_lane(clock: Clock) -> None:
    transport = FlakyTransport(failures=10**9)
    channel = ControllerChannel(transport, clock)
    stuck = channel.send("dead", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))

    class Healthy(FlakyTransport):
        async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
            if broker_id == "dead":
                raise TransportError("down")
            return CommandReply(ok=True)

    channel._transport = Healthy(0)
    assert (
        await channel.send("alive", AssignBundle(epoch=1, bundle="t/a/0x00000000_0xffffffff"))
    ).ok
    await channel.remove_broker("dead")
    with pytest.raises(BrokerGoneError):
        await stuck
    await channel.stop()


async def test_a_broker_that_left_gets_no_new_lane_until_it_rejoins(clock: Clock) -> None:
    transport = FlakyTransport(failures=0)
    channel = ControllerChannel(transport, clock)
    channel.add_broker("b1")
    await channel.remove_broker("b1")
    # a move's later step to a broker that left fails at once, not retried forever
    with pytest.raises(BrokerGoneError):
        await channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))
    assert channel.brokers() == [] and transport.attempts == {}
    channel.add_broker("b1")  # it registered again
    assert (await channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x0_0x1"))).ok
    await channel.stop()


async def test_a_halted_channel_sends_nothing_more(clock: Clock) -> None:
    transport = FlakyTransport(failures=10**9)
    channel = ControllerChannel(transport, clock)
    retrying = channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))
    await clock.sleep(1.0)
    attempts = transport.attempts["b1"]
    channel.halt()  # leadership lost: synchronous, from any code on the loop
    # Said as the controller's halt, not as the broker leaving: b1 may be in the cluster still
    # (a leader that woke after losing its session logged every pending move as "b1 left").
    with pytest.raises(ChannelHaltedError):
        await retrying
    with pytest.raises(ChannelHaltedError):
        await channel.send("b2", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))
    await clock.sleep(30.0)
    assert transport.attempts == {"b1": attempts}  # no retry after the halt
    await channel.stop()


async def test_a_stopped_channel_fails_what_it_held_as_halted(clock: Clock) -> None:
    channel = ControllerChannel(FlakyTransport(failures=10**9), clock)
    retrying = channel.send("b1", AssignBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff"))
    await clock.sleep(1.0)
    await channel.stop()
    with pytest.raises(ChannelHaltedError):
        await retrying


def test_commands_round_trip_as_json() -> None:
    command = SplitBundle(
        epoch=3,
        bundle="t/ns/0x00000000_0xffffffff",
        algorithm="range_equally_divide",
        boundaries=(5, 9),
        unload=True,
    )
    assert decode_command(encode_command(command)) == command
    assert b'"kind":"split"' in encode_command(command)
