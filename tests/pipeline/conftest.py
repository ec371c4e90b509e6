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
    # C1 only (faster start for short tests); with tiering off the JVM's code cache
    # defaults to 48 MB, which the whole suite's queries fill — compilation then stops
    # and Spark shuts its context down — so give it room.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(SessionOptions(master="local[2]", conf=TEST_CONF))
    yield session
    session.stop()
