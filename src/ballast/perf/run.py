"""``ballast perf``: a load generator and measurer built on the official Pulsar client, in the
manner of ``pulsar-perf`` — producers publishing at a set rate (or as fast as the client
allows) and consumers receiving, each reporting every second and summarising at the end.

- Publish latency: from ``send_async`` to the broker's receipt (the client's callback).
- End-to-end latency (consume): from the message's publish time (set by the producer's clock)
  to its arrival in the listener — meaningful when both run on the same machine.
- Topics: ``--topics N`` turns each name into ``NAME-0`` .. ``NAME-(N-1)``, as pulsar-perf does;
  a name without a scheme is ``non-persistent://public/default/NAME``, and ``T/NS/NAME`` is
  ``non-persistent://T/NS/NAME`` (Ballast serves non-persistent topics).
- Connecting: the client's calls that block (creating producers and consumers, flushing,
  closing) run on daemon threads of their own, not asyncio's executor, whose threads the
  interpreter joins at exit. A stop (Ctrl-C) or the end of the duration ends a run that is
  still connecting at once (:class:`PerfError`); closing the client then makes the blocked call
  return, and :func:`client_threads_ended` tells the command whether any is left.
- Duration: it counts from the moment every producer or consumer exists, and bounds the
  connecting before as well.

Concurrency contract: the runners are coroutines on one event loop; the client's callbacks run
on its own threads and only touch the thread-safe :class:`Recorder`; the client's log is read
on the loop (:class:`ClientLog`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pulsar

from ballast.clock import Clock
from ballast.clock.base import wall_clock_ms
from ballast.perf.client_log import ClientLog, creation_failure, stopped_connecting
from ballast.perf.stats import Interval, Recorder, Summary
from ballast.protocol.versions import DEFAULT_MAX_MESSAGE_SIZE

REPORT_EVERY_S = 1.0
NON_PERSISTENT = "non-persistent"
DEFAULT_DOMAIN = f"{NON_PERSISTENT}://public/default/"
OPERATION_TIMEOUT_S = 30  # the client's, for each lookup, producer or subscription
DRAIN_S = 30.0  # longest a producer waits for the receipts of what it sent
CLOSE_WAIT_S = 5.0  # longest a run waits for the client to close
LOG_POLL_S = 0.1
CLIENT_THREAD = "ballast-perf-client"
# The largest --size: one message without chunking carries at most maxMessageSize (Pulsar's
# default, 5 MiB) of payload and metadata. The metadata of perf's messages (producer name,
# sequence id, publish time, key) took 34 to 43 bytes against `ballast standalone` (largest
# payload 5,242,846 bytes unbatched without a key); it grows with the sequence id and the
# names, so 1 KiB is set aside for it.
MAX_SIZE = DEFAULT_MAX_MESSAGE_SIZE - 1024
RECONNECT_GRACE_S = 5.0  # a consumer between two connections at the end may reconnect
_EPSILON = 1e-9  # float slack in rate x time (0.1 s x 30 msg/s is 3.0000000000000004)

IntervalListener = Callable[[Interval, int | None], None]
"""Called with each interval and the messages sent without a receipt yet (None when consuming)."""
LineListener = Callable[[str], None]  # a warning or error line of the client's log

T = TypeVar("T")


class PerfError(Exception):
    """A run that could not start, or was stopped before it could: the reason, in words."""


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
    """The topics to use: each name completed as Pulsar completes a short name, but to
    non-persistent (``NAME`` is ``non-persistent://public/default/NAME``, ``T/NS/NAME`` is
    ``non-persistent://T/NS/NAME``; any other short name is left for the parse to refuse),
    or with ``count`` > 1 its ``-0`` .. ``-(count-1)`` variants."""
    full = [_completed(name) for name in names]
    if count <= 1:
        return tuple(full)
    return tuple(f"{name}-{i}" for name in full for i in range(count))


def _completed(name: str) -> str:
    if "://" in name:
        return name
    parts = name.count("/")
    if parts == 0:
        return DEFAULT_DOMAIN + name
    return f"{NON_PERSISTENT}://{name}" if parts == 2 else name


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


def _finished(
    options: ProduceOptions | ConsumeOptions, started: float, now: float, done: int
) -> bool:
    if options.duration_s is not None and now - started >= options.duration_s:
        return True
    return options.messages is not None and done >= options.messages


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _in_thread(call: Callable[[], T]) -> asyncio.Future[T]:
    """``call()`` on a daemon thread of its own, its outcome as a future of the running loop.
    Nobody need wait for it: a call abandoned on a stop ends when the client closes."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    future.add_done_callback(_retrieve)  # an abandoned call's error is no one's to report

    def succeed(value: T) -> None:
        if not future.done():
            future.set_result(value)

    def failed(error: Exception) -> None:
        if not future.done():
            future.set_exception(error)

    def run() -> None:
        try:
            value = call()
        except Exception as exc:
            outcome: Callable[[], None] = functools.partial(failed, exc)
        else:
            outcome = functools.partial(succeed, value)
        try:
            loop.call_soon_threadsafe(outcome)
        except RuntimeError:  # the loop has closed: nobody waits for this call any more
            pass

    threading.Thread(target=run, name=CLIENT_THREAD, daemon=True).start()
    return future


def client_threads_ended(wait_s: float) -> bool:
    """Whether every client call of this process has returned, after waiting up to
    ``wait_s`` for the last ones. One still blocked when the interpreter exits can abort the
    exit ("terminate called without an active exception"): the caller then leaves at once."""
    deadline = time.perf_counter() + wait_s
    for thread in threading.enumerate():
        if thread.name == CLIENT_THREAD:
            thread.join(max(0.0, deadline - time.perf_counter()))
            if thread.is_alive():
                return False
    return True


def messages_due(elapsed_s: float, rate: float, duration_s: float | None) -> int:
    """How many messages a run at ``rate`` msg/s has sent ``elapsed_s`` seconds in: one at
    each ``k / rate`` from 0 and, with a duration, before it ends — ``rate x duration`` in all.
    """
    due = math.floor(elapsed_s * rate + _EPSILON) + 1
    if duration_s is not None:
        due = min(due, math.ceil(duration_s * rate - _EPSILON))
    return max(due, 0)


def message_key(nth: int, keys: int) -> str:
    """The key of a producer's ``nth`` message (from 0) in a run with ``keys`` keys: each
    producer, so each topic, goes through every key in turn. Keys taken by the run's count
    across its producers gave a producer only the keys congruent to its index (two topics
    and four keys: k0 and k2 on one, k1 and k3 on the other)."""
    return f"k{nth % keys}"


@dataclass
class _Session:
    """One run's client, its log, and how it creates its producers or consumers: each
    creation waits for the client, a stop or the end of the duration, whichever comes first."""

    url: str
    clock: Clock
    stop: asyncio.Event
    duration_s: float | None
    log: ClientLog
    client: Any
    started: float

    @classmethod
    def open(
        cls,
        url: str,
        clock: Clock,
        stop: asyncio.Event,
        duration_s: float | None,
        on_log_line: LineListener,
    ) -> _Session:
        log = ClientLog(on_log_line)
        try:
            client = pulsar.Client(
                url, operation_timeout_seconds=OPERATION_TIMEOUT_S, logger=log.logger()
            )
        except Exception:
            log.close()
            raise
        log.opened()
        return cls(url, clock, stop, duration_s, log, client, clock.monotonic())

    async def follow_log(self) -> None:
        while True:
            self.log.poll()
            await self.clock.sleep(LOG_POLL_S)

    async def create(self, what: str, call: Callable[[], T]) -> T:
        """``call()`` (a blocking creation of ``what``, "a producer for TOPIC"); PerfError in
        words when it fails or the run stops first."""
        began = self.clock.monotonic()
        creating = _in_thread(call)
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        timeout = None
        if self.duration_s is not None:
            timeout = max(0.0, self.started + self.duration_s - self.clock.monotonic())
        try:
            await asyncio.wait(
                [creating, stopping], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopping.cancel()
        self.log.poll()
        if creating.done():
            error = creating.exception()
            if error is None:
                return creating.result()
            if isinstance(error, pulsar.PulsarException):
                waited_s = self.clock.monotonic() - began
                reason = creation_failure(
                    self.url, what, type(error).__name__, self.log.facts, waited_s
                )
                raise PerfError(reason) from error
            raise error
        creating.cancel()
        if self.stop.is_set():
            why = f"interrupted after {self.clock.monotonic() - self.started:.1f} s"
        else:
            why = f"--duration {self.duration_s:g} s passed"
        raise PerfError(stopped_connecting(self.url, what, why, self.log.facts))

    async def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Close the client (and with it every producer and consumer), waiting ``wait_s`` at
        most; then read the rest of its log."""
        self.log.poll()
        closing = _in_thread(self.client.close)
        try:
            await asyncio.wait_for(asyncio.shield(closing), wait_s)
        except (TimeoutError, pulsar.PulsarException):
            pass  # left to client_threads_ended; a close error is no news after the run
        self.log.close()


async def _report(
    clock: Clock,
    recorder: Recorder,
    stop: asyncio.Event,
    listener: IntervalListener,
    outstanding: Callable[[], int | None],
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


async def produce(
    options: ProduceOptions,
    clock: Clock,
    stop: asyncio.Event,
    listener: IntervalListener,
    on_log_line: LineListener,
    *,
    hurry: asyncio.Event | None = None,
) -> Summary:
    """Publish until ``stop``, the duration or the message count; the summary. Then wait up
    to :data:`DRAIN_S` for the receipts of what was sent, unless ``hurry`` is set (a second
    Ctrl-C). PerfError when a producer cannot be created, or the run stops before they all
    are."""
    session = _Session.open(options.url, clock, stop, options.duration_s, on_log_line)
    following = asyncio.ensure_future(session.follow_log())
    recorder = Recorder()
    try:
        producers: list[Any] = []
        for topic in options.topics:
            for _ in range(options.producers):
                producers.append(
                    await session.create(
                        f"a producer for {topic}",
                        functools.partial(
                            session.client.create_producer,
                            topic,
                            batching_enabled=options.batching,
                            batching_max_publish_delay_ms=options.batch_delay_ms,
                            max_pending_messages=options.max_pending,
                            block_if_queue_full=False,
                        ),
                    )
                )
        payload = b"x" * options.size
        size = options.size
        # --max-pending holds per producer, as the client's queue is: each producer's sends
        # (this task) and receipts (the client's threads, under the lock) are counted apart,
        # so a slower producer holds the run back instead of failing with a full queue.
        given = [0] * len(producers)
        answered = [0] * len(producers)
        answers = threading.Lock()

        def sent(index: int, started: float, result: Any, _message_id: Any) -> None:
            with answers:
                answered[index] += 1
            if result == pulsar.Result.Ok:
                recorder.record(size, (time.perf_counter() - started) * 1000)
            else:
                recorder.record_error(getattr(result, "name", str(result)))

        count = 0

        def outstanding() -> int:
            return count - recorder.messages - recorder.errors

        reporting = asyncio.ensure_future(_report(clock, recorder, stop, listener, outstanding))
        started = clock.monotonic()
        while not stop.is_set():
            elapsed = clock.monotonic() - started
            ending = options.duration_s is not None and elapsed >= options.duration_s
            if options.rate > 0:
                target = messages_due(elapsed, options.rate, options.duration_s)
            else:
                target = count if ending else count + 500
            if options.messages is not None:
                target = min(target, options.messages)
            while count < target:
                index = count % len(producers)
                if given[index] - answered[index] >= options.max_pending:
                    break  # its queue is full: held back until receipts come
                callback = functools.partial(sent, index, time.perf_counter())
                if options.keys:
                    key = message_key(given[index], options.keys)
                    producers[index].send_async(payload, callback, partition_key=key)
                else:
                    producers[index].send_async(payload, callback)
                given[index] += 1
                count += 1
            if ending or (options.messages is not None and count >= options.messages):
                break
            if count < target:  # held back by --max-pending
                await clock.sleep(0.001)
            elif options.rate > 0:
                await clock.sleep(min(0.005, 1 / options.rate))
            else:
                await clock.sleep(0)
        for producer in producers:
            _in_thread(producer.flush)  # one still blocked after the drain ends on close
        draining = clock.monotonic()
        # The run lasts until its last receipt: a wait for receipts that never came is no
        # part of it (a --duration 40 run whose broker went away read as 63.6 s).
        last_receipt, waiting_for = draining, outstanding()
        told = False
        while outstanding() > 0 and clock.monotonic() < draining + DRAIN_S:
            if outstanding() != waiting_for:
                last_receipt, waiting_for = clock.monotonic(), outstanding()
            if hurry is not None and hurry.is_set():
                break
            if not told and clock.monotonic() - draining >= 1:
                told = True
                on_log_line(
                    f"waiting up to {DRAIN_S:g} s for the receipts of {outstanding()} messages "
                    "(Ctrl-C again to stop waiting)"
                )
            await clock.sleep(0.01)
        if outstanding() != waiting_for:
            last_receipt = clock.monotonic()
        elapsed = last_receipt - started
        stop.set()
        await reporting
        summary = recorder.summary(elapsed)  # the receipts counted, then what they leave
        return dataclasses.replace(summary, unanswered=count - summary.messages - summary.errors)
    finally:
        following.cancel()
        hurried = hurry is not None and hurry.is_set()
        await session.close(0 if hurried else CLOSE_WAIT_S)  # hurried: no more waiting


async def consume(
    options: ConsumeOptions,
    clock: Clock,
    stop: asyncio.Event,
    listener: IntervalListener,
    on_log_line: LineListener,
) -> Summary:
    """Receive until ``stop``, the duration or the message count — counting exactly that
    many, not the ones that arrive before the consumers close; the summary. PerfError when a
    consumer cannot subscribe, or the run stops before they all have."""
    session = _Session.open(options.url, clock, stop, options.duration_s, on_log_line)
    following = asyncio.ensure_future(session.follow_log())
    recorder = Recorder(limit=options.messages)

    def received(_consumer: Any, message: Any) -> None:
        recorder.record(len(message.data()), float(wall_clock_ms() - message.publish_timestamp()))

    consumers: list[Any] = []
    try:
        for topic in options.topics:
            for i in range(options.consumers):
                consumer = await session.create(
                    f"a consumer on {topic} (subscription {options.subscription!r})",
                    functools.partial(
                        session.client.subscribe,
                        topic,
                        options.subscription,
                        consumer_type=options.kind.consumer_type,
                        consumer_name=f"perf-{i}",
                        message_listener=received,
                        receiver_queue_size=options.receiver_queue,
                    ),
                )
                consumers.append(consumer)
        reporting = asyncio.ensure_future(_report(clock, recorder, stop, listener, lambda: None))
        started = clock.monotonic()
        while not stop.is_set() and not _finished(
            options, started, clock.monotonic(), recorder.messages
        ):
            await clock.sleep(0.01)
        elapsed = clock.monotonic() - started
        stop.set()
        await reporting
        summary = recorder.summary(elapsed)
        adrift = await _disconnected(consumers, clock)
        return dataclasses.replace(summary, disconnected=adrift) if adrift else summary
    finally:
        following.cancel()
        await session.close()


async def _disconnected(consumers: Sequence[Any], clock: Clock) -> int:
    """How many ``consumers`` have no connection to a broker at the end of a run, after
    :data:`RECONNECT_GRACE_S` for those between two (a bundle being moved): a consumer whose
    broker went away receives nothing, and the run is not a clean one."""
    deadline = clock.monotonic() + RECONNECT_GRACE_S
    while True:
        adrift = sum(1 for consumer in consumers if not consumer.is_connected())
        if adrift == 0 or clock.monotonic() >= deadline:
            return adrift
        await clock.sleep(0.1)
