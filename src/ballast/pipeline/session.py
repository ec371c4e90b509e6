"""Building the SparkSession a job runs in.

Three ways to run: local mode by default (``local[<cores>]``, sized for the machine), any
Spark master given explicitly (``spark://host:7077``, ``yarn``, ``k8s://...``), or under
``spark-submit``, which has already chosen the master and configuration (then nothing here
overrides them unless asked).

Most jobs use only Spark SQL expressions, so executors need no Ballast. ``generate`` runs
numpy code in its tasks, and ``report`` does for histories on a local file system: their
executors need Python with Ballast, numpy, pandas and pyarrow (in local mode the workers run
the driver's interpreter, which has them).

This is the one pipeline module that reads the environment and the machine's size.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import unquote, urlparse

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark import SparkConf, SparkContext
from pyspark.errors import IllegalArgumentException, PySparkRuntimeError
from pyspark.sql import SparkSession

from ballast.pipeline.class_archive import archive_java_options, default_archive, java_option

APP_NAME = "ballast-pipeline"

# Settings every session gets: timestamps in UTC, no UI (jobs are batch), Arrow for the
# small collections the report job makes.
COMMON_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    # Jobs persist small intermediate results (split candidates, namespace series); let
    # adaptive execution coalesce those too, instead of hundreds of near-empty tasks per read.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    # Parquet dictionaries large enough for a day of bundle names per row group.
    "spark.hadoop.parquet.dictionary.page.size": str(8 * 1024 * 1024),
}


class SparkUnavailable(RuntimeError):
    """Spark cannot start here (no Java, an unsupported Java, a master URL Spark does not
    take, or a launcher that exited on the configuration)."""


# The master URLs Spark's scheduler takes (SparkContext.createTaskScheduler): local mode with
# a thread count (at least 1) and optional failures, local-cluster, standalone masters as one
# or more host:port, yarn and Kubernetes.
_LOCAL = re.compile(r"local(\[\s*(\*|[1-9][0-9]*)\s*(,\s*[0-9]+\s*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s,:/\[\]]+):([0-9]{1,5})")
MASTER_FORMS = "local, local[N], local[*], spark://host:7077, yarn or k8s://https://host:port"


def check_master(master: str, environ: Mapping[str, str] = os.environ) -> None:
    """Raise :class:`SparkUnavailable` for a master URL Spark would refuse (with a Java stack,
    after its JVM started), checked here first."""
    if master == "yarn":
        if not (environ.get("HADOOP_CONF_DIR") or environ.get("YARN_CONF_DIR")):
            raise SparkUnavailable(  # Spark's own reason, without its launcher's stack
                "--master yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR set in the environment "
                "(the directory of the YARN cluster's configuration)"
            )
        return
    if _LOCAL.fullmatch(master) or _LOCAL_CLUSTER.fullmatch(master):
        return
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return
    if standalone_masters(master):
        return
    raise SparkUnavailable(f'--master "{master}" is not a Spark master URL ({MASTER_FORMS})')


def standalone_masters(master: str) -> list[tuple[str, int]]:
    """The hosts and ports of a ``spark://`` master URL; none for any other URL, or when a
    part of it is not a ``host:port`` with a port in 1..65535."""
    if not master.startswith("spark://"):
        return []
    found = [_HOST_PORT.fullmatch(h) for h in master.removeprefix("spark://").split(",")]
    hosts = [(m.group(1).strip("[]"), int(m.group(2))) for m in found if m is not None]
    if len(hosts) < len(found) or not all(0 < port < 65536 for _, port in hosts):
        return []
    return hosts


# Settings Spark reads as a size in bytes (JavaUtils.byteStringAs: digits and an optional
# unit) or as a positive count; a bad value ends its launcher or its context with a Java stack.
_SIZE = re.compile(r"[0-9]+\s*(b|k|kb|m|mb|g|gb|t|tb|p|pb)?", re.IGNORECASE)
_SIZE_KEY = re.compile(r"spark\.(driver|executor)\.(memory|memoryOverhead|maxResultSize)")
_COUNT_KEYS = frozenset(
    {
        "spark.driver.cores",
        "spark.executor.cores",
        "spark.default.parallelism",
        "spark.sql.shuffle.partitions",
        "spark.task.cpus",
    }
)


def check_conf(conf: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> None:
    """Raise :class:`SparkUnavailable` for a ``--conf`` size or count Spark would refuse, or
    scratch directories the driver cannot use (``SPARK_LOCAL_DIRS``, which Spark takes before
    ``spark.local.dir``), naming the setting, before its JVM starts."""
    scratch = environ.get("SPARK_LOCAL_DIRS")
    if scratch is not None:
        _check_scratch_dirs("SPARK_LOCAL_DIRS", scratch)
    for key, value in conf.items():
        text = value.strip()
        if _SIZE_KEY.fullmatch(key) and _SIZE.fullmatch(text) is None:
            raise SparkUnavailable(
                f'--conf {key}="{value}" is not a size (a whole number with an optional unit: '
                "512m, 4g)"
            )
        if key in _COUNT_KEYS and (not text.isascii() or not text.isdigit() or int(text) < 1):
            raise SparkUnavailable(f'--conf {key}="{value}" is not a whole number of 1 or more')
        if key == "spark.local.dir" and scratch is None:
            _check_scratch_dirs(f"--conf {key}", value)


def _check_scratch_dirs(setting: str, value: str) -> None:
    """Each of a comma-separated list of scratch directories, of which there must be one."""
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:  # Spark: "Failed to get a temp directory under []", after a Java stack
        raise SparkUnavailable(f'{setting}="{value}" names no directory')
    for entry in entries:
        problem = _scratch_dir_problem(Path(entry))
        if problem is not None:
            raise SparkUnavailable(f'{setting}="{value}": {entry} {problem}')


def _scratch_dir_problem(path: Path) -> str | None:
    """Why this process cannot use ``path`` as a scratch directory, or None. The driver makes
    its own directory under each of ``spark.local.dir``, creating missing ones; one it cannot
    made its block manager fail the context with a page of Java stacks. Tried for real (made
    as Spark would make it, and a directory made and removed in it): permissions alone do not
    tell, for root or on /proc."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryDirectory(dir=path).cleanup()
    except OSError as exc:
        return f"cannot be used as a scratch directory: {exc.strerror or exc}"
    return None


