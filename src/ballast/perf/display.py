"""How ``ballast perf`` shows its figures: on a terminal a live table of the latest intervals
(rate, throughput, latency percentiles) under a running total; otherwise one line per interval,
as ``pulsar-perf`` logs; and a summary at the end."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table

from ballast.perf.stats import Interval, Summary

ROWS = 12


class LiveView:
    """The latest intervals of one run, rendered as a table."""

    def __init__(self, title: str, latency_name: str, *, pending: bool) -> None:
        self.title = title
        self.latency_name = latency_name
        self.pending = pending  # producers wait for receipts; consumers have none to wait for
        self.rows: deque[tuple[float, Interval, int | None]] = deque(maxlen=ROWS)
        self.elapsed_s = 0.0
        self.messages = 0
        self.errors = 0

    def add(self, interval: Interval, outstanding: int | None) -> None:
        self.elapsed_s += interval.seconds
        self.messages += interval.messages
        self.errors += interval.errors
        self.rows.append((self.elapsed_s, interval, outstanding))

    def render(self) -> Group:
        table = Table(expand=True)
        headings = ("t (s)", "msg/s", "MiB/s", "pending", "errors", "p50 ms", "p95 ms")
        for heading in headings if self.pending else tuple(h for h in headings if h != "pending"):
            table.add_column(heading, justify="right")
        table.add_column("p99 ms", justify="right")
        table.add_column("max ms", justify="right")
        for at, interval, outstanding in self.rows:
            latency = interval.latency
            pending = (f"{outstanding or 0:,}",) if self.pending else ()
            shown = (latency.p50_ms, latency.p95_ms, latency.p99_ms, latency.max_ms)
            table.add_row(
                f"{at:.0f}",
                f"{interval.rate:,.0f}",
                f"{interval.throughput_mib:.2f}",
                *pending,
                f"{interval.errors:,}",
                *(f"{ms:.2f}" if latency.count else "-" for ms in shown),
            )
        title = (
            f"{self.title} — {_messages(self.messages)} in {self.elapsed_s:.0f} s"
            f"{f', {self.errors:,} errors' if self.errors else ''} ({self.latency_name} latency)"
        )
        return Group(Panel(table, title=title))


def interval_line(verb: str, interval: Interval, outstanding: int | None) -> str:
    """One interval as a log line (pulsar-perf's format, roughly); ``outstanding`` None
    (consuming) leaves out the pending count."""
    latency = interval.latency
    pending = "" if outstanding is None else f"pending {outstanding:,} --- "
    measured = (
        f"latency ms: mean {latency.mean_ms:.3f} med {latency.p50_ms:.3f} "
        f"95pct {latency.p95_ms:.3f} 99pct {latency.p99_ms:.3f} "
        f"99.9pct {latency.p999_ms:.3f} max {latency.max_ms:.3f}"
        if latency.count
        else "latency: none measured"  # not zeros, which would read as instant
    )
    return (
        f"{verb}: {interval.rate:,.1f} msg/s --- {interval.throughput_mib:.3f} MiB/s --- "
        f"{pending}failed {interval.errors:,} --- {measured}"
    )


def interval_logger(console: Console, verb: str) -> Callable[[Interval, int | None], None]:
    """Print each interval (but the empty last one) as one :func:`interval_line`, never
    wrapped: a line split mid-number at the console's width would garble the log."""

    def log(interval: Interval, outstanding: int | None) -> None:
        if interval.seconds > 0:
            console.print(interval_line(verb, interval, outstanding), soft_wrap=True)

    return log


def _adrift(consumers: int) -> str:
    if not consumers:
        return ""
    return f"; {consumers:,} consumer{'s' if consumers > 1 else ''} not connected at the end"


def summary_text(verb: str, summary: Summary, latency_name: str) -> str:
    latency = summary.latency
    kinds = ", ".join(f"{kind} {count:,}" for kind, count in summary.failures)
    return "\n".join(
        [
            f"{verb} {_messages(summary.messages)} in {summary.seconds:.1f} s "
            f"({summary.errors:,} failed{f': {kinds}' if kinds else ''}"
            f"{f'; {summary.unanswered:,} without a receipt' if summary.unanswered else ''}"
            f"{_adrift(summary.disconnected)}): "
            f"{summary.rate:,.1f} msg/s, "
            f"{summary.throughput_mib:.3f} MiB/s",
            f"{latency_name} latency ms: mean {latency.mean_ms:.3f}  p50 {latency.p50_ms:.3f}  "
            f"p95 {latency.p95_ms:.3f}  p99 {latency.p99_ms:.3f}  p99.9 {latency.p999_ms:.3f}  "
            f"max {latency.max_ms:.3f}"
            if latency.count
            else f"{latency_name} latency: none measured",
        ]
    )


def _messages(count: int) -> str:
    return f"{count:,} message{'' if count == 1 else 's'}"
