"""Brokers stopped for good stay down, whatever restart was scheduled for them, and a broker
restarted twice at once comes back once: the events of a scenario mean what they say."""

from __future__ import annotations

import logging
import tomllib

import pytest

from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import parse_scenario
from ballast.sim.summary import summarize

BASE = """
duration = "6m"
step = "15s"
[cluster]
brokers = 3
[[namespaces]]
name = "a"
bundles = 8
topics = 40
rate = 50
"""


def run(events: str, caplog: pytest.LogCaptureFixture) -> dict[str, object]:
    with caplog.at_level(logging.ERROR):
        result = simulate(parse_scenario(tomllib.loads(BASE + events)), RunOptions())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    return summarize(result)


def started(summary: dict[str, object]) -> list[str]:
    new = summary["newBrokers"]
    assert isinstance(new, list)
    return [entry["broker"] for entry in new]


def test_a_stopped_broker_is_not_restarted_by_a_rolling_restart_under_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summary = run(
        """
[[events]]
at = "1m"
restart_brokers = "all"
interval = "1m"
[[events]]
at = "90s"
stop_brokers = [2]
""",
        caplog,
    )
    assert summary["final"]["brokers"] == 2  # type: ignore[index]
    assert "broker-002:8080" not in started(summary)


@pytest.mark.parametrize(
    "down",
    [
        'restart_brokers = [1]\ndown = "1m"',  # stopped while down in its restart
        'crash_brokers = [1]\nrestart_after = "1m"',  # stopped while crashed to come back
    ],
)
def test_a_broker_stopped_while_down_stays_down(
    caplog: pytest.LogCaptureFixture, down: str
) -> None:
    summary = run(
        f'[[events]]\nat = "1m"\n{down}\n[[events]]\nat = "80s"\nstop_brokers = [1]\n', caplog
    )
    assert summary["final"]["brokers"] == 2  # type: ignore[index]
    assert "broker-001:8080" not in started(summary)


def test_two_restarts_at_once_bring_each_broker_back_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summary = run(
        """
[[events]]
at = "1m"
restart_brokers = "all"
[[events]]
at = "1m"
restart_brokers = "all"
""",
        caplog,
    )
    assert summary["final"]["brokers"] == 3  # type: ignore[index]
    assert sorted(started(summary)) == [f"broker-00{i}:8080" for i in range(3)]


@pytest.mark.parametrize(
    "stop",
    [
        "stop_brokers = 3",
        'stop_brokers = "all"',
        "crash_brokers = 3",  # without restart_after: for good, the broker due back too
    ],
)
def test_a_count_or_all_counts_the_brokers_due_back_as_the_check_does(
    caplog: pytest.LogCaptureFixture, stop: str
) -> None:
    """The scenario check counts a broker crashed to come back as running, so a count or
    "all" stopping brokers for good takes it too: it stays down."""
    summary = run(
        f'[[events]]\nat = "1m"\ncrash_brokers = 1\nrestart_after = "30s"\n'
        f'[[events]]\nat = "70s"\n{stop}\n',
        caplog,
    )
    assert summary["final"]["brokers"] == 0  # type: ignore[index]
    assert started(summary) == []
