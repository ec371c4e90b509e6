"""What a run records: a message limit counts exactly that many, failures are counted by the
client's result."""

from __future__ import annotations

from ballast.perf.stats import Recorder


def test_a_limit_counts_exactly_that_many_messages() -> None:
    recorder = Recorder(limit=3)
    assert [recorder.record(10, 1.0) for _ in range(2)] == [True, True]
    recorder.interval(1.0)  # the limit spans intervals
    assert [recorder.record(10, 2.0) for _ in range(3)] == [True, False, False]
    summary = recorder.summary(2.0)
    assert (summary.messages, summary.bytes, summary.latency.count) == (3, 30, 3)


def test_without_a_limit_every_message_counts() -> None:
    recorder = Recorder()
    assert all(recorder.record(1, 1.0) for _ in range(1000))
    assert recorder.summary(1.0).messages == 1000


def test_failures_are_counted_by_kind_most_frequent_first() -> None:
    recorder = Recorder()
    for kind in ("Timeout", "MessageTooBig", "MessageTooBig"):
        recorder.record_error(kind)
    summary = recorder.summary(1.0)
    assert summary.errors == 3
    assert summary.failures == (("MessageTooBig", 2), ("Timeout", 1))
    assert summary.to_json()["failures"] == {"MessageTooBig": 2, "Timeout": 1}
