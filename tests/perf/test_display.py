"""What ``ballast perf`` prints: interval lines whole however long, and the failures of a run
by kind in its summary."""

from __future__ import annotations

import io

from rich.console import Console

from ballast.cli.common import PIPED_WIDTH
from ballast.perf.display import LiveView, interval_line, interval_logger, summary_text
from ballast.perf.stats import Interval, Latencies, Summary


def test_an_interval_line_longer_than_the_console_is_not_wrapped() -> None:
    latency = Latencies(
        1_000, 12_345.678, 12_345.678, 23_456.789, 34_567.891, 45_678.912, 56_789.123
    )
    interval = Interval(1.0, 123_456_789, 10**12, 12_345, latency)
    line = interval_line("Produce", interval, 1_234_567)
    assert len(line) > PIPED_WIDTH
    out = io.StringIO()
    log = interval_logger(Console(file=out, width=PIPED_WIDTH), "Produce")  # as when piped
    log(interval, 1_234_567)
    log(Interval(0.0, 0, 0, 0, Latencies()), 0)  # the empty last interval is not printed
    assert out.getvalue() == line + "\n"


def test_the_summary_names_the_failures_by_kind() -> None:
    summary = Summary(1.0, 5, 50, 3, Latencies(), (("MessageTooBig", 2), ("Timeout", 1)))
    first = summary_text("Produced", summary, "publish").splitlines()[0]
    assert first.startswith("Produced 5 messages in 1.0 s (3 failed: MessageTooBig 2, Timeout 1):")
    assert "(0 failed):" in summary_text("Produced", Summary(1.0, 5, 50, 0, Latencies()), "publish")


def test_a_run_without_a_latency_says_so_rather_than_zero() -> None:
    """Zeros would read as instant receipts; a run where every send failed measured none."""
    nothing = Summary(1.0, 0, 0, 3, Latencies(), (("MessageTooBig", 3),))
    assert summary_text("Produced", nothing, "publish").splitlines()[1] == (
        "publish latency: none measured"
    )
    assert nothing.to_json()["latencyMs"] is None
    measured = Summary(1.0, 2, 20, 0, Latencies.of([1.0, 3.0]), unanswered=4)
    assert "(0 failed; 4 without a receipt):" in summary_text("Produced", measured, "publish")
    assert measured.to_json()["latencyMs"] == {
        "mean": 2.0, "p50": 2.0, "p95": 2.9, "p99": 2.98, "p99.9": 2.998, "max": 3.0,
    }  # fmt: skip
    assert measured.to_json()["unanswered"] == 4
    one = Summary(1.0, 1, 10, 0, Latencies.of([1.0]))
    assert summary_text("Produced", one, "publish").startswith("Produced 1 message in 1.0 s")
    quiet = interval_line("Consume", Interval(1.0, 0, 0, 0, Latencies()), None)
    assert quiet.endswith("failed 0 --- latency: none measured"), quiet
    view = LiveView("ballast perf", "end-to-end", pending=False)
    view.add(Interval(1.0, 0, 0, 0, Latencies()), None)
    table = view.render().renderables[0].renderable
    assert [next(iter(column.cells)) for column in table.columns][-4:] == ["-"] * 4


def test_pending_is_shown_for_producers_only() -> None:
    """A consumer waits for no receipts: a pending count there would always read 0."""
    interval = Interval(1.0, 10, 1_000, 0, Latencies.of([1.0]))
    assert "pending 7 --- failed 0" in interval_line("Produce", interval, 7)
    consumed = interval_line("Consume", interval, None)
    assert "pending" not in consumed and "MiB/s --- failed 0" in consumed
    for pending in (True, False):
        view = LiveView("ballast perf", "publish", pending=pending)
        view.add(interval, 7 if pending else None)
        table = view.render().renderables[0].renderable
        headers = [column.header for column in table.columns]
        assert ("pending" in headers) is pending
        assert len(headers) == (9 if pending else 8)
