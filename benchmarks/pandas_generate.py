"""The synthetic-history generator as a single-process numpy program: the baseline of the
``generate`` job. It follows the model of ``ballast.pipeline.synthetic_spec`` with numpy
hashes (SplitMix64) instead of Spark's xxhash64, so it writes an equally large and
statistically equal history, not an identical one; a few million rows at a time (whole
snapshots), so its memory stays bounded as a sensible single-process generator's would.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ballast.pipeline.history import partition_of
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS, Table
from ballast.pipeline.synthetic_spec import (
    CANDIDATE_BROKERS,
    GenerateSpec,
    broker_name,
    broker_plan,
    namespace_plan,
)

KEYS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
CHUNK_ROWS = 4_000_000


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _uniform(seed: int, salt: int, *coordinates: np.ndarray) -> np.ndarray:
    state = _mix(np.full(1, seed * 1000 + salt, dtype=np.uint64))
    for coordinate in coordinates:
        with np.errstate(over="ignore"):
            state = _mix(state ^ coordinate.astype(np.uint64))
    return (state >> np.uint64(11)).astype(np.float64) / float(2**53)


def _write(history: Path, table: Table, frame: pd.DataFrame) -> None:
    """One file per hour partition of ``frame``."""
    hours = frame["snapshot_ms"].to_numpy() // 3_600_000
    for hour_index in np.unique(hours):
        part = frame[hours == hour_index]
        first_ms = int(part["snapshot_ms"].iloc[0])
        date, hour = partition_of(first_ms)
        directory = history / table.name / f"date={date}" / f"hour={hour}"
        directory.mkdir(parents=True, exist_ok=True)
        data = pa.Table.from_pandas(part[list(table.column_names)], preserve_index=False)
        pq.write_table(
            data.cast(table.arrow_schema()),
            directory / f"part-{first_ms}.parquet",
            compression="zstd",
        )


@functools.cache
def _names(count: int) -> np.ndarray:
    return np.array([broker_name(i) for i in range(count)], dtype=object)


def generate(spec: GenerateSpec, history: Path) -> dict[str, Any]:
    """The synthetic model (see ``ballast.pipeline.synthetic_spec``), in chunks of whole
    snapshots of about ``CHUNK_ROWS`` bundle rows."""
    plans = namespace_plan(spec)
    brokers = broker_plan(spec)
    joins = np.array([b.join_at for b in brokers])
    leaves = np.array([b.leave_at for b in brokers])
    topic_ns, topic_j, topic_name, topic_bundle = [], [], [], []
    bundle_names: list[str] = []
    bundle_ns: list[int] = []
    for plan in plans:
        segment = 2**32 // plan.bundle_count
        for i in range(plan.bundle_count):
            upper = 0xFFFFFFFF if i == plan.bundle_count - 1 else (i + 1) * segment
            bundle_names.append(f"{plan.namespace}/0x{i * segment:08x}_0x{upper:08x}")
            bundle_ns.append(plan.index)
        for j in range(plan.topic_count):
            name = f"persistent://{plan.namespace}/topic-{j}"
            position = min(
                (zlib.crc32(name.encode()) & 0xFFFFFFFF) // segment, plan.bundle_count - 1
            )
            topic_ns.append(plan.index)
            topic_j.append(j)
            topic_name.append(name)
            topic_bundle.append(plan.bundle_offset + position)
    t_ns, t_j, t_bundle = np.array(topic_ns), np.array(topic_j), np.array(topic_bundle)
    weight = np.floor((t_j + 1.0) ** -spec.skew * 2.0**20) + 1
    count = spec.bundles
    bundle_weight = np.bincount(t_bundle, weights=weight, minlength=count)
    namespace_weight = np.bincount(t_ns, weights=weight, minlength=len(plans))
    b_ns = np.array(bundle_ns)
    ns_rate = np.array([p.msg_rate for p in plans])
    fanout = np.array([p.fanout for p in plans])[b_ns]
    size = np.array([p.msg_size for p in plans])[b_ns]
    phase = np.array([p.phase for p in plans])[b_ns]
    base = ns_rate[b_ns] * bundle_weight / namespace_weight[b_ns]
    topics = np.bincount(t_bundle, minlength=count)
    producers = np.bincount(t_bundle, weights=1 + t_j % 2, minlength=count).astype(np.int64)
    consumers = np.bincount(t_bundle, weights=fanout[t_bundle], minlength=count).astype(np.int64)
    ids = np.arange(count)
    candidates = np.stack(
        [
            (_uniform(spec.seed, 6, ids, np.full(count, i)) * spec.brokers).astype(np.int64)
            for i in range(CANDIDATE_BROKERS)
        ],
        axis=1,
    )
    fallback = (_uniform(spec.seed, 7, ids) * spec.stable_brokers).astype(np.int64)
    names = _names(spec.brokers)
    bundle_array = np.array(bundle_names, dtype=object)
    ns_array = np.array([p.namespace for p in plans], dtype=object)[b_ns]
    capacity = 2.0 * sum(p.msg_rate * (1 + p.fanout) for p in plans) / spec.brokers
    rows = 0
    step = max(1, CHUNK_ROWS // count)
    for chunk_start in range(0, spec.snapshots, step):
        snaps = np.arange(chunk_start, min(chunk_start + step, spec.snapshots))
        s = np.repeat(snaps, count)
        b = np.tile(ids, len(snaps))
        up = (s[:, None] >= joins[candidates[b]]) & (s[:, None] < leaves[candidates[b]])
        first = np.argmax(up, axis=1)
        owner = np.where(up.any(axis=1), candidates[b, first], fallback[b])
        time_ms = spec.start_ms + s * spec.interval_ms
        day = (time_ms % 86_400_000) / 86_400_000.0
        diurnal = 1.0 + 0.6 * np.sin(2 * np.pi * (day - phase[b]))
        window = s // 20
        burst_on = _uniform(spec.seed, 1, b, window) < 0.02
        start = np.floor(_uniform(spec.seed, 3, b, window) * 10)
        length = 3 + np.floor(_uniform(spec.seed, 4, b, window) * 8)
        within = s % 20
        burst = np.where(
            burst_on & (within >= start) & (within < start + length),
            2.0 + 8.0 * _uniform(spec.seed, 2, b, window),
            1.0,
        )
        noise = 0.9 + 0.2 * _uniform(spec.seed, 5, b, s)
        rate_in = np.floor(base[b] * diurnal * burst * noise * 1024 + 0.5) / 1024
        rate_out = np.floor(rate_in * fanout[b] * 1024 + 0.5) / 1024
        frame = pd.DataFrame(
            {
                "snapshot_ms": time_ms,
                "cluster": spec.cluster,
                "broker": names[owner],
                "bundle": bundle_array[b],
                "namespace": ns_array[b],
                "msg_rate_in": rate_in,
                "msg_rate_out": rate_out,
                "msg_throughput_in": np.floor(rate_in * size[b] + 0.5),
                "msg_throughput_out": np.floor(rate_out * size[b] + 0.5),
                "topics": topics[b],
                "producer_count": producers[b],
                "consumer_count": consumers[b],
                "cache_size": np.minimum(np.floor(rate_in * size[b] * 30), 512 * 2**20),
            }
        )
        _write(history, BUNDLES, frame)
        rows += len(frame)
        cell = (s - chunk_start) * spec.brokers + owner
        cells = len(snaps) * spec.brokers
        sums = {k: np.bincount(cell, weights=frame[k].to_numpy(), minlength=cells) for k in KEYS}
        grid_s = np.repeat(snaps, spec.brokers)
        grid_b = np.tile(np.arange(spec.brokers), len(snaps))
        live = (grid_s >= joins[grid_b]) & (grid_s < leaves[grid_b])
        load = (sums["msg_rate_in"] + sums["msg_rate_out"]) / capacity
        broker_frame = pd.DataFrame(
            {
                "snapshot_ms": spec.start_ms + grid_s * spec.interval_ms,
                "cluster": spec.cluster,
                "broker": names[grid_b],
                "cpu_usage": np.minimum(800.0, 800.0 * (0.05 + 0.95 * load)),
                "cpu_limit": 800.0,
                "memory_usage": np.floor(
                    1024 + 2048 * _uniform(spec.seed, 8, grid_b, grid_s) + 0.5
                ),
                "memory_limit": 8192.0,
                "direct_memory_usage": np.minimum(
                    4096.0, 256 + sums["msg_throughput_in"] / 2**20 * 4
                ),
                "direct_memory_limit": 4096.0,
                "bandwidth_in_usage": sums["msg_throughput_in"] * 8 / 1024,
                "bandwidth_in_limit": 10.0 * 2**20,
                "bandwidth_out_usage": sums["msg_throughput_out"] * 8 / 1024,
                "bandwidth_out_limit": 10.0 * 2**20,
                **sums,
                "num_topics": np.bincount(cell, weights=frame["topics"], minlength=cells),
                "num_bundles": np.bincount(cell, minlength=cells),
                "num_consumers": np.bincount(
                    cell, weights=frame["consumer_count"], minlength=cells
                ),
                "num_producers": np.bincount(
                    cell, weights=frame["producer_count"], minlength=cells
                ),
                "last_update_ms": spec.start_ms + grid_s * spec.interval_ms,
            }
        )[live]
        _write(history, BROKERS, broker_frame)
    topic_rows = 0
    names_array = np.array(topic_name, dtype=object)
    for snapshot in spec.topic_snapshots:
        b = t_bundle
        s = np.full(len(b), snapshot)
        time_ms = spec.start_ms + snapshot * spec.interval_ms
        day = (time_ms % 86_400_000) / 86_400_000.0
        factor = (1.0 + 0.6 * np.sin(2 * np.pi * (day - phase[b]))) * (
            0.9 + 0.2 * _uniform(spec.seed, 5, b, s)
        )
        rate_in = np.floor(base[b] * factor * weight / bundle_weight[b] * 1024 + 0.5) / 1024
        rate_out = np.floor(rate_in * fanout[b] * 1024 + 0.5) / 1024
        up = (snapshot >= joins[candidates[b]]) & (snapshot < leaves[candidates[b]])
        owner = np.where(up.any(axis=1), candidates[b, np.argmax(up, axis=1)], fallback[b])
        frame = pd.DataFrame(
            {
                "snapshot_ms": time_ms,
                "cluster": spec.cluster,
                "broker": names[owner],
                "bundle": bundle_array[b],
                "namespace": ns_array[b],
                "topic": names_array,
                "msg_rate_in": rate_in,
                "msg_rate_out": rate_out,
                "msg_throughput_in": np.floor(rate_in * size[b] + 0.5),
                "msg_throughput_out": np.floor(rate_out * size[b] + 0.5),
                "producer_count": 1 + t_j % 2,
                "consumer_count": fanout[b],
            }
        )
        _write(history, TOPICS, frame)
        topic_rows += len(frame)
    return {"bundle_rows": rows, "topic_rows": topic_rows}
