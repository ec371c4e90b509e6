"""What a load generator measures: messages, bytes, errors and latencies, recorded from the
client's callback threads and read in intervals (the live display) and in total (the summary).

Concurrency contract: ``record*`` may be called from any thread; ``interval`` and ``summary``
from one reader thread. A lock guards the swap of the current interval's samples.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

PERCENTILES = (50.0, 95.0, 99.0, 99.9)


@dataclass(frozen=True, slots=True)
class Latencies:
    """Latency percentiles in milliseconds (all zero without samples)."""

    count: int = 0
    mean_ms: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    p999_ms: float = 0.0
    max_ms: float = 0.0

    @classmethod
    def of(cls, samples_ms: list[float] | np.ndarray) -> Latencies:
        values = np.asarray(samples_ms, dtype=np.float64)
        if values.size == 0:
            return cls()
        p50, p95, p99, p999 = (float(v) for v in np.percentile(values, PERCENTILES))
        return cls(
            count=int(values.size),
            mean_ms=float(values.mean()),
            p50_ms=p50,
            p95_ms=p95,
            p99_ms=p99,
            p999_ms=p999,
            max_ms=float(values.max()),
        )


@dataclass(frozen=True, slots=True)
class Interval:
    """One reporting interval: rates over ``seconds`` and the latencies seen in it."""

    seconds: float
    messages: int
    bytes: int
    errors: int
    latency: Latencies

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def throughput_mib(self) -> float:
        return self.bytes / self.seconds / (1024 * 1024) if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Summary:
    """A whole run. ``failures``: the errors by kind (the client's result, "MessageTooBig"),
    the most frequent first."""

    seconds: float
    messages: int
    bytes: int
    errors: int
    latency: Latencies
    failures: tuple[tuple[str, int], ...] = ()
    # Messages sent whose receipt never came (the wait for receipts ended: its time, or a
    # second Ctrl-C): neither published nor failed, as far as the run knows.
    unanswered: int | None = None  # None: not a producer's run
    # Consumers with no connection to a broker when the run ended (their broker went away).
    disconnected: int = 0

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def throughput_mib(self) -> float:
        return self.bytes / self.seconds / (1024 * 1024) if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "seconds": round(self.seconds, 3),
            "messages": self.messages,
            "bytes": self.bytes,
            "errors": self.errors,
            "failures": dict(self.failures),
            **({} if self.unanswered is None else {"unanswered": self.unanswered}),
            **({"disconnected": self.disconnected} if self.disconnected else {}),
            "rate": round(self.rate, 1),
            "throughputMiB": round(self.throughput_mib, 3),
            # null without a single latency measured: a zero would read as instant
            "latencyMs": {
                "mean": round(self.latency.mean_ms, 3),
                "p50": round(self.latency.p50_ms, 3),
                "p95": round(self.latency.p95_ms, 3),
                "p99": round(self.latency.p99_ms, 3),
                "p99.9": round(self.latency.p999_ms, 3),
                "max": round(self.latency.max_ms, 3),
            }
            if self.latency.count
            else None,
        }


@dataclass
class Recorder:
    """Counts and latency samples, fed by callbacks on the client's threads. With a
    ``limit``, messages past the first ``limit`` are not recorded."""

    limit: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _messages: int = 0
    _bytes: int = 0
    _errors: int = 0
    _failures: Counter[str] = field(default_factory=Counter)
    _samples: list[float] = field(default_factory=list)
    _all_samples: list[np.ndarray] = field(default_factory=list)
    _interval_messages: int = 0
    _interval_bytes: int = 0
    _interval_errors: int = 0

    def record(self, size: int, latency_ms: float) -> bool:
        """Count one message; False (and nothing counted) once ``limit`` were."""
        with self._lock:
            if self.limit is not None and self._messages + self._interval_messages >= self.limit:
                return False
            self._interval_messages += 1
            self._interval_bytes += size
            self._samples.append(latency_ms)
            return True

    def record_error(self, kind: str) -> None:
        """Count one failure of ``kind`` (the client's result: "MessageTooBig", "Timeout")."""
        with self._lock:
            self._interval_errors += 1
            self._failures[kind] += 1

    @property
    def messages(self) -> int:
        with self._lock:
            return self._messages + self._interval_messages

    @property
    def errors(self) -> int:
        with self._lock:
            return self._errors + self._interval_errors

    def interval(self, seconds: float) -> Interval:
        """What happened since the previous call (over ``seconds``)."""
        with self._lock:
            samples, self._samples = self._samples, []
            messages, self._interval_messages = self._interval_messages, 0
            size, self._interval_bytes = self._interval_bytes, 0
            errors, self._interval_errors = self._interval_errors, 0
            self._messages += messages
            self._bytes += size
            self._errors += errors
        array = np.asarray(samples, dtype=np.float64)
        self._all_samples.append(array)
        return Interval(seconds, messages, size, errors, Latencies.of(array))

    def summary(self, seconds: float) -> Summary:
        """The whole run (call after the last :meth:`interval`)."""
        self.interval(0.0)
        everything = (
            np.concatenate(self._all_samples) if self._all_samples else np.zeros(0, np.float64)
        )
        with self._lock:
            failures = tuple(self._failures.most_common())
        return Summary(
            seconds,
            self._messages,
            self._bytes,
            self._errors,
            Latencies.of(everything),
            failures,
        )
