"""The ``ballast`` command's entry point. The app and every sub-command (numpy, pyarrow, the
Pulsar client, Spark's Python side) are imported only here, inside the guard, so that Ctrl-C
while they load is one line too."""

from __future__ import annotations

import logging
import os
import sys


def run() -> None:
    """Entry point: run the app; an unexpected error is one line on stderr (exit 1), with the
    traceback only when BALLAST_DEBUG is set; Ctrl-C before a command handles it (while the
    modules load) is one line, exit 130."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # kazoo logs every reconnect attempt; the command reports the outcome itself.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    try:
        from ballast.cli.app import app

        app()
    except KeyboardInterrupt:
        if os.environ.get("BALLAST_DEBUG"):
            raise
        print("ballast: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # the last line of defence: never a bare traceback for users
        if os.environ.get("BALLAST_DEBUG"):
            raise
        print(f"ballast: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("(set BALLAST_DEBUG=1 to see the traceback)", file=sys.stderr)
        sys.exit(1)
