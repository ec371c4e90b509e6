"""A local history's files checked against their table before Spark reads them: Spark reads
with the table's schema, so a file lacking a column would read as nulls in it (wrong
averages, reported as success) and one of another type fails a task with a Java stack.
Checking each file's footer names the file and the column instead."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ballast.pipeline.local_paths import readable_parquet_files
from ballast.pipeline.schema import ColumnType, Table


class HistoryFileError(ValueError):
    """A file of a history table that is not that table's: unreadable, or without one of its
    columns, or with one of another type."""


def first_line(exc: BaseException) -> str:
    """An Arrow or OS error in one line (Arrow's may go on for a schema), or its type's name
    when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def table_files(directory: Path) -> list[Path]:
    """:func:`~ballast.pipeline.local_paths.readable_parquet_files`, in name order."""
    return sorted(readable_parquet_files(directory))


def check_table_files(directory: Path, table: Table) -> None:
    """Raise :class:`HistoryFileError` for the first file of :func:`table_files` that is not
    a file of ``table``: unreadable, a column missing or of another type, an empty (null)
    value in a column that must have one, or a negative or infinite rate or count. Only its
    footer is read (about a millisecond a file): the null counts, minima and maxima are the
    writer's statistics, where it wrote them (a NaN is in none of them)."""
    # Lists are left out of the null check: their statistics count null elements.
    required = {c.name for c in table.columns if not c.nullable and c.type not in _LISTS}
    counted = {c.name for c in table.columns if c.counted}
    for path in table_files(directory):
        if table.partitioned:
            _check_partition(directory, path, table.name)
        try:
            metadata = pq.read_metadata(path)
            schema = metadata.schema.to_arrow_schema()
        except (pa.ArrowException, OSError) as exc:
            raise HistoryFileError(
                f"{path} is not a readable Parquet file: {first_line(exc)}"
            ) from None
        missing = [c.name for c in table.columns if not c.nullable and c.name not in schema.names]
        if missing:
            named = ", ".join(missing[:4]) + (
                f" ({len(missing)} in all)" if len(missing) > 4 else ""
            )
            raise HistoryFileError(
                f"{path} has no column {named}: not a file of the {table.name} table (of "
                "another table, or of another schema)"
            )
        for column in table.columns:
            if column.name in schema.names:
                found = schema.field(column.name).type
                if _kind(found) != _kind(column.type.arrow()):
                    raise HistoryFileError(
                        f"{path}: column {column.name} holds {found}, not {column.type.value}"
                    )
        _check_statistics(path, metadata, table.name, required, counted)


_LISTS = (ColumnType.LONG_ARRAY, ColumnType.STRING_ARRAY)


def _check_partition(directory: Path, path: Path, name: str) -> None:
    """A partitioned table's file is two levels down, ``date=.../hour=.../``: Spark's reader
    passed over one elsewhere while the report's tasks read it, or failed on conflicting
    partition columns with a Java stack."""
    parts = path.relative_to(directory).parts
    if len(parts) != 3 or _PARTITION.fullmatch(f"{parts[0]}/{parts[1]}") is None:
        raise HistoryFileError(
            f"{path} is outside the partitions of the {name} table: its files are in "
            f"{directory}/date=YYYY-MM-DD/hour=H/ (move it into its partition, or away)"
        )


# A partition a writer makes: a UTC date and an hour 0-23 (Spark would read ``date=bogus`` as
# one, its rows with it, where the jobs look for snapshots by their own time).
_PARTITION = re.compile(r"date=\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])/hour=(1?\d|2[0-3])")


def _check_statistics(
    path: Path, metadata: pq.FileMetaData, name: str, required: set[str], counted: set[str]
) -> None:
    """Refuse a null in a ``required`` column of table ``name`` (Spark would average it as
    NaN, or a strategy would fail on it), and a negative or infinite value in a ``counted``
    one: the model refuses a negative rate or count, and an average over an infinite one is
    infinite or NaN."""
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            column = chunk.path_in_schema
            stats = chunk.statistics
            nulls = stats.null_count if stats is not None and stats.has_null_count else 0
            if nulls and column in required:
                raise HistoryFileError(
                    f"{path}: column {column} has {nulls} empty (null) values; every row of "
                    f"the {name} table needs one"
                )
            if column in counted and stats is not None and stats.has_min_max:
                for value in (stats.min, stats.max):
                    if value < 0 or math.isinf(value):
                        raise HistoryFileError(
                            f"{path}: column {column} holds {value}; a rate or count of the "
                            f"{name} table is a finite number, not negative"
                        )


def _kind(kind: pa.DataType) -> str:
    """What a column holds, whatever its width or encoding: string, integer, floating,
    list of one of those, or the type itself."""
    if pa.types.is_dictionary(kind):
        return _kind(kind.value_type)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "floating"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{_kind(kind.value_type)}>"
    return str(kind)
