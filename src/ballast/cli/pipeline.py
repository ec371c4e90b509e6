"""``ballast pipeline``: the load-history pipeline on Spark.

``import`` writes history from a Pulsar ``/loadbalance`` dump or a ``ballast decide``
snapshot (pyarrow, no Spark); ``generate`` writes a synthetic history with Spark; every
registered history job (``time-averages``, ``split-plan``, ``report``, ``shed``) reads
``--history`` and writes ``--out``; ``shed --apply`` also sends its decisions to a cluster.
Spark runs in local mode unless ``--master`` names a cluster (or spark-submit launched the
command). Each command prints a JSON summary.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ballast.cli.common import fail, given_path, print_json, settings_from, warn
from ballast.cli.spark_command import parse_conf, spark_session
from ballast.model.naming import InvalidNameError, validate_entity_name
from ballast.pipeline.jobs import HISTORY_JOBS, JobEntry, JobError, JobPaths, load
from ballast.pipeline.jobs.base import JobRunner, Summary
from ballast.pipeline.synthetic_spec import DEFAULT_START_MS, LAST_MS, GenerateSpec, SpecError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ballast.model.config import Settings

# Spark, pandas and pyarrow are imported inside the commands that use them, so that the
# rest of the ballast command starts fast.

pipeline_app = typer.Typer(
    help="Load history and the Spark jobs over it (local mode by default, any Spark master "
    "with --master).",
    no_args_is_help=True,
)

MasterOption = Annotated[
    str | None,
    typer.Option(
        "--master",
        help="Spark master URL (spark://host:7077, yarn, local[4], ...). Default: local "
        "mode on all cores, or spark-submit's master.",
    ),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option("--conf", help="A Spark setting key=value (repeatable).", metavar="KEY=VALUE"),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="A broker.conf-style settings file.")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="A setting key=value (repeatable).", metavar="KEY=VALUE"),
]


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input (exit 2 with the reason), not a bug."""
    from ballast.pipeline.file_check import HistoryFileError
    from ballast.pipeline.history import HistoryError
    from ballast.pipeline.sparkio import PathError, SchemaMismatch
    from ballast.pipeline.transforms.split import UnsupportedAlgorithm

    return (
        HistoryError,
        HistoryFileError,
        JobError,
        PathError,
        SpecError,
        SchemaMismatch,
        UnsupportedAlgorithm,
    )


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC unless it says otherwise), from 1970 to
    the end of 9999 (the years a history's ``date=`` partition can name)."""
    stripped = text.strip()
    digits = stripped.removeprefix("-")
    if digits.isdigit():
        # past 20 digits it is out of range anyway (and int() refuses 4,300 digits)
        ms = int(stripped) if len(digits) <= 20 else LAST_MS + 1
    else:
        try:
            moment = datetime.fromisoformat(stripped)
        except ValueError:
            fail(f'"{text}" is neither epoch milliseconds nor an ISO 8601 time')
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        ms = round(moment.timestamp() * 1000)
    if not 0 <= ms <= LAST_MS:
        fail(f'"{text}" is outside 1970-01-01 to 9999-12-31 (UTC)')
    return ms


def check_history_early(history: str, master: str | None, conf: list[str] | None) -> None:
    """Exit 2 at once when ``--history`` is empty or surely a local path without a history,
    before a JVM starts (Spark checks every other path itself)."""
    from ballast.pipeline.local_paths import local_history_problem

    given_path(history, "--history", "the history root to read")

    problem = local_history_problem(
        history, master=master, conf=parse_conf(conf), environ=os.environ
    )
    if problem is not None:
        fail(problem)


def check_output_early(
    history: str | None, out: str, master: str | None, conf: list[str] | None
) -> None:
    """Exit 2 at once when ``--out`` surely cannot take the results (see
    :func:`ballast.pipeline.local_paths.local_output_problem`; ``history`` None for a
    command that reads none), before a JVM starts and the job runs."""
    from ballast.pipeline.local_paths import local_output_problem

    problem = local_output_problem(
        history, out, master=master, conf=parse_conf(conf), environ=os.environ
    )
    if problem is not None:
        fail(problem)


def _cluster_name(name: str) -> None:
    """A ``--cluster`` a broker's ``clusterName`` could be (it names the history's files)."""
    try:
        validate_entity_name("cluster", name)
    except InvalidNameError as exc:
        fail(f"--cluster: {exc}")


@pipeline_app.command("import")
def import_command(
    source_text: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help="A dump directory of Pulsar's /loadbalance tree, or a ballast decide "
            "snapshot file.",
        ),
    ],
    history_text: Annotated[str, typer.Option("--history", help="History root to write to.")],
    source_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto (by content), pulsar-dump (a /loadbalance tree), decide-snapshot "
            "(a ballast decide snapshot file) or metadata-dump (what ballast metadata dump "
            "/loadbalance writes).",
        ),
    ] = "auto",
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", help="Cluster name on the rows (default: clusterName)."),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Snapshot time, epoch ms or ISO 8601 (default: the newest lastUpdate of the "
            "brokers' reports).",
        ),
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Replace a snapshot the history holds already of the cluster at that time.",
        ),
    ] = False,
    config: ConfigOption = None,
    overrides: SetOption = None,
) -> None:
    """Add one snapshot to a history from a dump of Pulsar's /loadbalance tree (brokers/,
    broker-time-average/, bundle-data/) or from a ballast decide snapshot file."""
    from ballast.pipeline.history import (
        HistoryError,
        held_for_writing,
        snapshot_files,
        write_snapshot,
    )
    from ballast.pipeline.importer import (
        ImportOptions,
        detect_format,
        importer,
        read_decide_snapshot,
    )
    from ballast.pipeline.local_paths import nested_history_problem, results_problem

    settings = settings_from(config, overrides)
    if cluster is not None and not cluster.strip():
        fail("--cluster is empty (leave it out for the setting clusterName)")
    if cluster is not None:
        _cluster_name(cluster)
    history = Path(given_path(history_text, "--history", "the history root to write to"))
    source = Path(given_path(source_text, "SOURCE", "a dump directory or a snapshot file"))
    for problem in (nested_history_problem(history), results_problem(history)):
        if problem is not None:
            fail(problem)
    options = ImportOptions(
        cluster=cluster or settings.get_str("clusterName"),
        snapshot_ms=parse_time_ms(at) if at is not None else None,
    )
    try:
        if source_format != "auto":
            importer(source_format)  # an unknown name lists the known ones
        chosen = detect_format(source)
        if source_format not in ("auto", chosen):
            fail(f"{source} is a {chosen}, not a {source_format} (--format)")
        if chosen in ("decide-snapshot", "metadata-dump"):
            snapshot, warnings = read_decide_snapshot(source, options)
            for message in warnings:
                warn(message)
        else:
            snapshot = importer(chosen)(source, options)
        if history.exists() and not history.is_dir():
            fail(f"--history {history} is a file, not a directory")
        with held_for_writing(history):
            held = snapshot_files(history, snapshot.cluster, snapshot.snapshot_ms)
            if held and not replace:  # a leader's, say: its tables would go with it
                tables = ", ".join(sorted(f"{path.parents[2].name}/" for path in held))
                fail(
                    f"{history} holds a snapshot of cluster {snapshot.cluster} at "
                    f"{snapshot.snapshot_ms} already ({tables}): importing would replace "
                    "it whole; give another --at, or --replace"
                )
            files = write_snapshot(history, snapshot)
    except HistoryError as exc:
        fail(str(exc))
    except OSError as exc:  # a directory that cannot be made or written
        fail(f"cannot write the history at {history}: {exc.strerror or exc}")
    print_json(
        {
            "format": chosen,
            "cluster": snapshot.cluster,
            "snapshotMs": snapshot.snapshot_ms,
            "brokers": len(snapshot.brokers),
            "bundles": len(snapshot.bundles),
            "bundleAverages": len(snapshot.bundle_averages),
            "brokerAverages": len(snapshot.broker_averages),
            "files": [str(f) for f in files],
        }
    )


