"""Session configuration: local sizing, spark-submit, and a clear message without Java."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ballast.metadata.zkserver import free_port
from ballast.pipeline.session import (
    QUIET_LOG,
    SessionOptions,
    SparkUnavailable,
    check_conf,
    check_master,
    check_reachable,
    java_major_version,
    local_conf,
    require_java,
    root_cause,
    session_conf,
)

GIB = 1024**3


def test_local_conf_is_sized_for_the_machine() -> None:
    small = local_conf(2, 24 * GIB)
    assert small["spark.master"] == "local[2]"
    assert small["spark.driver.memory"] == "8g"  # a third of the memory
    assert small["spark.sql.shuffle.partitions"] == "128"
    assert local_conf(1, 1 * GIB)["spark.driver.memory"] == "1g"
    assert local_conf(64, 512 * GIB)["spark.driver.memory"] == "16g"


def test_default_is_local_mode_with_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    conf = session_conf(SessionOptions())
    assert conf["spark.master"].startswith("local[")
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.ui.enabled"] == "false"
    overridden = session_conf(SessionOptions(conf={"spark.driver.memory": "3g"}))
    assert overridden["spark.driver.memory"] == "3g"


def test_a_cluster_master_gets_no_local_sizing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    conf = session_conf(SessionOptions(master="spark://head:7077"))
    assert conf["spark.master"] == "spark://head:7077"
    assert "spark.driver.memory" not in conf


def test_spark_submit_keeps_its_own_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")
    conf = session_conf(SessionOptions())
    assert "spark.master" not in conf
    assert "spark.driver.memory" not in conf


def test_java_is_found_here_and_missing_java_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    version = java_major_version()
    assert version is not None and version >= 17
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    assert java_major_version() is None
    with pytest.raises(SparkUnavailable, match=f"JAVA_HOME is {tmp_path}, which holds no Java"):
        require_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on PATH either
    with pytest.raises(SparkUnavailable, match="Java is not installed"):
        require_java()


def test_a_master_spark_refuses_is_named_before_a_jvm_starts() -> None:
    for master in (
        "local", "local[2]", "local[*]", "local[4, 3]", "local-cluster[2,1,1024]",
        "spark://h:7077", "spark://h1:7077,h2:7077", "spark://[::1]:7077", "yarn",
    ):  # fmt: skip
        check_master(master, {"HADOOP_CONF_DIR": "/etc/hadoop"})  # the forms Spark takes
    check_master("k8s://https://h:6443")
    check_master("yarn", {"YARN_CONF_DIR": "/etc/yarn"})
    with pytest.raises(SparkUnavailable, match="--master yarn needs HADOOP_CONF_DIR or YARN"):
        check_master("yarn", {})  # Spark's launcher said so with a Java stack
    for master in (
        "bogus://x",
        "",
        "YARN",
        "mesos://h:5050",
        "local[abc]",
        "local[0]",
        "local[*]x",
        "spark://",
        "spark://h",
        "spark://h:99999",
        "spark://h:7077,",
        "k8s://",
    ):  # fmt: skip  (Spark's JVM refused these with a stack)
        with pytest.raises(SparkUnavailable, match="is not a Spark master URL"):
            check_master(master)


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("spark.executor.memory", "-5g", "is not a size"),
        ("spark.driver.memory", "lots", "is not a size"),
        ("spark.driver.cores", "abc", "is not a whole number of 1 or more"),
        ("spark.default.parallelism", "0", "is not a whole number of 1 or more"),
    ],
)
def test_a_size_or_count_spark_refuses_is_named_before_a_jvm_starts(
    key: str, value: str, said: str
) -> None:
    """Spark's launcher, or its context, refused these with a Java stack (and a count in the
    job's first stage, exit 1)."""
    with pytest.raises(SparkUnavailable, match=f'--conf {key}="{value}" {said}'):
        check_conf({key: value})
    check_conf({"spark.driver.memory": "4g", "spark.executor.memory": "512M", key + "x": value})


