"""The standalone's summary: every decision counted, only the latest few held."""

from __future__ import annotations

import math

from ballast.standalone.run import SHOWN_DECISIONS, Summary, summary_text


def _decision(i: int, action: str) -> dict[str, object]:
    return {
        "at": 1_700_000_000_000 + i,
        "action": action,
        "bundle": f"public/demo/0x{i:08x}_0x{i + 1:08x}",
        "broker": "b1",
        "destination": "b2",
        "reason": "why",
        "origin": "shedding",
    }


def test_a_long_run_holds_only_the_latest_decisions_and_counts_all() -> None:
    summary = Summary()
    for i in range(10_000):
        summary.record(_decision(i, "transfer" if i % 4 else "split"))
    assert summary.counts_text() == "2500 split, 7500 transfer"
    assert len(summary.latest) == SHOWN_DECISIONS
    assert [d["at"] for d in summary.latest] == [
        1_700_000_000_000 + i for i in range(10_000 - SHOWN_DECISIONS, 10_000)
    ]


def test_identical_decisions_are_each_counted() -> None:
    # Two leaders (one after the other) may decide the same move in the same millisecond.
    summary = Summary()
    summary.record(_decision(1, "assign"))
    summary.record(_decision(1, "assign"))
    assert summary.counts_text() == "2 assign"


def test_no_decisions_read_as_none() -> None:
    summary = Summary(loads={"b1": 0.5, "b2": 0.25})
    assert summary.counts_text() == "none"
    assert summary_text(summary).splitlines()[-1] == "load std-dev 0.125; decisions: none"


def test_a_load_past_a_doubles_range_is_summarised() -> None:
    """statistics.pstdev raised on it: an internal error after the run."""
    summary = Summary(loads={"b1": math.inf, "b2": 0.5})
    assert summary_text(summary).splitlines()[-1] == "load std-dev inf; decisions: none"


def test_decisions_after_the_stop_are_not_counted() -> None:
    """The leader places the bundles of the brokers it sees stopping: counted, the summary
    said 24 assignments where the console had shown 19."""
    summary = Summary()
    summary.record(_decision(1, "assign"))
    summary.closed = True
    summary.record(_decision(2, "assign"))
    assert summary.counts_text() == "1 assign" and len(summary.latest) == 1