@pipeline_app.command("generate")
def generate_command(
    out: Annotated[
        str,
        typer.Option("--out", help="History root to write (refused if it holds one already)."),
    ],
    brokers: Annotated[int, typer.Option("--brokers", help="Brokers.")] = 10,
    bundles: Annotated[int, typer.Option("--bundles", help="Bundles (all namespaces).")] = 64,
    namespaces: Annotated[int, typer.Option("--namespaces", help="Namespaces.")] = 8,
    tenants: Annotated[int, typer.Option("--tenants", help="Tenants.")] = 2,
    topics_per_bundle: Annotated[
        float, typer.Option("--topics-per-bundle", help="Mean topics per bundle.")
    ] = 10.0,
    snapshots: Annotated[int, typer.Option("--snapshots", help="Snapshots.")] = 60,
    interval_s: Annotated[
        int, typer.Option("--interval-s", help="Seconds between snapshots.")
    ] = 60,
    topic_every: Annotated[
        int,
        typer.Option(
            "--topic-every",
            help="Topic rows every N snapshots and in the last one (0: no topic rows).",
        ),
    ] = 15,
    start: Annotated[
        str | None,
        typer.Option("--start", help="First snapshot, epoch ms or ISO 8601 (UTC)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 1,
    skew: Annotated[float, typer.Option("--skew", help="Zipf exponent of the load.")] = 1.1,
    churn: Annotated[
        float, typer.Option("--churn", help="Fraction of brokers that join late or leave.")
    ] = 0.2,
    mean_bundle_msg_rate: Annotated[
        float, typer.Option("--mean-bundle-msg-rate", help="Mean msg/s in per bundle.")
    ] = 500.0,
    cluster: Annotated[str, typer.Option("--cluster", help="Cluster name.")] = "synthetic",
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Replace the brokers, bundles and topics tables --out holds."
        ),
    ] = False,
    master: MasterOption = None,
    conf: ConfOption = None,
) -> None:
    """Write a synthetic history: skewed (Zipf), diurnal and bursty load, brokers joining and
    leaving; seeded and deterministic, of any size."""
    from ballast.pipeline.jobs.generate import generate

    _cluster_name(cluster)

    if interval_s < 1:  # the spec counts milliseconds; say it in the option's unit
        fail(f"--interval-s must be at least 1 (seconds), not {interval_s}")
    try:
        spec = GenerateSpec(
            cluster=cluster,
            start_ms=parse_time_ms(start) if start is not None else DEFAULT_START_MS,
            snapshots=snapshots,
            interval_ms=interval_s * 1000,
            brokers=brokers,
            bundles=bundles,
            namespaces=namespaces,
            tenants=tenants,
            topics_per_bundle=topics_per_bundle,
            topic_every=topic_every,
            seed=seed,
            skew=skew,
            churn=churn,
            mean_bundle_msg_rate=mean_bundle_msg_rate,
        )
    except SpecError as exc:
        fail(str(exc))
    check_output_early(None, out, master, conf)
    from ballast.pipeline.local_paths import local_history_held, results_problem, surely_local

    if not replace:
        held = local_history_held(out, master=master, conf=parse_conf(conf), environ=os.environ)
        if held is not None:
            fail(held)  # at once, before a JVM starts (Spark's check says the same)
    local = surely_local(out, master=master, conf=parse_conf(conf), environ=os.environ)
    results = None if local is None else results_problem(local, "write the history elsewhere")
    if results is not None:  # the jobs would refuse the mix of both
        fail(results)
    with spark_session(master, conf) as spark:
        try:
            summary = generate(spark, spec, out, replace=replace)
        except _user_errors() as exc:
            fail(str(exc))
    print_json(dict(summary))


