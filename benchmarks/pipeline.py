"""Benchmark of the Spark pipeline against a single-process pandas/numpy baseline.

For each size (bundle rows per snapshot), one history of ``--snapshots`` per-minute snapshots
is generated with Spark; then every job runs on it with Spark (local mode, the defaults a user
gets: all cores, driver memory a third of the machine's) and with the pandas baseline
(``benchmarks/pandas_baseline.py``; ``shed`` has none), side by side in the same run. Each
engine runs in its own child process, one at a time; the harness samples the resident memory
of the child's whole process tree (the JVM included). Baseline children get an address-space
limit so that running out of memory fails them instead of the machine.

    .venv/bin/python benchmarks/pipeline.py --sizes 10000,100000 --snapshots 1440 \\
        --work /tmp/ballast-bench

Results go to ``<work>/results.json`` and are printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

JOBS = ("generate", "time-averages", "split-plan", "report", "shed")
# Jobs the pandas baseline has (shed's selection is the same pure Python in both engines).
BASELINES = ("generate", "time-averages", "split-plan", "report")
SETTINGS = ["defaultNamespaceBundleSplitAlgorithm=flow_or_qps_equally_divide"]


def spec_for(bundles: int, snapshots: int) -> Any:
    from ballast.pipeline.synthetic_spec import GenerateSpec

    return GenerateSpec(
        cluster="bench",
        snapshots=snapshots,
        brokers=max(2, bundles // 100),
        bundles=bundles,
        namespaces=max(8, bundles // 100),
        tenants=max(1, min(100, bundles // 1000)),
        topics_per_bundle=5.0,
        topic_every=snapshots,  # topic rows in the first and the last snapshot
        seed=1,
    )


# -- children ---------------------------------------------------------------------------------


def be_first_to_go() -> None:
    """If the machine runs out of memory, the kernel kills the benchmark, not a neighbour."""
    with contextlib.suppress(OSError):
        Path("/proc/self/oom_score_adj").write_text("1000")


def emit(record: dict[str, Any]) -> None:
    print("RESULT " + json.dumps(record), flush=True)


def brief(summary: Any) -> dict[str, Any]:
    """A job's summary without its paths; shed's decisions counted, not listed."""
    kept = {k: v for k, v in summary.items() if k != "outputs"}
    if isinstance(kept.get("clusters"), dict):
        kept["clusters"] = {
            name: {"snapshotMs": c["snapshotMs"], "decisions": len(c["decisions"])}
            for name, c in kept["clusters"].items()
        }
    return kept


def spark_child(args: argparse.Namespace) -> None:
    from ballast.model.config import load_settings
    from ballast.pipeline.jobs import load
    from ballast.pipeline.jobs.base import JobPaths
    from ballast.pipeline.jobs.generate import generate
    from ballast.pipeline.session import SessionOptions, build_session

    be_first_to_go()
    started = time.perf_counter()
    spark = build_session(SessionOptions())
    emit({"job": "session", "seconds": time.perf_counter() - started})
    settings = load_settings(overrides=SETTINGS).settings
    for job in args.jobs.split(","):
        started = time.perf_counter()
        if job == "generate":
            spec = spec_for(args.size, args.snapshots)
            summary = generate(spark, spec, args.history, replace=True)  # the run's own work dir
        else:
            paths = JobPaths(history=args.history, out=str(Path(args.out) / job))
            summary = load(job).run(spark, paths, settings)
        emit(
            {
                "job": job,
                "seconds": time.perf_counter() - started,
                "summary": brief(summary),
            }
        )
    spark.stop()


def pandas_child(args: argparse.Namespace) -> None:
    be_first_to_go()
    limit = int(args.memory_gib * 2**30)  # fail with MemoryError rather than starve the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pandas_baseline as baseline
    import pandas_generate

    from ballast.model.config import load_settings

    settings = load_settings(overrides=SETTINGS).settings
    job = args.jobs
    started = time.perf_counter()
    if job == "generate":
        summary = pandas_generate.generate(spec_for(args.size, args.snapshots), Path(args.history))
    else:
        run = {
            "time-averages": baseline.time_averages,
            "split-plan": baseline.split_plan,
            "report": baseline.report,
        }[job]
        summary = run(Path(args.history), Path(args.out) / job, settings)
    emit({"job": job, "seconds": time.perf_counter() - started, "summary": summary})


# -- harness ----------------------------------------------------------------------------------


@dataclass
class Measurement:
    bundles: int
    snapshots: int
    engine: str
    job: str
    status: str
    seconds: float | None
    peak_rss_mib: float | None
    summary: dict[str, Any]


def tree_rss_bytes(root: int) -> int:
    """Resident memory of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(entry.name)] = int(line.split()[1]) * 1024
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def run_child(command: list[str], timeout_s: float) -> tuple[str, list[dict[str, Any]], float, str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss_bytes(process.pid))
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = process.communicate(timeout=timeout_s)
        status = "ok" if process.returncode == 0 else f"failed ({process.returncode})"
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        status = "timeout"
    done.set()
    sampler.join()
    records = [json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")]
    return status, records, peak / 2**20, err[-2000:]


def compare_averages(spark_out: Path, pandas_out: Path) -> dict[str, int]:
    """How many bundles' averages the two engines computed bit-for-bit alike."""
    import pyarrow.parquet as pq

    spark_rows = {
        (r["cluster"], r["bundle"]): r
        for r in pq.read_table(spark_out / "bundle_averages").to_pylist()
    }
    equal = 0
    pandas_rows = pq.read_table(pandas_out / "bundle_averages.parquet").to_pylist()
    for row in pandas_rows:
        other = spark_rows.get((row["cluster"], row["bundle"]))
        if other is not None and all(other[k] == row[k] for k in row if k in other):
            equal += 1
    return {"bundles": len(spark_rows), "equal": equal, "pandas_bundles": len(pandas_rows)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--snapshots", type=int, default=1440)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ballast-bench"))
    parser.add_argument("--engines", default="spark,pandas")
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--pandas-memory-gib", type=float, default=22.0)
    parser.add_argument("--timeout-s", type=float, default=5400.0)
    parser.add_argument("--keep", action="store_true", help="keep the histories")
    parser.add_argument("--child", choices=("spark", "pandas"), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--history", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--memory-gib", type=float, default=18.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "spark":
        spark_child(args)
        return
    if args.child == "pandas":
        pandas_child(args)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    results_file = args.work / "results.json"
    results: list[dict[str, Any]] = (
        json.loads(results_file.read_text()) if results_file.exists() else []
    )
    jobs = args.jobs.split(",")
    engines = args.engines.split(",")
    me = [sys.executable, str(Path(__file__).resolve())]
    for bundles in (int(s) for s in args.sizes.split(",")):
        base = args.work / f"{bundles}x{args.snapshots}"
        history, spark_out, pandas_out = base / "history", base / "spark", base / "pandas"

        def record(m: Measurement) -> None:
            results.append(asdict(m))
            results_file.write_text(json.dumps(results, indent=1))
            print(
                f"{m.bundles:>9} x {m.snapshots:<5} {m.engine:<6} {m.job:<14} {m.status:<10} "
                f"{m.seconds if m.seconds is None else round(m.seconds, 1)!s:>8} s "
                f"{round(m.peak_rss_mib or 0):>7} MiB {m.summary}",
                flush=True,
            )

        if "spark" in engines:
            command = [
                *me,
                "--child",
                "spark",
                "--size",
                str(bundles),
                "--snapshots",
                str(args.snapshots),
                "--history",
                str(history),
                "--out",
                str(spark_out),
                "--jobs",
                ",".join(jobs),
            ]
            status, records, peak, err = run_child(command, args.timeout_s)
            for item in records:
                record(
                    Measurement(
                        bundles,
                        args.snapshots,
                        "spark",
                        item["job"],
                        "ok",
                        item["seconds"],
                        peak,
                        item.get("summary", {}),
                    )
                )
            if status != "ok":
                record(
                    Measurement(
                        bundles,
                        args.snapshots,
                        "spark",
                        "(rest)",
                        status,
                        None,
                        peak,
                        {"stderr": err[-400:]},
                    )
                )
        if "pandas" in engines:
            for job in (j for j in jobs if j in BASELINES):
                target = base / "pandas-history" if job == "generate" else history
                command = [
                    *me,
                    "--child",
                    "pandas",
                    "--size",
                    str(bundles),
                    "--snapshots",
                    str(args.snapshots),
                    "--history",
                    str(target),
                    "--out",
                    str(pandas_out),
                    "--jobs",
                    job,
                ]
                command += ["--memory-gib", str(args.pandas_memory_gib)]
                status, records, peak, err = run_child(command, args.timeout_s)
                item = records[0] if records else {"seconds": None, "summary": {}}
                summary = item.get("summary", {}) if status == "ok" else {"stderr": err[-300:]}
                record(
                    Measurement(
                        bundles,
                        args.snapshots,
                        "pandas",
                        job,
                        status,
                        item["seconds"],
                        peak,
                        summary,
                    )
                )
                if job == "generate":
                    shutil.rmtree(target, ignore_errors=True)
        averages = (spark_out / "time-averages", pandas_out / "time-averages")
        if all(p.exists() for p in averages):
            check = compare_averages(*averages)
            record(
                Measurement(
                    bundles, args.snapshots, "both", "averages-equal", "ok", None, None, check
                )
            )
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
