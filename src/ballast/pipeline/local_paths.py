"""A history path checked before Spark starts, where that needs no Spark: a path that is
surely on this machine's file system (a ``file:`` URI, or a plain path while nothing points
Hadoop's default file system elsewhere). A mistyped ``--history`` then fails at once, without
a JVM's start-up and log lines first. Every other path is checked once Spark runs
(:func:`ballast.pipeline.sparkio.require_history`), with the same message."""

from __future__ import annotations

import contextlib
import importlib.util
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

HISTORY_TABLES = ("brokers", "bundles")
# The tables that make a directory a history: a job's --out holding one of them would have
# the history's stored averages replaced by the job's own.
RAW_TABLES = ("brokers", "bundles", "topics")
# What can make a plain path resolve on another file system (HDFS on many clusters).
FOREIGN_DEFAULT_FS_ENV = ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_CONF_DIR")


def missing_history(root: str, tables: Sequence[str], root_exists: bool) -> str:
    """The message for a history root that holds none of ``tables``."""
    names = ", ".join(f"{name}/" for name in tables)
    where = f"holds none of {names}" if root_exists else "does not exist"
    return f"no history at {root}: the path {where}"


def history_held(root: str, held: Sequence[str]) -> str:
    """The message for a writer of a history whose ``root`` already holds the tables
    ``held`` (without ``--replace``, it would write over a history given by mistake)."""
    names = ", ".join(f"{name}/" for name in held)
    return f"{root} already holds a history ({names}); give --replace to write over it"


def local_history_held(
    root: str, *, master: str | None, conf: Mapping[str, str], environ: Mapping[str, str]
) -> str | None:
    """:func:`history_held` for a ``root`` surely on this machine that holds a history's
    tables, found before a JVM starts; None otherwise (then Spark's check says it)."""
    local = surely_local(root, master=master, conf=conf, environ=environ)
    held = [name for name in RAW_TABLES if local is not None and (local / name).exists()]
    return history_held(root, held) if held else None


def history_at_out(out: str, held: Sequence[str]) -> str:
    """The message for a job's ``--out`` that is itself a history (it holds ``held``)."""
    names = ", ".join(f"{name}/" for name in held)
    return (
        f"--out {out} holds a history ({names}): the job's tables would replace that "
        "history's own (its stored averages are a bundle_averages/ table); write the results "
        "elsewhere"
    )


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
    if local is None:
        return None
    present = [name for name in HISTORY_TABLES if (local / name).exists()]
    if any(not (local / name).is_dir() or _holds_parquet(local / name) for name in present):
        return None
    if present:  # read as an empty history: results of nothing, exit 0
        names = ", ".join(f"{name}/" for name in present)
        verb = "holds" if len(present) == 1 else "hold"
        return f"no history at {root}: {names} {verb} no Parquet file"
    if local.is_file():
        return f"no history at {root}: the path is a file, not a history directory"
    return missing_history(root, HISTORY_TABLES, local.exists())


def readable_parquet_files(directory: Path) -> Iterator[Path]:
    """The Parquet files of a table's directory that readers read, as found: hidden files and
    directories (a name starting with ``.`` or ``_``, such as a writer's staging area) are
    passed over, as Spark and pyarrow pass them over."""
    for path in directory.rglob("*.parquet"):
        if not any(part.startswith((".", "_")) for part in path.relative_to(directory).parts):
            yield path


def _holds_parquet(directory: Path) -> bool:
    """Whether a table's directory holds a file its readers read (stops at the first)."""
    return next(readable_parquet_files(directory), None) is not None


def overlap_problem(history: str, out: str) -> str | None:
    """Why ``out`` must not be written beside this ``history``: it is the history or inside
    it, where the job's tables (``bundle_averages``, ``broker_averages``...) would replace
    or sit among the history's own. ``history`` and ``out`` are qualified paths of one file
    system (or local paths, resolved)."""
    root, target = history.rstrip("/"), out.rstrip("/")
    if target == root or target.startswith(root + "/"):
        return (
            f"--out {out} is the history or inside it ({history}): the job's tables would "
            "replace or mix with the history's own; write the results elsewhere"
        )
    return None


def nested_history_problem(root: Path) -> str | None:
    """Why a history must not be written at ``root``: a directory above it holds a history's
    tables, so ``root`` is one of that history's tables or inside one, where the new tables
    would be read as rows of the old (``--history h/bundles``)."""
    for above in root.resolve().parents:
        held = [name for name in RAW_TABLES if (above / name).is_dir()]
        if held:
            return (
                f"{root} is inside the history at {above} (it holds "
                f"{', '.join(f'{name}/' for name in held)}): a history's tables would be "
                "read as that history's rows; give a directory of its own"
            )
    return None


# What a job writes to its --out (the report's page among them): no history holds these.
_RESULT_NAMES = ("split_plan", "shed_decisions", "shed_bundle_averages", "index.html")
_AVERAGES = ("bundle_averages", "broker_averages")


def results_problem(root: Path, hint: str = "give the history's own directory") -> str | None:
    """Why a history must not be written at ``root``: it is a job's ``--out``, whose tables
    the jobs would pass over (time-averages writes its averages unpartitioned, where a
    history's are in date=/hour= partitions)."""
    held = [name for name in _RESULT_NAMES if (root / name).exists()]
    held += [name for name in _AVERAGES if any((root / name).glob("*.parquet"))]
    if not held:
        return None
    return f"{root} holds a job's results ({', '.join(held)}), not a history: {hint}"


def local_output_problem(
    history: str | None,
    out: str,
    *,
    master: str | None,
    conf: Mapping[str, str],
    environ: Mapping[str, str],
) -> str | None:
    """Why a job surely cannot write ``out`` beside ``history`` (None: it reads none): the
    history itself or inside it, another history, or :func:`local_writable_problem`; None
    when it can or only Spark can tell."""
    target = surely_local(out, master=master, conf=conf, environ=environ) if out.strip() else None
    source = surely_local(history, master=master, conf=conf, environ=environ) if history else None
    if target is not None and source is not None:
        problem = overlap_problem(str(source.resolve()), str(target.resolve()))
        if problem is not None:
            return problem
    if target is not None and history is not None:
        held = [name for name in RAW_TABLES if (target / name).is_dir()]
        if held:
            return history_at_out(out, held)
    if target is not None and history is None:  # a history's own root (generate)
        nested = nested_history_problem(target)
        if nested is not None:
            return nested
    return local_writable_problem(out, master=master, conf=conf, environ=environ)


def local_writable_problem(
    out: str, *, master: str | None, conf: Mapping[str, str], environ: Mapping[str, str]
) -> str | None:
    """Why ``out`` surely cannot take a job's results (empty, a file, or a directory that
    cannot be created or written in), or None when it can or only Spark can tell. The
    directories made to try it are removed again: a job that fails later (a bad setting, a
    Spark that will not start) leaves no empty ``--out`` behind, and the job makes them."""
    if not out.strip():
        return "--out is empty: give the directory to write the results to"
    target = surely_local(out, master=master, conf=conf, environ=environ)
    if target is None:
        return None
    if target.exists() and not target.is_dir():
        return f"{out} is a file, not a directory"
    made = [path for path in (target, *target.parents) if not path.exists()]  # deepest first
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:
        return f"cannot write to --out {out}: {exc.strerror or exc}"
    finally:
        for path in made:
            with contextlib.suppress(OSError):  # one made by someone else meanwhile stays
                path.rmdir()
    return None
