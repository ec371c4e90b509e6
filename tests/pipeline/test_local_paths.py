"""The history check made before Spark starts: only for paths surely on this machine, with
the message Spark's own check gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ballast.pipeline.local_paths import (
    local_history_problem,
    local_output_problem,
    results_problem,
    surely_local,
)

LOCAL: dict[str, str] = {}


def test_plain_and_file_paths_are_local_unless_something_points_elsewhere(tmp_path: Path) -> None:
    plain = str(tmp_path / "h")
    assert surely_local(plain, master=None, conf={}, environ=LOCAL) == tmp_path / "h"
    assert surely_local(f"file://{plain}", master=None, conf={}, environ=LOCAL) == Path(plain)
    assert surely_local(plain, master="local[2]", conf={}, environ=LOCAL) is not None
    for master, conf, environ in (
        ("spark://host:7077", {}, LOCAL),
        ("yarn", {}, LOCAL),
        (None, {"spark.hadoop.fs.defaultFS": "hdfs://nn:8020"}, LOCAL),
        (None, {}, {"HADOOP_CONF_DIR": "/etc/hadoop"}),
        (None, {}, {"SPARK_CONF_DIR": "/etc/spark"}),
    ):
        assert surely_local(plain, master=master, conf=conf, environ=environ) is None
    assert surely_local("hdfs://nn/h", master=None, conf={}, environ=LOCAL) is None
    assert surely_local("s3a://bucket/h", master=None, conf={}, environ=LOCAL) is None


@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        (None, "the path does not exist"),
        ((), "the path holds none of brokers/, bundles/"),
        (("bundles/date=2026-01-01/hour=0/a.parquet",), None),
        (("brokers/date=2026-01-01/hour=0/a.parquet", "bundles"), None),
        # tables without a file read as an empty history: results of nothing, exit 0
        (("bundles",), "bundles/ holds no Parquet file"),
        (("brokers", "bundles/.staging/a.parquet"), "brokers/, bundles/ hold no Parquet file"),
    ],
)
def test_the_problem_is_named_as_spark_would(
    tmp_path: Path, layout: tuple[str, ...] | None, problem: str | None
) -> None:
    root = tmp_path / "h"
    if layout is not None:
        root.mkdir()
        for name in layout:
            if name.endswith(".parquet"):  # the check looks for a file, not into it
                (root / name).parent.mkdir(parents=True)
                (root / name).write_bytes(b"")
            else:
                (root / name).mkdir()
    found = local_history_problem(str(root), master=None, conf={}, environ=LOCAL)
    assert found == (None if problem is None else f"no history at {root}: {problem}")
    # Not surely local: only Spark can tell, so no problem is reported here.
    assert local_history_problem(str(root), master="yarn", conf={}, environ=LOCAL) is None


def test_an_output_that_cannot_take_the_results_is_named_before_spark_starts(
    tmp_path: Path,
) -> None:
    history = tmp_path / "h"
    (history / "bundles").mkdir(parents=True)

    def problem(out: str, master: str | None = None) -> str | None:
        return local_output_problem(str(history), out, master=master, conf={}, environ=LOCAL)

    assert problem("") == "--out is empty: give the directory to write the results to"
    for inside in (str(history), f"{history}/", str(history / "bundles"), history.as_uri()):
        found = problem(inside)
        assert found is not None and "is the history or inside it" in found
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert problem(str(a_file)) == f"{a_file} is a file, not a directory"
    assert problem(str(a_file / "sub")) is not None  # cannot be created under a file
    fresh = tmp_path / "results" / "day"
    assert problem(str(fresh)) is None  # made, and written in
    assert not (tmp_path / "results").exists()  # and removed: the job makes it
    assert problem(str(tmp_path / "h-out")) is None  # a sibling sharing the prefix
    assert problem(str(history), master="yarn") is None  # only Spark can tell there
    other = tmp_path / "other-history"
    (other / "bundle_averages").mkdir(parents=True)
    assert problem(str(other)) is None  # a job's earlier results: replaced, as documented
    (other / "topics").mkdir()
    assert problem(str(other)) == (
        f"--out {other} holds a history (topics/): the job's tables would replace that "
        "history's own (its stored averages are a bundle_averages/ table); write the results "
        "elsewhere"
    )
    assert local_output_problem(None, str(other), master=None, conf={}, environ=LOCAL) is None


def test_a_history_is_not_generated_inside_another(tmp_path: Path) -> None:
    """generate --out h/bundles wrote a history's tables inside the bundles table of h, whose
    jobs then failed on them as rows ("has no column bundle")."""
    (tmp_path / "h" / "bundles").mkdir(parents=True)
    for inside in (tmp_path / "h" / "bundles", tmp_path / "h" / "bundles" / "x"):
        problem = local_output_problem(None, str(inside), master=None, conf={}, environ=LOCAL)
        assert problem is not None and f"is inside the history at {tmp_path / 'h'}" in problem
    beside = local_output_problem(None, str(tmp_path / "g"), master=None, conf={}, environ=LOCAL)
    assert beside is None


def test_a_jobs_results_are_no_history_to_import_into(tmp_path: Path) -> None:
    """An import there mixed partitioned snapshot files into time-averages' unpartitioned
    tables, and the jobs then passed over the results that were there."""
    history = tmp_path / "h"
    (history / "bundle_averages" / "date=2026-01-01" / "hour=0").mkdir(parents=True)
    (history / "bundle_averages" / "date=2026-01-01" / "hour=0" / "a.parquet").write_bytes(b"")
    assert results_problem(history) is None  # a history's own stored averages
    assert results_problem(tmp_path / "new") is None
    results = tmp_path / "r"
    (results / "bundle_averages").mkdir(parents=True)
    (results / "bundle_averages" / "part-0.parquet").write_bytes(b"")
    (results / "split_plan").mkdir()
    assert results_problem(results) == (
        f"{results} holds a job's results (split_plan, bundle_averages), not a history: give "
        "the history's own directory"
    )
