"""A local history's files checked against their table before Spark reads them: Spark reads
with the table's schema, so a file lacking a column would read as nulls in it (wrong
averages, reported as success) and one of another type fails a task with a Java stack.
Checking each file's footer names the file and the column instead."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ballast.pipeline.schema import Table


class HistoryFileError(ValueError):
    """A file of a history table that is not that table's: unreadable, or without one of its
    columns, or with one of another type."""


def first_line(exc: BaseException) -> str:
    """An Arrow or OS error in one line (Arrow's may go on for a schema), or its type's name
    when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def check_table_files(directory: Path, table: Table) -> None:
    """Raise :class:`HistoryFileError` for the first ``*.parquet`` file under ``directory``
    that is not a file of ``table`` (its footer only is read: about a millisecond a file)."""
    for path in sorted(directory.rglob("*.parquet")):
        try:
            schema = pq.read_schema(path)
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
