"""``ballast perf produce|consume`` as a user runs them, against a three-broker cluster: the
consumer gets every message the producer published, both summaries say so; counts are exact
(``--messages``, rate x ``--duration``); bad options exit 2; a topic the cluster refuses, a
failed send or a URL where no broker answers exits 1 with the reason — at once on Ctrl-C or
at the end of ``--duration`` while still connecting."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from ballast.clock import Clock
from tests.conftest import REPO
from tests.support.live import get_json, standalone_ports
from tests.support.official_client import pulsar_url, start_cluster
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

TOPIC = "non-persistent://t/perf/load"


async def start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ballast",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def ballast(*args: str) -> tuple[int, str, str]:
    process = await start(*args)
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def subscribed(cluster: Any, clock: Clock) -> None:
    """Until a consumer has subscribed to a topic of one of ``cluster``'s brokers."""
    await eventually(
        lambda: any(
            topic.subscriptions
            for server in cluster.binary.values()
            for topic in server.topics.topics.values()
        ),
        clock,
        timeout_s=30,
        what="the consumer subscribed",
    )


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, not listening: held meanwhile, so
    nothing else takes it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


async def test_perf_consume_gets_what_perf_produce_sends(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/perf", 4)
    try:
        nodes = list(cluster.nodes.values())
        consuming = asyncio.ensure_future(
            ballast(
                "perf",
                "consume",
                TOPIC,
                "--url",
                pulsar_url(nodes[0]),
                "--messages",
                "600",
                "--duration",
                "60",
                "--json",
            )
        )
        await subscribed(cluster, clock)
        code, out, err = await ballast(
            "perf",
            "produce",
            TOPIC,
            "--url",
            nodes[1].identity.web_service_url,
            "--messages",
            "600",
            "--rate",
            "2000",
            "--size",
            "64",
            "--json",
        )
        assert code == 0, err
        produced = json.loads(out)
        assert (produced["messages"], produced["errors"], produced["bytes"]) == (600, 0, 600 * 64)
        assert 0 < produced["latencyMs"]["p50"] <= produced["latencyMs"]["p99"]
        code, out, err = await consuming
        assert code == 0, err
        consumed = json.loads(out)
        assert (consumed["messages"], consumed["bytes"]) == (600, 600 * 64)
    finally:
        await cluster.close()


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (("produce", "x", "--rate", "-1"), "--rate must be a number >= 0, not -1"),
        (("produce", "x", "--rate", "nan"), "--rate must be a number >= 0, not nan"),
        (("produce", "x", "--batch-delay-ms", "-1"), "--batch-delay-ms must be"),
        (("produce", "x", "--duration", "0"), "--duration must be a number of seconds > 0"),
        (("consume", "x", "--messages", "0"), "--messages must be in 1..2,147,483,647, not 0"),
        (("produce", "x", "--messages", "2147483648"), "--messages must be in 1..2,147,483,647"),
        (("consume", "x", "--receiver-queue", "0"), "--receiver-queue must be"),
        (("consume", "x", "--url", "127.0.0.1:6650"), "is not a service URL"),
        (("produce", "x", "--url", "pulsar://h:6650,g:99999"), "is not a service URL"),
        (("produce", "x", "--url", "pulsar://127.0.0.1:0"), "port 0 is no port"),
        (("consume", "x", "--type", "sometimes"), "--type"),
        (("produce", "bad:///x"), "topic 'bad:///x' is not a topic name"),
        (("produce", "a/b"), 'short name "a/b" is not <tenant>/<namespace>/<topic> or <topic>'),
        (("produce", "x", "-u", "pulsar://127.0.0.1:6650?x"), "has no query or fragment"),
        (("produce", "x", "-u", "pulsar://127.0.0.1:6650#f"), "has no query or fragment"),
        (("produce", "x", "-u", "pulsar://user@127.0.0.1:6650"), "names a user (user@host)"),
        (("consume", "persistent://t/x"), "is not a topic name"),
        (("consume", "x", "-S", ""), "--subscription must name a subscription, not ''"),
        (("consume", "x", "--subscription", " "), "--subscription must name a subscription"),
        (("produce", "x", "--size", "5241857"), "--size must be at most 5,241,856 bytes"),
        (("produce", "x", "--size", "6000000"), "--size must be at most 5,241,856 bytes"),
        (("produce", "x", "-s", "4611686018427387904"), "--size must be at most 5,241,856"),
        (("produce", "x", "-s", "99999999999999999999"), "--size must be at most 5,241,856"),
        (("produce", "x", "-s", "1" + "0" * 400), "--size must be at most 5,241,856"),
        # the client's C int: an internal TypeError, or a loop of 10**400 names
        (("produce", "x", "--max-pending", "1" + "0" * 400), "--max-pending must be at most"),
        (("consume", "x", "--receiver-queue", "2147483648"), "--receiver-queue must be at most"),
        # the client allocates the queue whole: 2 billion aborted it (std::bad_alloc)
        (("consume", "x", "--receiver-queue", "2000000000"), "must be at most 1,000,000"),
        (("produce", "x", "--topics", "1000", "-n", "101"), "--topics x --producers must be"),
        (("consume", "x", "--topics", "100001"), "--topics x --consumers must be at most 100,000"),
        (("consume", "x", "-n", "2"), "--type exclusive takes one consumer"),
        (("consume", "x", "-n", "2", "--type", "exclusive"), "--consumers 2 needs a subscription"),
    ],
)
def test_bad_options_exit_2_naming_the_option(
    ballast: Callable[..., CompletedProcess[str]], arguments: tuple[str, ...], named: str
) -> None:
    # Refused before any client starts (no server answers at the default URL).
    result = ballast("perf", *arguments)
    assert result.returncode == 2 and named in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


