"""The Spark session of one ``ballast pipeline`` command: started, stopped after it, and its
failures and interrupts told in one line.

Concurrency contract: used from the main thread, once per process (it sets the SIGINT
handler for the session's life).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ballast.cli.common import fail

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INTERRUPTED = "interrupted: the job stopped before its end (its results may be missing or partial)"


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``--conf key=value`` options as a mapping; exit 2 for one that is not key=value."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f'--conf "{pair}" is not key=value')
        conf[key.strip()] = value.strip()
    return conf


@contextmanager
def spark_session(master: str | None, conf: list[str] | None) -> Iterator[SparkSession]:
    """:func:`_spark_session`, without PySpark's warnings unless BALLAST_DEBUG is set: it
    warns of a failed task with the task's whole traceback, which the one line says."""
    with warnings.catch_warnings():
        if not os.environ.get("BALLAST_DEBUG"):
            warnings.filterwarnings("ignore", category=UserWarning, module=r"pyspark\.")
        with _spark_session(master, conf) as spark:
            yield spark


@contextmanager
def _spark_session(master: str | None, conf: list[str] | None) -> Iterator[SparkSession]:
    """A Spark session for one command, stopped after it. What Spark fails (an unreadable
    file, a master that stops answering) ends the command with one line, exit 1; Ctrl-C with
    one line, exit 130. Spark's own log stays quiet unless BALLAST_DEBUG is set: the line
    says the cause, where Spark would print every task's Java stack."""
    from ballast.pipeline.session import (
        SessionOptions,
        SparkUnavailable,
        build_session,
        job_failure,
    )

    debug = bool(os.environ.get("BALLAST_DEBUG"))
    options = SessionOptions(master=master, conf=parse_conf(conf), quiet_start=not debug)
    interrupt = _Interrupt(deferred=True)
    # An interrupt ignored on purpose (a background job, nohup) stays ignored.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, interrupt) if not (debug or ignored) else None
    try:
        try:
            spark = build_session(options)
        except KeyboardInterrupt:  # asked twice: the JVM may be left half started
            fail("interrupted while Spark was starting", code=130)
        except Exception as exc:
            if interrupt.received:  # what failed was stopped by it (a `java -version`)
                fail("interrupted: the job did not start", code=130)
            if isinstance(exc, SparkUnavailable):
                fail(str(exc))
            # the JVM started, its context did not (a master refusing)
            reason = job_failure(exc)
            if reason is None or debug:
                raise
            fail(start_failure(master, reason))
        interrupt.deferred = False
        if interrupt.received:  # while Spark started: now it can stop cleanly
            spark.stop()
            fail("interrupted: the job did not start", code=130)
        if not debug:
            spark.sparkContext.setLogLevel("OFF")
        interrupted = False
        try:
            yield spark
        except KeyboardInterrupt:
            interrupted = True
            _stop_quietly(spark)
            fail(INTERRUPTED, code=130)
        except Exception as exc:
            if interrupt.received:  # the interrupt reached a call to the JVM, which failed
                interrupted = True
                _stop_quietly(spark)
                fail(INTERRUPTED, code=130)
            reason = job_failure(exc)
            if reason is None or debug:
                raise
            hint = ""
            if "stopped SparkContext" in reason and (master or "").startswith("spark://"):
                hint = (
                    f" (the master {master} stopped answering or is none: its port is the "
                    "master's, 7077 by default, not its web UI's)"
                )
            fail(f"Spark failed the job: {reason}{hint}", code=1)
        finally:
            if not interrupted:
                spark.stop()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


class _Interrupt:
    """The SIGINT handler of a Spark command. py4j logs and prints what each interrupted call
    to the JVM was doing; the command says it was interrupted, in one line, instead. It
    remembers the interrupt: one that a call to the JVM turned into a failure of its own is
    still the interrupt.

    While ``deferred`` (Spark starting) the first interrupt is only remembered: stopped
    mid-start, the launcher leaves a JVM behind that never learns its driver is gone. A
    second one stops the command at once."""

    def __init__(self, *, deferred: bool = False) -> None:
        self.deferred = deferred
        self.received = False

    def __call__(self, _signum: int, _frame: object) -> None:
        first = not self.received
        self.received = True
        if self.deferred and first:
            return
        logging.disable(logging.CRITICAL)
        raise KeyboardInterrupt


def _stop_quietly(spark: SparkSession) -> None:
    """Stop a session whose gateway an interrupt may have broken mid-call."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            spark.stop()
        except Exception:  # a broken gateway: the JVM exits with this process
            pass


def start_failure(master: str | None, reason: str) -> str:
    """The line for a Spark context that did not start. A ``spark://`` address that accepts
    connections but is no Spark master (another server's port) fails after the client's
    registration attempts with only "Cannot call methods on a stopped SparkContext"; the
    reason it gave up ("All masters are unresponsive") is in Spark's log above."""
    if master is not None and master.startswith("spark://") and "stopped SparkContext" in reason:
        reason = (
            f"no Spark master took the application at {master}: is it a Spark master's "
            f"address? (Spark's log above says why; {reason})"
        )
    return f"Spark did not start (master {master or 'local'}): {reason}"