BucketsOption = Annotated[
    int,
    typer.Option(
        "--buckets",
        min=1,
        max=1000,  # every pass reads the whole history: past a handful, only time grows
        help="Fold the bundles' samples into averages in this many passes (at most 1000), each "
        "reading the whole history and shuffling only its share of the samples: for histories "
        "whose shuffle files outgrow the scratch disk.",
    ),
]
HistoryOption = Annotated[str, typer.Option("--history", help="History root to read.")]
OutOption = Annotated[str, typer.Option("--out", help="Directory to write results to.")]


def _run_job(
    name: str,
    paths: JobPaths,
    master: str | None,
    conf: list[str] | None,
    config: Path | None,
    overrides: list[str] | None,
    runner: JobRunner | None = None,
) -> None:
    """Run a history job (its registered ``run``, or ``runner`` for a job with options of its
    own) in a Spark session and print its summary; bad input exits 2 with the reason."""
    settings = settings_from(config, overrides)
    check_history_early(paths.history, master, conf)  # before the job's imports (pandas...)
    check_output_early(paths.history, paths.out, master, conf)
    loaded = load(name)
    try:
        loaded.check_settings(settings)
    except JobError as exc:
        fail(str(exc))
    with spark_session(master, conf) as spark:
        try:
            summary = (runner or loaded.run)(spark, paths, settings)
        except _user_errors() as exc:
            fail(str(exc))
    print_json(dict(summary))


def _history_command(job: JobEntry) -> Callable[..., None]:
    def command(
        history: HistoryOption,
        out: OutOption,
        master: MasterOption = None,
        conf: ConfOption = None,
        config: ConfigOption = None,
        overrides: SetOption = None,
    ) -> None:
        _run_job(job.name, JobPaths(history=history, out=out), master, conf, config, overrides)

    command.__doc__ = job.summary
    return command


