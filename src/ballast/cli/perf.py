"""``ballast perf produce|consume``: load generation and measurement with the official Pulsar
client, like ``pulsar-perf`` (a live rate and latency display, a summary with percentiles)."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, NoReturn

import typer
from rich.live import Live

from ballast.cli.common import fail, output_console, print_json, url_problem
from ballast.clock import Clock, SystemClock
from ballast.model.naming import InvalidNameError, TopicName
from ballast.perf.display import LiveView, interval_logger, summary_text
from ballast.perf.run import (
    CLOSE_WAIT_S,
    MAX_SIZE,
    ConsumeOptions,
    IntervalListener,
    LineListener,
    PerfError,
    ProduceOptions,
    SubscriptionKind,
    client_threads_ended,
    consume,
    produce,
    topic_names,
)
from ballast.perf.stats import Interval, Summary

perf_app = typer.Typer(
    help="Drive a cluster with real clients (the official pulsar-client) and measure it.",
    no_args_is_help=True,
)

Url = Annotated[
    str,
    typer.Option("--url", "-u", help="Service URL: pulsar://host:port or http://host:port."),
]
Topics = Annotated[
    list[str],
    typer.Argument(
        help="Topics: NAME means non-persistent://public/default/NAME, T/NS/NAME "
        "non-persistent://T/NS/NAME."
    ),
]
TopicCount = Annotated[
    int, typer.Option("--topics", "-t", help="Use NAME-0 .. NAME-(N-1) for each topic.")
]
Duration = Annotated[
    float | None,
    typer.Option(
        "--duration",
        "-d",
        help="Send (receive) for this many seconds; also the longest wait to connect.",
    ),
]
Messages = Annotated[
    int | None, typer.Option("--messages", "-m", help="Stop after this many messages in all.")
]
Json = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]

INT_MAX = 2**31 - 1
MAX_CLIENTS = 100_000  # producers or consumers one perf process opens
MAX_RECEIVER_QUEUE = 1_000_000  # messages a consumer's queue holds (the client allocates it whole)


# clock, stop (the first Ctrl-C), hurry (the second: stop waiting for receipts), listeners
Runner = Callable[
    [Clock, asyncio.Event, asyncio.Event, IntervalListener, LineListener], Awaitable[Summary]
]

SCHEMES = ("pulsar", "pulsar+ssl", "http", "https")


def _check(
    url: str,
    duration: float | None,
    messages: int | None,
    *,
    more: Sequence[str] = (),
    **least: tuple[float, float],
) -> None:
    """Exit 2 naming every bad option: ``least`` maps each option (``max_pending`` for
    ``--max-pending``) to its value and the least value it takes, as ``(value, least)``;
    ``more`` are problems the command found itself."""
    problems = [
        f"--{name.replace('_', '-')} must be a number >= {minimum:g}, not {_number(value)}"
        for name, (value, minimum) in least.items()
        if not ((isinstance(value, int) or math.isfinite(value)) and value >= minimum)
    ]
    problems += [  # the client takes a C int: past it, an internal TypeError or a vast loop
        f"--{name.replace('_', '-')} must be at most {INT_MAX:,}, not {value}"
        for name, (value, _) in least.items()
        if isinstance(value, int) and value > INT_MAX
    ]
    problems.extend(more)
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        problems.append(f"--duration must be a number of seconds > 0, not {duration:g}")
    if messages is not None and not 1 <= messages <= INT_MAX:
        problems.append(f"--messages must be in 1..{INT_MAX:,}, not {messages}")
    problem = url_problem(url, SCHEMES, several_hosts=True)
    if problem is not None:
        problems.append(f"--url {url!r} is not a service URL: {problem}")
    if problems:
        fail("; ".join(problems))


def _clients_problems(option: str, topics: int, per_topic: int) -> list[str]:
    """More producers or consumers than one process should open (a typo's 10**9 topics
    would build that many names first)."""
    if topics * per_topic <= MAX_CLIENTS:
        return []
    return [
        f"--topics x {option} must be at most {MAX_CLIENTS:,}, not {topics * per_topic:,}: "
        "run several perf processes for more"
    ]


def _number(value: float) -> str:
    # An int option may hold any integer: one past a float's range cannot take :g.
    return str(value) if isinstance(value, int) else f"{value:g}"


def _size_problems(size: int) -> list[str]:
    if size <= MAX_SIZE:
        return []
    return [
        f"--size must be at most {MAX_SIZE:,} bytes, not {size}: perf sends each message "
        f"whole (no chunking), and one message carries at most 5 MiB (Pulsar's default "
        f"maxMessageSize), 1 KiB of it set aside for the message's metadata"
    ]


def _receiver_queue_problems(receiver_queue: int) -> list[str]:
    if receiver_queue <= MAX_RECEIVER_QUEUE:
        return []
    return [
        f"--receiver-queue must be at most {MAX_RECEIVER_QUEUE:,}, not {receiver_queue:,}: the "
        "client allocates each consumer's queue whole, up front (about 16 bytes a message; "
        "past 1.5 billion it aborted on this 24 GiB machine)"
    ]


def _exclusive_problems(kind: SubscriptionKind, consumers: int) -> list[str]:
    """Several consumers of an exclusive subscription: the broker refuses all but the first
    (Pulsar's "Exclusive consumer is already connected"), said before any client starts."""
    if kind is not SubscriptionKind.EXCLUSIVE or consumers <= 1:
        return []
    return [
        f"--consumers {consumers} needs a subscription type that shares: --type exclusive "
        "takes one consumer (use shared, failover or key_shared)"
    ]


def _subscription_problems(subscription: str) -> list[str]:
    if subscription.strip():
        return []
    return [f"--subscription must name a subscription, not {subscription!r}"]


def _topics(names: Sequence[str], count: int) -> tuple[str, ...]:
    """The topics to use (:func:`topic_names`); exit 2 naming a name Pulsar refuses, before a
    client starts and logs its own error."""
    chosen = topic_names(names, count)
    for name in chosen:
        try:
            TopicName.parse(name)
        except InvalidNameError as exc:
            fail(f"topic {name!r} is not a topic name: {exc}")
    return chosen


def _leave(code: int, reason: str | None = None, wait_s: float = CLOSE_WAIT_S) -> NoReturn:
    """Exit with ``code``, after ``error: reason``. With a client call still blocked in its
    thread the interpreter's own exit could hang or abort on it: leave at once instead."""
    if reason is not None:
        typer.echo(f"error: {reason}", err=True)
    if not client_threads_ended(wait_s):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise typer.Exit(code)


def _run(verb: str, latency_name: str, start: Runner, as_json: bool) -> None:
    console = output_console(stderr=as_json)
    view = LiveView(f"ballast perf {verb}", latency_name, pending=verb == "produce")

    def client_said(line: str) -> None:
        typer.echo(line, err=True)

    # The first Ctrl-C (or SIGTERM) stops the run, a second one the waiting for receipts.
    stop, hurry = asyncio.Event(), asyncio.Event()
    reader_gone = asyncio.Event()  # whoever read the interval lines closed the pipe

    async def main() -> Summary:
        def on_signal() -> None:
            (hurry if stop.is_set() else stop).set()

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        clock = SystemClock()
        if console.is_terminal and not as_json:
            with Live(view.render(), console=console, refresh_per_second=4) as live:

                def show(interval: Interval, outstanding: int | None) -> None:
                    view.add(interval, outstanding)
                    live.update(view.render())

                return await start(clock, stop, hurry, show, client_said)
        logger = interval_logger(console, verb.capitalize())

        def log(interval: Interval, outstanding: int | None) -> None:
            if reader_gone.is_set():
                return
            try:
                logger(interval, outstanding)
            except SystemExit:  # rich's answer to a closed pipe (`| head`): stdout is
                reader_gone.set()  # /dev/null now; end the run as a stop would
                stop.set()

        return await start(clock, stop, hurry, log, client_said)

    try:
        summary = asyncio.run(main())
    except PerfError as exc:  # could not connect, refused, stopped while connecting
        _leave(1, str(exc))
    except Exception as exc:  # the client's other errors
        _leave(1, f"{type(exc).__name__}: {exc}")
    if reader_gone.is_set():
        _leave(1, wait_s=0)  # nobody reads the summary; exit 1, as a closed pipe elsewhere
    if as_json:
        print_json(summary.to_json())
    else:
        console.print(summary_text(verb.capitalize() + "d", summary, latency_name), soft_wrap=True)
    failed = summary.errors or summary.unanswered or summary.disconnected
    _leave(1 if failed else 0, wait_s=0 if hurry.is_set() else CLOSE_WAIT_S)


@perf_app.command("produce")
def produce_command(
    topics: Topics,
    url: Url = "pulsar://127.0.0.1:6650",
    rate: Annotated[
        float, typer.Option("--rate", "-r", help="Messages/s in all; 0: as fast as possible.")
    ] = 100.0,
    size: Annotated[
        int, typer.Option("--size", "-s", help=f"Message size in bytes (at most {MAX_SIZE:,}).")
    ] = 1024,
    topic_count: TopicCount = 1,
    producers: Annotated[int, typer.Option("--producers", "-n", help="Producers per topic.")] = 1,
    duration: Duration = None,
    messages: Messages = None,
    batching: Annotated[
        bool, typer.Option("--batching/--no-batching", help="Batch messages in the client.")
    ] = False,
    batch_delay_ms: Annotated[
        int, typer.Option("--batch-delay-ms", help="Longest a batch waits to fill.")
    ] = 1,
    max_pending: Annotated[
        int, typer.Option("--max-pending", help="Messages awaiting receipts, per producer.")
    ] = 1000,
    keys: Annotated[
        int, typer.Option("--keys", help="Give messages one of this many keys (0: none).")
    ] = 0,
    as_json: Json = False,
) -> None:
    """Publish messages at a rate and report publish latency (send to receipt)."""
    _check(
        url,
        duration,
        messages,
        more=[*_size_problems(size), *_clients_problems("--producers", topic_count, producers)],
        rate=(rate, 0),
        size=(size, 0),
        topics=(topic_count, 1),
        producers=(producers, 1),
        batch_delay_ms=(batch_delay_ms, 0),
        max_pending=(max_pending, 1),
        keys=(keys, 0),
    )
    options = ProduceOptions(
        url=url,
        topics=_topics(topics, topic_count),
        rate=rate,
        size=size,
        producers=producers,
        duration_s=duration,
        messages=messages,
        batching=batching,
        batch_delay_ms=batch_delay_ms,
        max_pending=max_pending,
        keys=keys,
    )
    _run(
        "produce",
        "publish",
        lambda clock, stop, hurry, show, said: produce(
            options, clock, stop, show, said, hurry=hurry
        ),
        as_json,
    )


@perf_app.command("consume")
def consume_command(
    topics: Topics,
    url: Url = "pulsar://127.0.0.1:6650",
    subscription: Annotated[
        str, typer.Option("--subscription", "-S", help="Subscription name.")
    ] = "sub",
    kind: Annotated[
        SubscriptionKind, typer.Option("--type", help="Subscription type.")
    ] = SubscriptionKind.EXCLUSIVE,
    topic_count: TopicCount = 1,
    consumers: Annotated[int, typer.Option("--consumers", "-n", help="Consumers per topic.")] = 1,
    duration: Duration = None,
    messages: Messages = None,
    receiver_queue: Annotated[
        int, typer.Option("--receiver-queue", help="Each consumer's receiver queue size.")
    ] = 1000,
    as_json: Json = False,
) -> None:
    """Receive messages and report end-to-end latency (publish time to arrival)."""
    _check(
        url,
        duration,
        messages,
        more=[
            *_subscription_problems(subscription),
            *_exclusive_problems(kind, consumers),
            *_clients_problems("--consumers", topic_count, consumers),
            *_receiver_queue_problems(receiver_queue),
        ],
        topics=(topic_count, 1),
        consumers=(consumers, 1),
        receiver_queue=(receiver_queue, 1),
    )
    options = ConsumeOptions(
        url=url,
        topics=_topics(topics, topic_count),
        subscription=subscription,
        kind=kind,
        consumers=consumers,
        duration_s=duration,
        messages=messages,
        receiver_queue=receiver_queue,
    )
    _run(
        "consume",
        "end-to-end",
        lambda clock, stop, _hurry, show, said: consume(options, clock, stop, show, said),
        as_json,
    )
