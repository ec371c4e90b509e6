"""A history path checked before Spark starts, where that needs no Spark: a path that is
surely on this machine's file system (a ``file:`` URI, or a plain path while nothing points
Hadoop's default file system elsewhere). A mistyped ``--history`` then fails at once, without
a JVM's start-up and log lines first. Every other path is checked once Spark runs
(:func:`ballast.pipeline.sparkio.require_history`), with the same message."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

HISTORY_TABLES = ("brokers", "bundles")
# What can make a plain path resolve on another file system (HDFS on many clusters).
FOREIGN_DEFAULT_FS_ENV = ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_CONF_DIR")


def missing_history(root: str, tables: Sequence[str], root_exists: bool) -> str:
    """The message for a history root that holds none of ``tables``."""
    names = ", ".join(f"{name}/" for name in tables)
    where = f"holds none of {names}" if root_exists else "does not exist"
    return f"no history at {root}: the path {where}"


def _spark_defaults_present() -> bool:
    """Whether PySpark's own ``conf/spark-defaults.conf`` exists (it may set the default
    file system); found without importing PySpark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return False
    return (Path(spec.origin).parent / "conf" / "spark-defaults.conf").is_file()


def surely_local(
    root: str, *, master: str | None, conf: Mapping[str, str], environ: Mapping[str, str]
) -> Path | None:
    """``root`` as a local path if Spark will surely read it from this machine's file
    system, else None (then only Spark can tell)."""
    parsed = urlparse(root)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme:
        return None
    if master is not None and not master.startswith("local"):
        return None
    if any(key.endswith("fs.defaultFS") for key in conf):
        return None
    if any(environ.get(name) for name in FOREIGN_DEFAULT_FS_ENV) or _spark_defaults_present():
        return None
    return Path(root)


def local_history_problem(
    root: str, *, master: str | None, conf: Mapping[str, str], environ: Mapping[str, str]
) -> str | None:
    """Why ``root`` is surely not a history (the message Spark's check would give), or None
    when it holds one or only Spark can tell."""
    local = surely_local(root, master=master, conf=conf, environ=environ)
    if local is None or any((local / name).exists() for name in HISTORY_TABLES):
        return None
    return missing_history(root, HISTORY_TABLES, local.exists())