for _job in HISTORY_JOBS.values():
    if not _job.own_command:
        pipeline_app.command(_job.name)(_history_command(_job))


@pipeline_app.command("time-averages")
def time_averages_command(
    history: HistoryOption,
    out: OutOption,
    buckets: BucketsOption = 1,
    master: MasterOption = None,
    conf: ConfOption = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
) -> None:
    def runner(spark: SparkSession, paths: JobPaths, settings: Settings) -> Summary:
        from ballast.pipeline.jobs.time_averages import run

        return run(spark, paths, settings, buckets=buckets)

    paths = JobPaths(history=history, out=out)
    _run_job("time-averages", paths, master, conf, config, overrides, runner)


time_averages_command.__doc__ = HISTORY_JOBS["time-averages"].summary


@pipeline_app.command("shed")
def shed_command(
    history: HistoryOption,
    out: OutOption,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help="overload, threshold, uniform, transfer, avg or ballast (Pulsar class names "
            "accepted; default: loadBalancerLoadSheddingStrategy).",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            help="cycle: the load manager's whole shedding cycle (a destination for each "
            "move); strategy: the strategy's own answer.",
        ),
    ] = "cycle",
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", help="Only this cluster (default: every cluster)."),
    ] = None,
    now_ms: Annotated[
        int | None,
        typer.Option(
            "--now-ms",
            min=0,
            max=2**63 - 1,  # a Java long, as Pulsar keeps times
            help="The current time, epoch ms (default: the snapshot's).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of placement's tie-breaks.")] = 0,
    apply: Annotated[
        str | None,
        typer.Option(
            "--apply",
            metavar="ADMIN_URL",
            help="Carry the decisions out on the live cluster whose broker answers at this "
            "URL (http://host:port), through its admin API.",
        ),
    ] = None,
    buckets: BucketsOption = 1,
    master: MasterOption = None,
    conf: ConfOption = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
) -> None:
    """A shedding strategy's decisions on each cluster's latest snapshot, equal to ballast
    decide shed on the same snapshot; --apply sends them to a live cluster."""
    import asyncio

    from ballast.balance.shedding.registry import UnknownStrategy, shedding_strategy
    from ballast.cli.shed_apply import Unreachable, apply_decisions, check_reachable
    from ballast.pipeline.shedding import Scope, ShedOptions

    settings = settings_from(config, overrides)
    try:
        default = settings.get_str("loadBalancerLoadSheddingStrategy")
        name = shedding_strategy(default if strategy is None else strategy).name
    except UnknownStrategy as exc:
        fail(str(exc))
    if scope not in {s.value for s in Scope}:
        fail(f"--scope must be one of {', '.join(s.value for s in Scope)}")
    target = None
    if apply is not None:
        target = apply.rstrip("/")
        if not target.startswith(("http://", "https://")):
            fail(f'--apply "{apply}" is not an http(s) URL')
        if cluster is None:
            fail("--apply needs --cluster: decisions go to one cluster")
        try:
            asyncio.run(check_reachable(target))  # before minutes of Spark work
        except Unreachable as exc:
            fail(str(exc), code=1)
    options = ShedOptions(strategy=name, scope=Scope(scope), now_ms=now_ms, seed=seed)
    check_history_early(history, master, conf)
    check_output_early(history, out, master, conf)
    from ballast.pipeline.jobs.shed import shed_history

    with spark_session(master, conf) as spark:
        try:
            summary = dict(
                shed_history(
                    spark,
                    JobPaths(history=history, out=out),
                    settings,
                    options,
                    cluster=cluster,
                    buckets=buckets,
                )
            )
        except _user_errors() as exc:
            fail(str(exc))
    if target is None or cluster is None:
        print_json(summary)
        return
    clusters = summary["clusters"]
    assert isinstance(clusters, dict)
    try:
        applied = asyncio.run(apply_decisions(target, clusters[cluster]["decisions"]))
    except Unreachable as exc:
        print_json(summary)
        fail(str(exc), code=1)
    summary["applied"] = [answer.to_json() for answer in applied]
    print_json(summary)
    refused = [a for a in applied if not a.ok]
    if refused:
        fail(
            f"{len(refused)} of {len(applied)} decisions were not carried out: refused, or "
            "skipped as the cluster no longer fits them (see applied)",
            code=1,
        )