async def test_refused_topics_exit_1_with_the_reason(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        for verb, what in (
            ("produce", "a producer for persistent://t/perf/stored"),
            ("consume", "a consumer on persistent://t/perf/stored (subscription 'sub')"),
        ):
            code, out, err = await ballast(
                "perf", verb, "persistent://t/perf/stored", "--url", pulsar_url(node)
            )
            assert code == 1, err
            # The reason, from the broker's answer, in the error line (the C++ consumer's
            # exception does not carry it) and in the client's own log on stderr.
            assert (
                f"error: the cluster refused {what}: NotAllowedError: "
                "persistent://t/perf/stored: persistent topics need a storage layer"
            ) in err
            assert "WARN" in err and "Received error response from server" in err
            assert out == ""
    finally:
        await cluster.close()


async def test_failed_sends_are_counted_by_the_clients_reason(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1, overrides=("maxMessageSize=1024",))
    try:
        node: Any = next(iter(cluster.nodes.values()))
        base = ("perf", "produce", TOPIC, "--url", pulsar_url(node), "--size", "2000")
        code, out, err = await ballast(*base, "--messages", "3")
        assert code == 1, err
        assert "Produced 0 messages in" in out and "(3 failed: MessageTooBig 3)" in out
        assert "cannot exceed 1024 bytes" in err  # the client's warning, on stderr
        code, out, err = await ballast(*base, "--messages", "2", "--json")
        assert code == 1, err
        produced = json.loads(out)
        assert (produced["errors"], produced["failures"]) == (2, {"MessageTooBig": 2})
    finally:
        await cluster.close()


async def test_a_reader_that_goes_away_ends_the_run_quietly(clock: Clock) -> None:
    """``perf produce | head -1``: the next interval line met a closed pipe and printed two
    tracebacks ("Task exception was never retrieved"); the run went on to its end."""
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        process = await start(
            "perf", "produce", TOPIC, "--url", pulsar_url(node), "--rate", "20", "-d", "60"
        )
        assert process.stdout is not None and process.stderr is not None
        first = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        assert first.startswith(b"Produce")
        began = clock.monotonic()
        process.stdout.feed_eof()  # as `head -1` does: close our end, read no more
        transport = process._transport  # type: ignore[attr-defined]
        transport.get_pipe_transport(1).close()
        err = await asyncio.wait_for(process.stderr.read(), timeout=60)
        await asyncio.wait_for(process.wait(), timeout=60)
        assert process.returncode == 1
        assert clock.monotonic() - began < 30  # not the rest of --duration
        assert b"Traceback" not in err and b"Task exception" not in err, err.decode()
    finally:
        await cluster.close()


async def test_a_consumer_whose_broker_went_away_fails_the_run(clock: Clock) -> None:
    """The cluster stopped mid-run and never came back: consume said "Consumed 35 messages
    in 40.0 s (0 failed)", exit 0."""
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    closed = False
    try:
        node: Any = next(iter(cluster.nodes.values()))
        process = await start("perf", "consume", TOPIC, "--url", pulsar_url(node), "-d", "6")
        await subscribed(cluster, clock)
        await cluster.close()
        closed = True
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode == 1, err.decode()
        assert "(0 failed; 1 consumer not connected at the end)" in out.decode(), out.decode()
    finally:
        if not closed:
            await cluster.close()


async def test_consume_counts_exactly_the_messages_asked_for(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        url = pulsar_url(node)
        consuming = asyncio.ensure_future(
            ballast("perf", "consume", TOPIC, "--url", url, "--messages", "100", "--json")
        )
        await subscribed(cluster, clock)
        # Far more, as fast as the client goes: many arrive before the consumer closes.
        produced = await ballast(
            "perf",
            "produce",
            TOPIC,
            "--url",
            url,
            "--rate",
            "0",
            "--messages",
            "3000",
            "--size",
            "64",
        )
        assert produced[0] == 0, produced[2]
        code, out, err = await consuming
        assert code == 0, err
        consumed = json.loads(out)
        assert (consumed["messages"], consumed["bytes"]) == (100, 100 * 64)
    finally:
        await cluster.close()


async def test_a_run_of_a_duration_sends_rate_times_duration(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        code, out, err = await ballast(
            "perf",
            "produce",
            TOPIC,
            "--url",
            pulsar_url(node),
            "--rate",
            "200",
            "--duration",
            "1",
            "--json",
        )
        assert code == 0, err
        assert json.loads(out)["messages"] == 200
    finally:
        await cluster.close()


async def test_many_producers_as_fast_as_they_go_never_fill_a_queue(clock: Clock) -> None:
    """--max-pending holds per producer, as the client's queue does: a producer whose queue
    is full holds the run back; its sends never fail with ProducerQueueIsFull."""
    cluster = await start_cluster(clock, "t/perf", 4, brokers=2)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        code, out, err = await ballast(
            "perf", "produce", TOPIC, "--url", pulsar_url(node), "--topics", "4",
            "--producers", "2", "--rate", "0", "--max-pending", "8", "--messages", "6000",
            "--keys", "1000000", "--json",
        )  # fmt: skip
        assert code == 0, err
        produced = json.loads(out)
        assert (produced["messages"], produced["errors"]) == (6000, 0), produced
    finally:
        await cluster.close()


@pytest.mark.parametrize("verb", ["produce", "consume"])
async def test_a_url_where_nothing_listens_ends_with_the_duration(clock: Clock, verb: str) -> None:
    with closed_port() as port:
        url = f"pulsar://127.0.0.1:{port}"
        began = clock.monotonic()
        code, out, err = await ballast("perf", verb, "x", "--url", url, "--duration", "1")
        took_s = clock.monotonic() - began
    # The client alone would try for 30 s; the run ends with its duration (the command's
    # start-up and close take the rest).
    assert took_s < 10, err
    assert code == 1 and out == ""
    assert f"error: --duration 1 s passed before a {verb}" in err
    assert f"no connection to a broker via {url} yet (the client's last error: " in err
    assert "Connection refused" in err


async def test_ctrl_c_while_connecting_ends_the_run_at_once(clock: Clock) -> None:
    with closed_port() as port:
        url = f"pulsar://127.0.0.1:{port}"
        process = await start("perf", "produce", "x", "--url", url)
        assert process.stderr is not None
        seen: list[str] = []
        while not any("Connection refused" in line for line in seen):  # it is connecting
            line = await asyncio.wait_for(process.stderr.readline(), timeout=30)
            assert line, "".join(seen)
            seen.append(line.decode())
        began = clock.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(process.communicate(), timeout=30)
        took_s = clock.monotonic() - began
    assert took_s < 3, err
    assert process.returncode == 1 and out == b""
    assert "error: interrupted after" in err.decode()
    assert f"no connection to a broker via {url} yet" in err.decode()


async def test_a_brokers_http_port_as_its_pulsar_url_ends_with_the_duration(
    clock: Clock,
) -> None:
    cluster = await start_cluster(clock, "t/perf", 1, brokers=1)
    try:
        node: Any = next(iter(cluster.nodes.values()))
        url = f"pulsar://127.0.0.1:{node.identity.web_port}"
        began = clock.monotonic()
        code, _, err = await ballast("perf", "consume", "x", "--url", url, "--duration", "2")
        took_s = clock.monotonic() - began
        assert took_s < 10, err
        assert code == 1
        assert "--duration 2 s passed before a consumer on " in err
        assert f"the client connected via {url}" in err
        assert "with no error said: is that a broker's binary port, not its web port?" in err
    finally:
        await cluster.close()


async def test_a_second_ctrl_c_stops_waiting_for_receipts(clock: Clock, tmp_path: Path) -> None:
    """With its broker frozen, a stopped run waited out the client's 30 s send timeout for
    the receipts, deaf to a second Ctrl-C. (A standalone in its own process, so that it can
    be frozen: a closed broker fails the sends at once.)"""
    web, binary = standalone_ports(1)
    log = tmp_path / "standalone.log"
    with log.open("wb") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "ballast", "standalone", "--no-load", "--brokers", "1",
             "--port", str(web), "--broker-port", str(binary), "--duration", "300"],
            stdout=subprocess.DEVNULL, stderr=stderr, cwd=REPO,
        )  # fmt: skip
    try:
        try:
            await asyncio.to_thread(
                get_json, f"http://127.0.0.1:{web}/admin/v2/namespaces/public", 90
            )
        except OSError:
            pytest.fail(f"standalone did not come up: {log.read_text()}")
        url = f"pulsar://127.0.0.1:{binary}"
        process = await start("perf", "produce", "x", "--url", url, "--rate", "2000")
        assert process.stdout is not None and process.stderr is not None
        await asyncio.wait_for(process.stdout.readline(), timeout=60)  # an interval: sending
        first_line = clock.monotonic()  # REPORT_EVERY_S (1 s) into the run
        server.send_signal(signal.SIGSTOP)  # what is sent now waits for it
        await clock.sleep(0.5)  # a few hundred messages in flight
        process.send_signal(signal.SIGINT)
        seen: list[str] = []
        while not any("Ctrl-C again to stop waiting" in line for line in seen):
            line = await asyncio.wait_for(process.stderr.readline(), timeout=20)
            if not line:
                rest = await process.stdout.read()
                pytest.fail("".join(seen) + rest.decode())
            seen.append(line.decode())
        began = clock.monotonic()
        process.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(process.communicate(), timeout=30)
        assert clock.monotonic() - began < 5
        assert "Produced" in out.decode()  # the summary of what was done
        # The run ends with its last receipt, before the broker stopped; the wait for the
        # receipts that never came (at least 1.5 s here) counted as run time.
        seconds = re.search(r" messages? in ([\d.]+) s", out.decode())
        assert seconds is not None, out.decode()
        assert float(seconds.group(1)) < (began - first_line) + 1.0 - 0.75, out.decode()
        # and of what is unknown: sent, never answered; not a clean run
        assert re.search(r"; [\d,]+ without a receipt\)", out.decode()), out.decode()
        assert process.returncode == 1
    finally:
        server.send_signal(signal.SIGCONT)
        server.terminate()
        server.wait(timeout=60)
