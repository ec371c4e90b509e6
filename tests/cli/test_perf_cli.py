"""``ballast perf produce|consume`` as a user runs them, against a three-broker cluster: the
consumer gets every message the producer published, both summaries say so; bad options exit 2;
a topic the cluster refuses exits 1 with the broker's reason."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from subprocess import CompletedProcess
from typing import Any

import pytest

from ballast.clock import Clock
from tests.conftest import REPO
from tests.support.official_client import pulsar_url, start_cluster
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

TOPIC = "non-persistent://t/perf/load"


async def ballast(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ballast",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


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

        def subscribed() -> bool:
            return any(
                topic.subscriptions
                for server in cluster.binary.values()
                for topic in server.topics.topics.values()
            )

        await eventually(subscribed, clock, timeout_s=30, what="the consumer subscribed")
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
        (("consume", "x", "--messages", "0"), "--messages must be >= 1, not 0"),
        (("consume", "x", "--receiver-queue", "0"), "--receiver-queue must be"),
        (("consume", "x", "--url", "127.0.0.1:6650"), "is not a service URL"),
        (("produce", "x", "--url", "pulsar://h:6650,g:99999"), "is not a service URL"),
        (("consume", "x", "--type", "sometimes"), "--type"),
        (("produce", "bad:///x"), "topic 'bad:///x' is not a topic name"),
        (("consume", "persistent://t/x"), "is not a topic name"),
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
        code, out, err = await ballast(
            "perf",
            "produce",
            "persistent://t/perf/stored",
            "--url",
            pulsar_url(node),
            "--messages",
            "1",
        )
        assert code == 1 and "NotAllowed" in err, err
        assert "persistent topics need a storage layer" in out  # the client logs the reason
    finally:
        await cluster.close()
