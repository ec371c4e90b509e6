"""Reading and writing history files from Spark tasks with pyarrow, for work done in Python:
the rows never pass through the JVM. Spark still splits the work into tasks, runs them on
every core (or executor) and retries them; each task reads or writes its own Parquet files
with pyarrow's columnar reader and writer, in the history's layout
(:mod:`ballast.pipeline.sparkio`).

Reading (``report``, ``split-plan``): :func:`read_in_tasks` gives each task a group of files
and a function of their rows (a partial aggregate, or a filter) whose results Spark gets as a
DataFrame.

Writing (``generate``): :func:`write_in_tasks`.

Commit protocol of writes — the tables are replaced whole, as Spark's overwrite mode
replaces them, but readers never see a half-written table:

- tasks write under a hidden staging directory beside the tables,
  ``<root>/.staging-<token>/<table>/date=.../hour=.../part-<first>.parquet`` (``first``: the
  unit's first snapshot index), each file under a hidden temporary name first, renamed when
  complete. A retried or speculative attempt of a unit writes the same names, so the last
  complete attempt wins and nothing is duplicated;
- when every task has succeeded, the driver moves each staged table into place (the old one
  renamed aside, then deleted); if the job fails, the staging directory is removed.

Local file systems only, for both (a path that Spark resolves to ``file:``), where renaming a
directory is atomic and every executor of a local-mode session sees the same files.
:func:`local_root` says whether a path qualifies; other file systems (HDFS, S3 through
``s3a://``) are written by Spark's writer and its output committers instead.
"""

from __future__ import annotations

import math
import os
import shutil
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.pipeline.file_check import first_line
from ballast.pipeline.history import partition_of
from ballast.pipeline.schema import Table

# What a unit of work produces: (table, rows) pairs for the snapshot indexes of a range.
Producer = Callable[[range], Iterator[tuple[Table, pa.RecordBatch]]]

MANIFEST_SCHEMA = "table string, rows long"
BYTES_PER_READ_TASK = 64 * 1024 * 1024
MS_PER_HOUR = 3_600_000
# As the Spark session's Parquet setting: a day of bundle names fits one dictionary page.
DICTIONARY_PAGE_BYTES = 8 * 1024 * 1024


def local_root(spark: SparkSession, root: str) -> Path | None:
    """``root`` as a local directory if Spark would write it to the local file system
    (``file:`` paths, and plain paths while the default file system is local), else None."""
    scheme = urlparse(root).scheme
    if scheme == "file":
        return Path(urlparse(root).path)
    if scheme:
        return None
    # A plain path resolves against Hadoop's default file system (HDFS on many clusters).
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    default = str(hadoop.get("fs.defaultFS") or "file:///")
    return Path(root) if default.startswith("file:") else None


