"""``ballast perf``: a load generator and measurer built on the official Pulsar client, in the
manner of ``pulsar-perf`` — producers publishing at a set rate (or as fast as the client
allows) and consumers receiving, each reporting every second and summarising at the end.

- Publish latency: from ``send_async`` to the broker's receipt (the client's callback).
- End-to-end latency (consume): from the message's publish time (set by the producer's clock)
  to its arrival in the listener — meaningful when both run on the same machine.
- Topics: ``--topics N`` turns each name into ``NAME-0`` .. ``NAME-(N-1)``, as pulsar-perf does;
  a name without a scheme is ``non-persistent://public/default/NAME`` (Ballast serves
  non-persistent topics).

Concurrency contract: the runners are coroutines on one event loop; the client's callbacks run
on its own threads and only touch the thread-safe :class:`Recorder`.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulsar

from ballast.clock import Clock
from ballast.clock.base import wall_clock_ms
from ballast.perf.stats import Interval, Recorder, Summary

REPORT_EVERY_S = 1.0
DEFAULT_DOMAIN = "non-persistent://public/default/"

IntervalListener = Callable[[Interval, int], None]  # the interval, messages outstanding


class SubscriptionKind(enum.Enum):
    EXCLUSIVE = "exclusive"
    SHARED = "shared"
    FAILOVER = "failover"
    KEY_SHARED = "key_shared"

    @property
    def consumer_type(self) -> Any:
        return {
            SubscriptionKind.EXCLUSIVE: pulsar.ConsumerType.Exclusive,
            SubscriptionKind.SHARED: pulsar.ConsumerType.Shared,
            SubscriptionKind.FAILOVER: pulsar.ConsumerType.Failover,
            SubscriptionKind.KEY_SHARED: pulsar.ConsumerType.KeyShared,
        }[self]


def topic_names(names: Sequence[str], count: int) -> tuple[str, ...]:
    """The topics to use: each name (completed to ``non-persistent://public/default/NAME``
    when it has no scheme), or with ``count`` > 1 its ``-0`` .. ``-(count-1)`` variants."""
    full = [name if "://" in name else DEFAULT_DOMAIN + name for name in names]
    if count <= 1:
        return tuple(full)
    return tuple(f"{name}-{i}" for name in full for i in range(count))


@dataclass(frozen=True, slots=True)
class ProduceOptions:
    url: str
    topics: tuple[str, ...]
    rate: float = 100.0  # messages/s over all producers; 0: as fast as the client allows
    size: int = 1024
    producers: int = 1  # per topic
    duration_s: float | None = None
    messages: int | None = None  # stop after this many in total
    batching: bool = False
    batch_delay_ms: int = 1
    max_pending: int = 1000  # per producer
    keys: int = 0  # messages carry keys k0 .. k(keys-1); 0: no key


@dataclass(frozen=True, slots=True)
class ConsumeOptions:
    url: str
    topics: tuple[str, ...]
    subscription: str = "sub"
    kind: SubscriptionKind = SubscriptionKind.EXCLUSIVE
    consumers: int = 1  # per topic
    duration_s: float | None = None
    messages: int | None = None  # stop after this many in total
    receiver_queue: int = 1000


def _client(url: str) -> Any:
    return pulsar.Client(
        url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )


async def _report(
    clock: Clock,
    recorder: Recorder,
    stop: asyncio.Event,
    listener: IntervalListener,
    outstanding: Callable[[], int],
) -> None:
    last = clock.monotonic()
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), REPORT_EVERY_S)
        except TimeoutError:
            pass
        now = clock.monotonic()
        listener(recorder.interval(now - last), outstanding())
        last = now


def _finished(
    options: ProduceOptions | ConsumeOptions, started: float, now: float, done: int
) -> bool:
    if options.duration_s is not None and now - started >= options.duration_s:
        return True
    return options.messages is not None and done >= options.messages


async def produce(
    options: ProduceOptions, clock: Clock, stop: asyncio.Event, listener: IntervalListener
) -> Summary:
    """Publish until ``stop``, the duration or the message count; the summary."""
    client = await asyncio.to_thread(_client, options.url)
    recorder = Recorder()
    producers: list[Any] = []
    try:
        for topic in options.topics:
            for _ in range(options.producers):
                producers.append(
                    await asyncio.to_thread(
                        client.create_producer,
                        topic,
                        batching_enabled=options.batching,
                        batching_max_publish_delay_ms=options.batch_delay_ms,
                        max_pending_messages=options.max_pending,
                        block_if_queue_full=False,
                    )
                )
        payload = b"x" * options.size
        keys = [f"k{i}" for i in range(options.keys)]
        size = options.size

        def sent(started: float, result: Any, _message_id: Any) -> None:
            if result == pulsar.Result.Ok:
                recorder.record(size, (time.perf_counter() - started) * 1000)
            else:
                recorder.record_error()

        count = 0
        limit = options.max_pending * len(producers)

        def outstanding() -> int:
            return count - recorder.messages - recorder.errors

        reporting = asyncio.ensure_future(_report(clock, recorder, stop, listener, outstanding))
        started = clock.monotonic()
        while not stop.is_set():
            now = clock.monotonic()
            if _finished(options, started, now, count):
                break
            if options.rate > 0:
                due = int((now - started) * options.rate) - count
                if due <= 0:
                    await clock.sleep(min(0.005, 1 / options.rate))
                    continue
            else:
                due = 500
            if options.messages is not None:
                due = min(due, options.messages - count)
            for _ in range(due):
                if outstanding() >= limit:
                    break
                producer = producers[count % len(producers)]
                callback = functools.partial(sent, time.perf_counter())
                if keys:
                    producer.send_async(payload, callback, partition_key=keys[count % len(keys)])
                else:
                    producer.send_async(payload, callback)
                count += 1
            await clock.sleep(0 if outstanding() < limit else 0.001)
        for producer in producers:
            await asyncio.to_thread(producer.flush)
        deadline = clock.monotonic() + 30
        while outstanding() > 0 and clock.monotonic() < deadline:
            await clock.sleep(0.01)
        elapsed = clock.monotonic() - started
        stop.set()
        await reporting
        return recorder.summary(elapsed)
    finally:
        for producer in producers:
            await asyncio.to_thread(producer.close)
        await asyncio.to_thread(client.close)


async def consume(
    options: ConsumeOptions, clock: Clock, stop: asyncio.Event, listener: IntervalListener
) -> Summary:
    """Receive until ``stop``, the duration or the message count; the summary."""
    client = await asyncio.to_thread(_client, options.url)
    recorder = Recorder()
    consumers: list[Any] = []

    def received(_consumer: Any, message: Any) -> None:
        recorder.record(len(message.data()), float(wall_clock_ms() - message.publish_timestamp()))

    try:
        for topic in options.topics:
            for i in range(options.consumers):
                consumers.append(
                    await asyncio.to_thread(
                        client.subscribe,
                        topic,
                        options.subscription,
                        consumer_type=options.kind.consumer_type,
                        consumer_name=f"perf-{i}",
                        message_listener=received,
                        receiver_queue_size=options.receiver_queue,
                    )
                )
        reporting = asyncio.ensure_future(_report(clock, recorder, stop, listener, lambda: 0))
        started = clock.monotonic()
        while not stop.is_set() and not _finished(
            options, started, clock.monotonic(), recorder.messages
        ):
            await clock.sleep(0.01)
        elapsed = clock.monotonic() - started
        stop.set()
        await reporting
        return recorder.summary(elapsed)
    finally:
        for consumer in consumers:
            await asyncio.to_thread(consumer.close)
        await asyncio.to_thread(client.close)
