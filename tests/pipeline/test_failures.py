"""What a job says when its input or Spark fails it: a history file that is not its table's
(named, with the column or the reason), a task's exception in one line, Ctrl-C in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from pyspark.sql import SparkSession

from ballast.cli import spark_command as command
from ballast.pipeline.file_check import HistoryFileError, check_table_files, table_files
from ballast.pipeline.schema import BROKERS, BUNDLES, ColumnType


def bundle_rows(**replaced: pa.Array) -> pa.Table:
    """One row of the bundles table, with columns replaced or (given None) left out."""
    columns: dict[str, pa.Array] = {}
    for column in BUNDLES.columns:
        kind = column.type.arrow()
        value: Any = "x" if pa.types.is_string(kind) else 1
        if pa.types.is_list(kind):
            value = []
        columns[column.name] = pa.array([value], type=kind)
    for name, array in replaced.items():
        if array is None:
            del columns[name]
        else:
            columns[name] = array
    return pa.table(columns)


PARTITION = Path("date=2026-01-01", "hour=0")


def test_a_table_of_its_own_files_passes(tmp_path: Path) -> None:
    (tmp_path / PARTITION).mkdir(parents=True)
    pq.write_table(bundle_rows(), tmp_path / PARTITION / "part-0.parquet")
    check_table_files(tmp_path, BUNDLES)


@pytest.mark.parametrize(
    ("file", "said"),
    [
        (b"garbage, not Parquet", "is not a readable Parquet file: Parquet magic bytes not found"),
        (bundle_rows(topics=None), "has no column topics: not a file of the bundles table"),
        (
            bundle_rows(msg_rate_in=pa.array(["fast"])),
            "column msg_rate_in holds string, not double",
        ),
        # Spark averaged a null as NaN (exit 0), and shed failed on it with an internal error
        (
            bundle_rows(msg_rate_in=pa.array([None], type=pa.float64())),
            "column msg_rate_in has 1 empty \\(null\\) values; every row of the bundles table",
        ),
        # averaged without a word (exit 0), where the model refuses such a rate or count
        (
            bundle_rows(msg_rate_in=pa.array([-5.0])),
            "column msg_rate_in holds -5.0; a rate or count of the bundles table is a finite",
        ),
        (bundle_rows(msg_throughput_out=pa.array([float("inf")])), "msg_throughput_out holds inf"),
        (bundle_rows(producer_count=pa.array([-1])), "column producer_count holds -1; a rate"),
    ],
)
def test_a_file_not_of_the_table_is_named(tmp_path: Path, file: Any, said: str) -> None:
    """Spark read such a file with the table's schema: a column it lacks as nulls (wrong
    averages, exit 0), the rest as a Java stack and "internal error"."""
    (tmp_path / PARTITION).mkdir(parents=True)
    pq.write_table(bundle_rows(), tmp_path / PARTITION / "a.parquet")
    bad = tmp_path / PARTITION / "b.parquet"
    if isinstance(file, bytes):
        bad.write_bytes(file)
    else:
        pq.write_table(file, bad)
    with pytest.raises(HistoryFileError, match=said) as refused:
        check_table_files(tmp_path, BUNDLES)
    assert str(refused.value).startswith(str(bad))


def test_unknown_usage_and_cache_sizes_are_not_counts(tmp_path: Path) -> None:
    """Only rates and counts are bounded: Pulsar reports an unknown limit as -1."""
    (tmp_path / "bundles" / PARTITION).mkdir(parents=True)
    pq.write_table(
        bundle_rows(cache_size=pa.array([-1])), tmp_path / "bundles" / PARTITION / "a.parquet"
    )
    check_table_files(tmp_path / "bundles", BUNDLES)
    brokers = pa.table(
        {
            c.name: pa.array(
                ["x"] if c.type is ColumnType.STRING else [-1.0 if "_limit" in c.name else 1],
                type=c.type.arrow(),
            )
            for c in BROKERS.columns
        }
    )
    (tmp_path / "brokers" / PARTITION).mkdir(parents=True)
    pq.write_table(brokers, tmp_path / "brokers" / PARTITION / "b.parquet")
    check_table_files(tmp_path / "brokers", BROKERS)
    assert [c.name for c in BROKERS.columns if c.counted][:4] == [
        "msg_rate_in",
        "msg_rate_out",
        "msg_throughput_in",
        "msg_throughput_out",
    ]


def test_hidden_files_and_directories_are_passed_over(tmp_path: Path) -> None:
    """A writer's staging area (pyarrow's writer writes under a hidden name first) and other
    hidden files are not the table's, as Spark and pyarrow read it: they are not checked."""
    (tmp_path / PARTITION / ".staging").mkdir(parents=True)
    (tmp_path / "_tmp").mkdir()
    pq.write_table(bundle_rows(), tmp_path / PARTITION / "a.parquet")
    for hidden in (".staging/b.parquet", ".c.parquet", "../../_tmp/d.parquet"):
        (tmp_path / PARTITION / hidden).write_bytes(b"junk")
    assert table_files(tmp_path) == [tmp_path / PARTITION / "a.parquet"]
    check_table_files(tmp_path, BUNDLES)