def _by_hour(rows: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """``rows`` split by the UTC hour of ``snapshot_ms`` (one piece when they share one)."""
    hours = rows.column("snapshot_ms").to_numpy() // MS_PER_HOUR
    if len(hours) == 0:
        return
    if hours[0] == hours[-1] and (hours == hours[0]).all():
        yield int(hours[0]), rows
        return
    for hour in np.unique(hours):
        yield int(hour), rows.filter(pa.array(hours == hour))


def _write_unit(produce: Producer, staging: Path, first: int, end: int) -> dict[str, int]:
    """Write the tables of one unit (snapshots ``first <= s < end``) under ``staging``;
    returns rows per table."""
    writers: dict[Path, pq.ParquetWriter] = {}
    rows: dict[str, int] = {}
    name = f"part-{first:06d}.parquet"
    try:
        for table, batch in produce(range(first, end)):
            rows[table.name] = rows.get(table.name, 0) + batch.num_rows
            for hour, piece in _by_hour(batch):
                date, hour_of_day = partition_of(hour * MS_PER_HOUR)
                target = staging / table.name / f"date={date}" / f"hour={hour_of_day}" / name
                writer = writers.get(target)
                if writer is None:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    strings = [f.name for f in piece.schema if _is_string(f.type)]
                    writer = pq.ParquetWriter(
                        target.with_name(f".{name}.tmp"),
                        piece.schema,
                        compression="zstd",
                        use_dictionary=strings,
                        dictionary_pagesize_limit=DICTIONARY_PAGE_BYTES,
                        store_schema=False,
                    )
                    writers[target] = writer
                writer.write_batch(piece)
    except BaseException:
        for target, writer in writers.items():
            writer.close()
            target.with_name(f".{name}.tmp").unlink(missing_ok=True)
        raise
    for target, writer in writers.items():
        writer.close()
        os.replace(target.with_name(f".{name}.tmp"), target)
    return rows


def _is_string(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _task(
    produce: Producer, staging: Path, ranges: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for batch in ranges:
        for first, end in zip(
            batch.column("first").to_pylist(), batch.column("end").to_pylist(), strict=True
        ):
            rows = _write_unit(produce, staging, first, end)
            yield pa.RecordBatch.from_pydict(
                {"table": list(rows), "rows": list(rows.values())},
                schema=pa.schema([("table", pa.string()), ("rows", pa.int64())]),
            )


def write_in_tasks(
    ranges: DataFrame, produce: Producer, root: Path, tables: Sequence[Table]
) -> dict[str, int]:
    """Replace ``tables`` under the local directory ``root`` with the rows ``produce``
    computes for each snapshot range of ``ranges`` (columns ``first``, ``end``), one Spark
    task per partition of ``ranges``; returns the rows written per table. Tables named in
    ``tables`` that get no rows are replaced by empty ones; rows of other tables are an
    error."""
    staging = root / f".staging-{uuid.uuid4().hex}"

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _task(produce, staging, batches)

    names = {t.name for t in tables}
    try:
        manifest = ranges.mapInArrow(write, MANIFEST_SCHEMA).collect()
        written = {name: 0 for name in names}
        for entry in manifest:
            if entry["table"] not in names:
                raise ValueError(f"rows of table {entry['table']}, not one of {sorted(names)}")
            written[entry["table"]] += int(entry["rows"])
        for name in sorted(names):
            _replace(root, staging / name, name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _replace(root: Path, staged: Path, name: str) -> None:
    """Move a staged table into place: the old one is renamed aside first, so the table is
    never partly old and partly new."""
    staged.mkdir(parents=True, exist_ok=True)
    final = root / name
    aside = root / f".{name}-replaced-{uuid.uuid4().hex}"
    if final.exists():
        os.replace(final, aside)
    os.replace(staged, final)
    shutil.rmtree(aside, ignore_errors=True)


def file_groups(files: Sequence[Path], parallelism: int) -> list[list[Path]]:
    """``files`` in groups of about ``BYTES_PER_READ_TASK`` bytes, a whole multiple of
    ``parallelism`` of them (fewer only when there are fewer files), balanced by size."""
    sizes = {f: f.stat().st_size for f in files}
    total = sum(sizes.values())
    rounds = max(1, math.ceil(total / BYTES_PER_READ_TASK / max(1, parallelism)))
    count = min(len(files), max(1, parallelism) * rounds)
    groups: list[list[Path]] = [[] for _ in range(count)]
    loads = [0] * count
    for file in sorted(files, key=lambda f: (-sizes[f], str(f))):
        smallest = loads.index(min(loads))
        groups[smallest].append(file)
        loads[smallest] += sizes[file]
    return groups


class UnreadableFile(ValueError):
    """A history file a task cannot read as the table it belongs to. The files come from a
    frame :func:`~ballast.pipeline.sparkio.read_history` read, which checked them
    (:mod:`ballast.pipeline.file_check`); this names a file that changed since."""


def read_in_tasks(
    spark: SparkSession,
    files: Sequence[Path],
    table: Table,
    columns: Sequence[str],
    compute: Callable[[pa.Table], pa.Table],
    schema: str,
    *,
    plain_if_distinct: Collection[str] = (),
) -> DataFrame:
    """``compute`` of the ``columns`` of each group of the local Parquet ``files`` of
    ``table`` (see :func:`file_groups`), one task per group, as a DataFrame of ``schema``.
    String columns are read dictionary-encoded, but those named in ``plain_if_distinct``
    only from files that store them as repeated values (:func:`stores_repeats`): bundle
    names repeat in every snapshot of a file at 100,000 bundles per snapshot, and are nearly
    all distinct within a file at a million, where a dictionary as large as the column costs
    three times the plain read (0.23 s against 0.07 s per million-row file). Each file must
    hold every column in ``columns`` (both history writers write all of a table's
    columns)."""
    groups = [[str(f) for f in group] for group in file_groups(files, _parallelism(spark))]
    strings = [c for c in columns if table.column(c).type.value == "string"]

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                for path in groups[index]:
                    try:
                        metadata = pq.read_metadata(path)
                        encoded = [
                            c
                            for c in strings
                            if c not in plain_if_distinct or stores_repeats(metadata, c)
                        ]
                        rows = pq.read_table(path, columns=list(columns), read_dictionary=encoded)
                    except (pa.ArrowException, OSError) as exc:
                        # the driver sees the task's last line: name the file in it
                        raise UnreadableFile(f"{path}: {first_line(exc)}") from None
                    yield from compute(rows).to_batches()

    ids = spark.range(0, len(groups), numPartitions=max(1, len(groups)))
    return ids.select(F.col("id")).mapInArrow(read, schema)


def stores_repeats(metadata: pq.FileMetaData, column: str) -> bool:
    """Whether a Parquet file holds the strings of ``column`` in under half the bytes they
    take plain (a 4-byte length and the bytes of each value, the length estimated from the
    row groups' min and max): its values repeat, and its dictionary is much smaller than the
    column. Writers fall back from dictionary to plain pages once the distinct values fill
    the dictionary page, so mostly distinct values are stored at about their plain size.
    False when the file has no such column or no statistics to tell."""
    stored = plain = 0.0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            if chunk.path_in_schema != column:
                continue
            statistics = chunk.statistics
            if statistics is None or not statistics.has_min_max:
                return False
            length = (len(statistics.min) + len(statistics.max)) / 2
            stored += chunk.total_uncompressed_size
            plain += chunk.num_values * (4 + length)
    return plain > 0 and stored < plain / 2


def _parallelism(spark: SparkSession) -> int:
    return max(1, spark.sparkContext.defaultParallelism)


def local_files(frame: DataFrame) -> list[Path]:
    """The local files a DataFrame read from Parquet scans (Spark's listing: partition
    discovery, hidden and temporary files left out)."""
    return [Path(unquote(urlparse(uri).path)) for uri in frame.inputFiles()]
