"""The ``ballast`` command's entry point. The app and its sub-command's modules (numpy, pyarrow,
the Pulsar client, Spark's Python side) are imported only here, inside the guard, so that Ctrl-C
while they load is one line too."""

from __future__ import annotations

import errno
import io
import logging
import os
import sys


def run() -> None:
    """Entry point: run the app; an unexpected error is one line on stderr (exit 1), with the
    traceback only when BALLAST_DEBUG is set; Ctrl-C that no command handles (while the
    modules load, or in a command that lets it through) is one line, exit 130."""
    _guard_closed_streams()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # kazoo logs every reconnect attempt; the command reports the outcome itself.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    try:
        from ballast.cli.app import build_app, requested

        build_app(requested(sys.argv[1:]))()
    except SystemExit as exc:
        if exc.code == 130 and _typer_took_ctrl_c(exc):
            print("ballast: interrupted", file=sys.stderr)
        raise
    except KeyboardInterrupt:
        if os.environ.get("BALLAST_DEBUG"):
            raise
        print("ballast: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:  # the system refused a read or a write: say which, not "internal"
        if os.environ.get("BALLAST_DEBUG"):
            raise
        _silence_stdout()
        print(f"ballast: {_describe_os_error(exc)}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:  # the last line of defence: never a bare traceback for users
        if os.environ.get("BALLAST_DEBUG"):
            raise
        print(f"ballast: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("(set BALLAST_DEBUG=1 to see the traceback)", file=sys.stderr)
        sys.exit(1)


def _typer_took_ctrl_c(exc: SystemExit) -> bool:
    """Whether ``exc`` is Typer's exit for a Ctrl-C no command handled (it turns the
    KeyboardInterrupt into ``Exit(130)``, then SystemExit, without a word); a command that
    handles Ctrl-C says so itself and exits 130 with no KeyboardInterrupt as the cause."""
    return isinstance(getattr(exc.__context__, "__cause__", None), KeyboardInterrupt)


class _ClosedStream(io.TextIOBase):
    """Standard input or output whose descriptor was closed when the command started
    (``<&-``, ``>&-``): reading or writing it fails with an error that names it. Python's own
    stand-in (None) made a read an internal error and dropped every write, exit 0."""

    def __init__(self, name: str, fd: int) -> None:
        super().__init__()
        self._name = name
        self._fd = fd

    @property
    def buffer(self) -> _ClosedStream:  # what binary readers and writers reach for
        return self

    def fileno(self) -> int:
        return self._fd

    def _closed(self) -> OSError:
        return OSError(errno.EBADF, f"standard {self._name} is closed")

    def read(self, size: int | None = -1) -> str:
        raise self._closed()

    def write(self, text: str) -> int:
        raise self._closed()

    def flush(self) -> None:
        pass


def _guard_closed_streams() -> None:
    """Stand in for a standard stream closed at start, and hold its descriptor on /dev/null:
    left free, the next file opened (a history file, a socket) would take it, and whatever
    writes to "stdout" — a child process such as Spark's JVM included — would write there."""
    for fd, name, attribute in ((0, "input", "stdin"), (1, "output", "stdout")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        held = os.open(os.devnull, os.O_RDWR)
        if held != fd:
            os.dup2(held, fd)
            os.close(held)
        setattr(sys, attribute, _ClosedStream(name, fd))


# The errors a write to a full, failing or closed file or device gives.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EDQUOT, errno.EFBIG})


def _describe_os_error(exc: OSError) -> str:
    """``cannot write the output: No space left on device``, or the error's own words with
    the file it names."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"{reason}: {exc.filename}"
    if exc.errno in _OUTPUT_ERRNOS:
        return f"cannot write the output: {reason}"
    return reason


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's flush at exit does not fail on
    the same full or broken output again with a second message."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
