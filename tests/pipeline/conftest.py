"""One small local SparkSession for every pipeline test (starting one costs ~8 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ballast.pipeline.session import SessionOptions, build_session

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(SessionOptions(master="local[2]", conf=TEST_CONF))
    yield session
    session.stop()