def check_reachable(master: str, timeout_s: float = 5.0) -> None:
    """Raise :class:`SparkUnavailable` when no host of a ``spark://`` master accepts a
    connection: Spark itself retries for a minute, printing a Java stack each time, before
    it gives up."""
    masters = standalone_masters(master)
    reasons = []
    for host, port in masters:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or exc}")
    if reasons:
        raise SparkUnavailable(f"cannot reach the Spark master {master} ({'; '.join(reasons)})")


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """``master`` None means: spark-submit's master if launched by it, else local mode.
    ``conf`` entries override everything else. ``class_archive``: the JVM's class-data-sharing
    archive (:mod:`ballast.pipeline.class_archive`), used if the file is there; None: never."""

    master: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = APP_NAME
    class_archive: Path | None = field(default_factory=default_archive)
    # Start the driver with errors only in its log (QUIET_LOG), without Spark's banner.
    quiet_start: bool = False


# The driver's log4j2 configuration for a quiet start (SessionOptions.quiet_start).
QUIET_LOG = Path(__file__).with_name("quiet-log4j2.properties")


def launched_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def machine_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 4 * 1024**3


def local_conf(cores: int, memory_bytes: int) -> dict[str, str]:
    """Local-mode settings for a machine: all cores; the driver (which is also the only
    executor) gets a third of the memory, between 1 and 16 GiB; many shuffle partitions
    that adaptive execution coalesces when data are small, so large histories spill in
    small pieces instead of exhausting memory. Coalesced partitions aim at 16 MiB rather
    than Spark's 64: on a few cores, a stage of three 64 MiB tasks on two cores leaves one
    core idle for a third of it, while a dozen small tasks keep both busy to the end."""
    gib = 1024**3
    driver_gib = max(1, min(16, memory_bytes // 3 // gib))
    return {
        "spark.master": f"local[{max(1, cores)}]",
        "spark.driver.memory": f"{driver_gib}g",
        "spark.sql.shuffle.partitions": str(max(8, 64 * max(1, cores))),
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(16 * 1024 * 1024),
        "spark.sql.files.maxPartitionBytes": str(128 * 1024 * 1024),
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }


def java_major_version() -> int | None:
    """The major version of ``$JAVA_HOME/bin/java`` or ``java`` on PATH; None if absent."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        probe = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', probe.stderr + probe.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_java() -> None:
    """Spark 4 needs Java 17 or 21; say so plainly instead of a JVM launch failure."""
    major = java_major_version()
    java_home = os.environ.get("JAVA_HOME")
    if major is None and java_home:
        raise SparkUnavailable(
            f"JAVA_HOME is {java_home}, which holds no Java (no runnable bin/java): point it "
            "at a Java 17 or 21 installation, or unset it to use the java on PATH"
        )
    if major is None:
        raise SparkUnavailable(
            "Java is not installed (Spark needs Java 17 or 21): install it, e.g. "
            "`apt-get install openjdk-17-jre-headless`, or set JAVA_HOME"
        )
    if major < 17:
        raise SparkUnavailable(f"Java {major} found; Spark 4 needs Java 17 or 21")


def session_conf(options: SessionOptions) -> dict[str, str]:
    """The configuration a session is built with (without spark-submit's own)."""
    conf = dict(COMMON_CONF)
    local = options.master is None and not launched_by_spark_submit()
    if local or (options.master or "").startswith("local"):
        conf.update(local_conf(os.cpu_count() or 1, machine_memory_bytes()))
    if options.master is not None:
        conf["spark.master"] = options.master
    if not launched_by_spark_submit():
        # The JVM this process starts maps the recorded classes in (class_archive) and, for a
        # quiet start, reads QUIET_LOG; driver options the caller gives replace these.
        archive = options.class_archive
        java_options = [
            option
            for option in (
                None if archive is None else archive_java_options(archive),
                java_option("-Dlog4j2.configurationFile", QUIET_LOG)
                if options.quiet_start
                else None,
            )
            if option is not None
        ]
        if java_options:
            conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
    conf.update(options.conf)
    return conf


def build_session(options: SessionOptions) -> SparkSession:
    """Start (or join spark-submit's) SparkSession. In local mode the Python workers use this
    interpreter and Spark binds to the loopback address unless the environment says
    otherwise."""
    check_conf(options.conf)
    if options.master is not None:
        check_master(options.master)
        check_reachable(options.master)
    if not launched_by_spark_submit():
        require_java()
    conf = session_conf(options)
    if conf.get("spark.master", "").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {"spark.app.name": options.app_name, **conf}
    on_interrupt = _interrupt_handler()
    try:
        # The context first, then the session on it (getOrCreate joins the context): so that
        # the handler SparkContext sets is replaced before the session's own start.
        SparkContext.getOrCreate(SparkConf().setAll(list(settings.items())))
    except PySparkRuntimeError as exc:
        if exc.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        # The launcher printed its reason (a bad setting, an unreachable master) above.
        raise SparkUnavailable(
            f"Spark did not start (master {conf.get('spark.master', 'from spark-submit')}): "
            "its launcher exited; its message is above"
        ) from None
    finally:
        if on_interrupt is not None:
            # SparkContext replaces the SIGINT handler with one that cancels every job through
            # the gateway; while the main thread waits on that gateway the call is reentrant,
            # fails, and py4j prints its tracebacks. The caller's handler stays.
            signal.signal(signal.SIGINT, on_interrupt)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.sql("SELECT 1")  # builds the session's SQL state, where bad SQL settings fail
    except IllegalArgumentException as exc:
        spark.stop()
        given = ", ".join(f"{k}={v}" for k, v in options.conf.items() if k.startswith("spark.sql"))
        raise SparkUnavailable(
            f"Spark refused its SQL settings{f' (--conf {given})' if given else ''}: "
            f"{_java_root_cause(exc) or root_cause(str(exc))}"
        ) from None
    return spark


def _interrupt_handler() -> Callable[[int, FrameType | None], Any] | int | None:
    """The SIGINT handler set now, where one can be set again (the main thread, a handler
    Python knows), else None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGINT)


def _java_root_cause(exc: Exception) -> str | None:
    """The message of the innermost cause of a captured Java exception (PySpark keeps the
    Java object; its text may leave the JVM stack, and with it the causes, out)."""
    origin: Any = getattr(exc, "_origin", None)
    if origin is None:
        return None
    try:
        return str(_innermost(origin).getMessage() or "").strip() or None
    except Py4JError:
        return None


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Invalid|File|Interrupt)\w*: ")


def job_failure(exc: BaseException) -> str | None:
    """One line for a job that Spark failed (an unreadable file, a column of another type, a
    master that stopped answering), or None if ``exc`` is no Spark failure: a Python task's
    last line (``pyarrow.lib.ArrowInvalid: Parquet magic bytes not found ...``), else the
    innermost Java cause, else the exception's first line."""
    from pyspark.errors.exceptions.captured import CapturedException, PythonException

    if isinstance(exc, PythonException):
        # the task's traceback ends with "module.Class: message", maybe followed by more
        # lines of that message (an Arrow schema...): the last line that names an exception
        lines = [line for line in str(exc).splitlines() if line.strip()]
        named = [line for line in lines if _EXCEPTION_LINE.match(line)]
        return (named or lines or [type(exc).__name__])[-1].strip()
    if isinstance(exc, CapturedException):
        first = root_cause(str(exc))
        deepest = _java_root_cause(exc)
        reason = first if deepest is None or deepest in first else f"{first} ({deepest})"
        return _with_file(reason, getattr(exc, "_origin", None), str(exc))
    if isinstance(exc, Py4JJavaError):
        try:
            reason = str(_innermost(exc.java_exception).toString()).splitlines()[0]
        except Py4JError:
            reason = str(exc).splitlines()[0]
        return _with_file(reason, exc.java_exception, str(exc))
    return None


_READ_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")


def _with_file(reason: str, origin: Any, text: str) -> str:
    """``reason`` prefixed with the file Spark failed to read (its ``FAILED_READ_FILE``
    error names it, a level or more above the cause: a data page Parquet cannot decode says
    "don't know what type: 14" and no more), when one is named."""
    messages = [text]
    try:
        while origin is not None:
            messages.append(str(origin.getMessage() or ""))
            origin = origin.getCause()
    except Py4JError:
        pass
    for message in messages:
        found = _READ_FILE.search(message)
        if found is not None:
            path = found.group(1)
            path = unquote(urlparse(path).path) if path.startswith("file:") else path
            return reason if path in reason else f"{path}: {reason}"
    return reason


def _innermost(origin: Any) -> Any:
    """The innermost cause of a Java exception (a py4j object)."""
    while origin.getCause() is not None:
        origin = origin.getCause()
    return origin


def root_cause(text: str) -> str:
    """The reason a captured Java exception's text gives: its last ``Caused by:`` message
    (Spark wraps a bad setting in "Error while instantiating ...:", which says nothing),
    without the exception's class; else its first line."""
    causes = [line for line in text.splitlines() if line.startswith("Caused by: ")]
    if not causes:
        return text.strip().splitlines()[0] if text.strip() else text
    cause = causes[-1].removeprefix("Caused by: ")
    name, sep, message = cause.partition(": ")
    return message.strip() if sep and " " not in name else cause.strip()