def test_an_unreachable_standalone_master_is_named_before_a_jvm_starts() -> None:
    """Spark retries for a minute, a Java stack each time, then fails on a stopped context."""
    port = free_port()  # nothing listens there
    with pytest.raises(SparkUnavailable, match=rf"cannot reach the Spark master .*:{port}"):
        check_reachable(f"spark://127.0.0.1:{port}")
    with socket.create_server(("127.0.0.1", 0)) as server:
        listening = server.getsockname()[1]
        check_reachable(f"spark://127.0.0.1:{port},127.0.0.1:{listening}")  # one answers
    check_reachable("yarn")  # not a standalone master: nothing to try


def test_the_class_archive_is_used_only_when_there_and_not_overridden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    archive = tmp_path / "spark-classes.jsa"
    option = "spark.driver.extraJavaOptions"
    assert option not in session_conf(SessionOptions(class_archive=archive))  # not recorded
    archive.write_bytes(b"")
    used = session_conf(SessionOptions(class_archive=archive))
    assert used[option] == f'-XX:SharedArchiveFile="{archive}"'
    assert option not in session_conf(SessionOptions(class_archive=None))
    mine = SessionOptions(class_archive=archive, conf={option: "-Dmine=1"})
    assert session_conf(mine)[option] == "-Dmine=1"  # the caller's options replace it
    quiet = session_conf(SessionOptions(class_archive=archive, quiet_start=True))[option]
    assert quiet == f'-XX:SharedArchiveFile="{archive}" -Dlog4j2.configurationFile="{QUIET_LOG}"'
    assert "rootLogger.level = error" in QUIET_LOG.read_text()
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")  # spark-submit started the JVM
    assert option not in session_conf(SessionOptions(class_archive=archive))
    assert option not in session_conf(SessionOptions(class_archive=archive, quiet_start=True))


def test_the_root_cause_of_a_captured_java_exception_is_its_last_cause() -> None:
    """A bad SQL setting read "Error while instantiating '...SessionStateBuilder':", and
    nothing after the colon: the setting's own message is in the cause."""
    text = (
        "Error while instantiating 'org.apache.spark.sql.internal.SessionStateBuilder':\n\n"
        "JVM stacktrace:\njava.lang.IllegalArgumentException: Error while instantiating\n"
        "\tat org.apache.spark.sql.classic.SparkSession(SparkSession.scala:1211)\n"
        "Caused by: org.apache.spark.SparkIllegalArgumentException: [INVALID_CONF_VALUE."
        "TYPE_MISMATCH] The value 'abc' in the config \"spark.sql.shuffle.partitions\" is "
        "invalid. It should be a/an 'int' value. SQLSTATE: 22022\n\t... 23 more\n"
    )
    assert root_cause(text) == (
        "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'abc' in the config "
        "\"spark.sql.shuffle.partitions\" is invalid. It should be a/an 'int' value. "
        "SQLSTATE: 22022"
    )
    assert root_cause("no cause here\nsecond line") == "no cause here"


def test_a_scratch_directory_spark_cannot_make_is_named_before_a_jvm_starts(
    tmp_path: Path,
) -> None:
    """The driver's block manager failed the context with a Java stack per directory, and
    the command ended as an internal error."""
    afile = tmp_path / "afile"
    afile.write_text("")
    wanted = f"{tmp_path}/made/a, {tmp_path}/made/b"
    check_conf({"spark.local.dir": wanted}, {})  # made, as Spark would make them
    assert (tmp_path / "made" / "a").is_dir() and (tmp_path / "made" / "b").is_dir()
    assert list((tmp_path / "made" / "a").iterdir()) == []  # the trial leaves nothing
    for bad, said in ((f"{afile}/x", "Not a directory"), ("/proc/none/x", "No such file")):
        with pytest.raises(SparkUnavailable, match=f"{bad} cannot be used as .*: {said}"):
            check_conf({"spark.local.dir": f"{tmp_path}/ok,{bad}"}, {})
    with pytest.raises(SparkUnavailable, match=r'spark\.local\.dir=" , " names no directory'):
        check_conf({"spark.local.dir": " , "}, {})
    # Spark takes SPARK_LOCAL_DIRS before spark.local.dir: that is the one checked
    env = {"SPARK_LOCAL_DIRS": "/proc/none/y"}
    with pytest.raises(SparkUnavailable, match=r'^SPARK_LOCAL_DIRS="/proc/none/y": /proc/none/y'):
        check_conf({"spark.local.dir": wanted}, env)
    check_conf({"spark.local.dir": "/proc/none/z"}, {"SPARK_LOCAL_DIRS": wanted})
