"""The producer's schedule: at rate R for D seconds, R x D messages, the first at once; and the
keys each producer's messages carry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.perf.run import message_key, messages_due


def test_the_first_message_is_due_at_once_and_one_more_every_period() -> None:
    assert [messages_due(t, 10.0, None) for t in (0.0, 0.05, 0.1, 0.15, 0.2)] == [1, 1, 2, 2, 3]


@pytest.mark.parametrize(
    ("rate", "duration_s", "expected"),
    [(500.0, 10.0, 5000), (200.0, 1.0, 200), (30.0, 0.1, 3), (1000.0, 1.5, 1500), (3.0, 0.5, 2)],
)
def test_a_run_of_a_duration_sends_rate_times_duration(
    rate: float, duration_s: float, expected: int
) -> None:
    # At the end of the duration, and long after: never one short, never one over.
    assert messages_due(duration_s, rate, duration_s) == expected
    assert messages_due(duration_s * 3, rate, duration_s) == expected
    assert messages_due(duration_s - 1e-6, rate, duration_s) == expected


def test_float_slack_does_not_move_a_message() -> None:
    # 0.3 x 10 is 2.9999999999999996: the message due at 0.3 s is due at 0.3 s.
    assert messages_due(0.3, 10.0, None) == 4


@given(st.integers(1, 12), st.integers(1, 12))
def test_every_producer_goes_through_every_key(producers: int, keys: int) -> None:
    """The run hands its messages to its producers in turn; each producer's own count picks
    the key, so every producer (and topic) sees all keys, however the counts divide."""
    sent = [0] * producers
    seen: list[set[str]] = [set() for _ in range(producers)]
    for count in range(producers * keys):
        index = count % producers
        seen[index].add(message_key(sent[index], keys))
        sent[index] += 1
    assert all(keys_seen == {f"k{k}" for k in range(keys)} for keys_seen in seen)
