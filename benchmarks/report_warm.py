"""Time the ``report`` job warm, on an existing history, with whichever Ballast is importable.

One Spark session (local mode, the defaults a user gets); the report runs once on a small
history first, so that the timed run does not pay the session's first Python workers and code
generation; then it runs on ``--history`` and one JSON line is printed: the seconds of the
session start, the warm-up and the timed report, and the load averages before and after.
Running it with ``PYTHONPATH`` pointing at two checkouts, one after the other, compares their
report on the same history under the same conditions.

    PYTHONPATH=src .venv/bin/python benchmarks/report_warm.py \\
        --history /tmp/day --warm-history /tmp/small --out /tmp/report-out
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--history", required=True)
    parser.add_argument("--warm-history", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import ballast
    from ballast.model.config import load_settings
    from ballast.pipeline.jobs import load
    from ballast.pipeline.jobs.base import JobPaths
    from ballast.pipeline.session import SessionOptions, build_session

    settings = load_settings().settings
    report = load("report")
    started = time.perf_counter()
    spark = build_session(SessionOptions())
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    report.run(spark, JobPaths(history=args.warm_history, out=str(args.out) + "-warm"), settings)
    warm_s = time.perf_counter() - started
    load_before = os.getloadavg()
    started = time.perf_counter()
    summary = report.run(spark, JobPaths(history=args.history, out=str(args.out)), settings)
    report_s = time.perf_counter() - started
    record = {
        "code": str(Path(ballast.__file__).parent),
        "session_s": session_s,
        "warm_s": warm_s,
        "report_s": report_s,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "snapshots": summary["snapshots"],
        "namespaces": summary["namespaces"],
    }
    print(json.dumps(record), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