@pytest.mark.parametrize(
    "stray",
    [
        "snapshot-x-1.parquet",
        "date=2026-01-01/b.parquet",
        "date=2026-01-01/hour=0/x/c.parquet",
        # read as partitions, with their rows, where the jobs find snapshots by their time
        "date=bogus/hour=0/d.parquet",
        "date=2026-13-01/hour=0/e.parquet",
        "date=2026-01-01/hour=24/f.parquet",
        "date=2026-01-01/hour=07/g.parquet",
    ],
)
def test_a_file_outside_the_partitions_is_named(tmp_path: Path, stray: str) -> None:
    """Spark's reader passed over a file beside the partitions while the report's tasks read
    it (another cluster's rows in the report only); one in a date= directory without its
    hour= failed the job with Spark's conflicting partition columns."""
    (tmp_path / PARTITION / "x").mkdir(parents=True)
    pq.write_table(bundle_rows(), tmp_path / PARTITION / "a.parquet")
    (tmp_path / stray).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(bundle_rows(), tmp_path / stray)
    with pytest.raises(HistoryFileError, match="is outside the partitions of the bundles table"):
        check_table_files(tmp_path, BUNDLES)


@pytest.mark.spark
def test_a_task_failure_is_one_line(spark: SparkSession) -> None:
    """The driver's PythonException carries the task's whole traceback; the line that names
    the exception is the reason, not what follows it (an Arrow schema, say)."""
    from pyspark.errors.exceptions.captured import AnalysisException, PythonException

    from ballast.pipeline.session import job_failure

    task = PythonException(
        desc='Traceback (most recent call last):\n  File "t.py", line 1, in read\n'
        "ballast.pipeline.taskio.UnreadableFile: /h/f.parquet: no match\nfield: string\n",
        stackTrace="",
    )
    assert job_failure(task) == "ballast.pipeline.taskio.UnreadableFile: /h/f.parquet: no match"
    analysis = AnalysisException(desc="[X] what went wrong\nand more", stackTrace="")
    assert job_failure(analysis) == "[X] what went wrong"
    assert job_failure(ValueError("ours")) is None  # not Spark's: a bug, left to main


class FakeSession:
    def __init__(self) -> None:
        self.stopped = 0
        self.sparkContext = self

    def setLogLevel(self, level: str) -> None:
        self.level = level

    def stop(self) -> None:
        self.stopped += 1


def test_ctrl_c_in_a_job_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = FakeSession()
    monkeypatch.setattr("ballast.pipeline.session.build_session", lambda _options: session)
    monkeypatch.delenv("BALLAST_DEBUG", raising=False)
    try:
        with command.spark_session(None, None):
            raise KeyboardInterrupt
    except KeyboardInterrupt:  # escaping, it would stop the test session itself
        pytest.fail("the interrupt escaped as a traceback")
    except typer.Exit as stopped:
        assert stopped.exit_code == 130
    assert "error: interrupted: the job stopped before its end" in capsys.readouterr().err
    assert session.stopped == 1 and session.level == "OFF"  # Spark's log quiet, session stopped
    # any other ending stops the session too, and a bug is left to the last line of defence
    with pytest.raises(ZeroDivisionError), command.spark_session(None, None):
        raise ZeroDivisionError
    assert session.stopped == 2


def test_a_spark_address_where_no_master_answers_is_said_so() -> None:
    """A ``spark://`` address of another server's port: Spark gives up registering and says
    only that its context is stopped; the line names the likely cause. Other failures keep
    their reason as it is."""
    stopped = "java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext."
    line = command.start_failure("spark://127.0.0.1:8080", stopped)
    assert line.startswith("Spark did not start (master spark://127.0.0.1:8080): no Spark master")
    assert "is it a Spark master's address?" in line and stopped in line
    refused = "java.io.IOException: Failed to connect"
    assert command.start_failure(None, refused) == f"Spark did not start (master local): {refused}"
    assert "no Spark master" not in command.start_failure("local[2]", stopped)
