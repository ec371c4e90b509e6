"""The synthetic model's arithmetic (see :mod:`ballast.pipeline.synthetic_spec`) on numpy
arrays: the static plan of every bundle and topic, and the history rows of a range of
snapshots as Arrow record batches.

Pure functions of the spec and the rows' coordinates, with no Spark, I/O or shared state, so
any process computes any slice of a history alone and gets the same rows: the ``generate``
job runs them in its Spark tasks (:mod:`ballast.pipeline.transforms.synthetic`), one range of
snapshots per task, vectorised.

Random choices are Spark's ``xxhash64`` (seed 42, each long column hashed into the previous
hash), reimplemented here on uint64 arrays, of the seed, a salt and the coordinates; rates are
rounded to multiples of 2**-10 (throughputs to whole bytes) so that broker sums are exact in
any order. String columns (cluster, broker, bundle, namespace) are dictionary arrays over the
plan's names: building them costs an index per row, and Parquet stores them as dictionaries.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS, Table
from ballast.pipeline.synthetic_spec import (
    CANDIDATE_BROKERS,
    GenerateSpec,
    broker_name,
    broker_plan,
    namespace_plan,
)

Longs = npt.NDArray[np.int64]
Doubles = npt.NDArray[np.float64]

MIB = 1024 * 1024
_TWO_53 = float(2**53)
_WEIGHT_SCALE = float(2**20)
_DAY_MS = 86_400_000
_BURST_WINDOW = 20
_BURST_PROBABILITY = 0.02
_DIURNAL_AMPLITUDE = 0.6
_CORES = 8
_NIC_KBITS = 10.0 * 1024 * 1024  # 10 Gbit/s in kbit/s, as Pulsar reports NIC limits
_HEAP_MIB = 8192.0
_DIRECT_MIB = 4096.0
_CPU_LIMIT = float(_CORES * 100)

# Salts keep the hash streams of different choices apart.
_SALT_BURST, _SALT_SIZE, _SALT_START, _SALT_LENGTH, _SALT_NOISE = 1, 2, 3, 4, 5
_SALT_CANDIDATE, _SALT_FALLBACK, _SALT_HEAP = 6, 7, 8

# -- Spark's xxhash64 -------------------------------------------------------------------------

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_SPARK_SEED = 42


def _rotl(x: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    return (x << np.uint64(bits)) | (x >> np.uint64(64 - bits))


def _hash_long(
    value: npt.NDArray[np.uint64], seed: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """``XXH64.hashLong(value, seed)`` as Spark computes it (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        h = seed + (_P5 + np.uint64(8))
        h = h ^ (_rotl(value * _P2, 31) * _P1)
        h = _rotl(h, 27) * _P1 + _P4
        h = h ^ (h >> np.uint64(33))
        h = h * _P2
        h = h ^ (h >> np.uint64(29))
        h = h * _P3
        return h ^ (h >> np.uint64(32))


def xxhash64(*columns: npt.ArrayLike) -> Longs:
    """Spark's ``xxhash64(c1, c2, ...)`` of long columns (scalars broadcast), as int64."""
    arrays = [np.asarray(c, dtype=np.int64).view(np.uint64) for c in columns]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    h = np.array(_SPARK_SEED, dtype=np.uint64)
    for array in arrays:  # scalars first hash into a scalar; arrays widen the hash
        h = _hash_long(array, h)
    return np.broadcast_to(h, shape).view(np.int64)


def uniform(seed: int, salt: int, *coordinates: npt.ArrayLike) -> Doubles:
    """A number in [0, 1) that is a hash of the seed, the salt and the coordinates."""
    hashed = xxhash64(seed, salt, *coordinates).view(np.uint64)
    return (hashed >> np.uint64(11)).astype(np.float64) / _TWO_53


def _binary_fraction(value: Doubles) -> Doubles:
    """Round to a multiple of 2**-10: sums of such numbers are exact in doubles."""
    return np.floor(value * 1024.0 + 0.5) / 1024.0


def _whole(value: Doubles) -> Doubles:
    return np.floor(value + 0.5)


# -- the static plan --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StaticPlan:
    """Every bundle's and topic's fixed traits, indexed by bundle id and topic index.

    Bundles: name, namespace index, topic count and integer weight, base rate (msg/s at the
    diurnal mean), producers, consumers, fanout, message size, diurnal phase, the
    ``CANDIDATE_BROKERS`` candidate broker indexes (one row per bundle) and the always-up
    fallback. Topics: name, bundle id, weight, producers and consumers."""

    bundle_names: pa.Array
    namespace_names: pa.Array
    bundle_namespace: Longs
    bundle_topics: Longs
    bundle_weight: Longs
    base_rate: Doubles
    producers: Longs
    consumers: Longs
    fanout: Longs
    msg_size: Longs
    phase: Doubles
    candidates: Longs
    fallback: Longs
    topic_names: pa.Array
    topic_bundle: Longs
    topic_weight: Longs
    topic_producers: Longs
    topic_consumers: Longs
    broker_names: pa.Array
    join_at: Longs
    leave_at: Longs


def static_plan(spec: GenerateSpec) -> StaticPlan:
    """The plan of ``spec``: namespaces split into Pulsar's equal bundle ranges, topics placed
    by the CRC-32 of their names, bundles weighed by their topics."""
    plans = namespace_plan(spec)
    bundle_names: list[str] = []
    topic_names: list[str] = []
    topic_bundle: list[int] = []
    topic_j: list[int] = []
    topic_namespace: list[int] = []
    for plan in plans:
        segment = 2**32 // plan.bundle_count
        for i in range(plan.bundle_count):
            upper = 0xFFFFFFFF if i == plan.bundle_count - 1 else (i + 1) * segment
            bundle_names.append(f"{plan.namespace}/0x{i * segment:08x}_0x{upper:08x}")
        for j in range(plan.topic_count):
            name = f"persistent://{plan.namespace}/topic-{j}"
            position = min(zlib.crc32(name.encode()) // segment, plan.bundle_count - 1)
            topic_names.append(name)
            topic_bundle.append(plan.bundle_offset + position)
            topic_j.append(j)
            topic_namespace.append(plan.index)
    count = spec.bundles
    namespace = np.repeat(
        np.arange(len(plans), dtype=np.int64), [p.bundle_count for p in plans]
    ).astype(np.int64)
    t_bundle = np.array(topic_bundle, dtype=np.int64)
    t_j = np.array(topic_j, dtype=np.int64)
    t_weight = (np.floor(np.power(t_j + 1.0, -spec.skew) * _WEIGHT_SCALE) + 1).astype(np.int64)
    fanout = np.array([p.fanout for p in plans], dtype=np.int64)
    t_producers = 1 + t_j % 2
    t_consumers = fanout[np.array(topic_namespace, dtype=np.int64)]
    weight = np.bincount(t_bundle, weights=t_weight, minlength=count).astype(np.int64)
    namespace_weight = np.bincount(
        np.array(topic_namespace, dtype=np.int64), weights=t_weight, minlength=len(plans)
    ).astype(np.int64)
    ns_rate = np.array([p.msg_rate for p in plans], dtype=np.float64)
    ids = np.arange(count, dtype=np.int64)
    candidates = np.stack(
        [
            np.mod(xxhash64(spec.seed, _SALT_CANDIDATE, ids, i), spec.brokers)
            for i in range(CANDIDATE_BROKERS)
        ],
        axis=1,
    )
    brokers = broker_plan(spec)
    return StaticPlan(
        bundle_names=pa.array(bundle_names, pa.string()),
        namespace_names=pa.array([p.namespace for p in plans], pa.string()),
        bundle_namespace=namespace,
        bundle_topics=np.bincount(t_bundle, minlength=count).astype(np.int64),
        bundle_weight=weight,
        base_rate=ns_rate[namespace] * weight.astype(np.float64) / namespace_weight[namespace],
        producers=np.bincount(t_bundle, weights=t_producers, minlength=count).astype(np.int64),
        consumers=np.bincount(t_bundle, weights=t_consumers, minlength=count).astype(np.int64),
        fanout=fanout[namespace],
        msg_size=np.array([p.msg_size for p in plans], dtype=np.int64)[namespace],
        phase=np.array([p.phase for p in plans], dtype=np.float64)[namespace],
        candidates=candidates,
        fallback=np.mod(xxhash64(spec.seed, _SALT_FALLBACK, ids), spec.stable_brokers),
        topic_names=pa.array(topic_names, pa.string()),
        topic_bundle=t_bundle,
        topic_weight=t_weight,
        topic_producers=t_producers,
        topic_consumers=t_consumers,
        broker_names=pa.array([broker_name(b.index) for b in brokers], pa.string()),
        join_at=np.array([b.join_at for b in brokers], dtype=np.int64),
        leave_at=np.array([b.leave_at for b in brokers], dtype=np.int64),
    )


# -- rows -------------------------------------------------------------------------------------


def traffic_factor(
    spec: GenerateSpec, plan: StaticPlan, snapshots: range, bundle: Longs
) -> Doubles:
    """Diurnal wave x burst x noise of the bundles ``bundle`` at each snapshot index of
    ``snapshots``: shape ``(len(snapshots), len(bundle))``. The burst draws depend only on
    the bundle and its 20-snapshot window, so they are drawn once per window."""
    snapshot = np.arange(snapshots.start, snapshots.stop, dtype=np.int64)[:, None]
    time_ms = spec.start_ms + snapshot * spec.interval_ms
    day_fraction = np.mod(time_ms, _DAY_MS).astype(np.float64) / float(_DAY_MS)
    diurnal = 1.0 + _DIURNAL_AMPLITUDE * np.sin(2 * np.pi * (day_fraction - plan.phase[bundle]))
    seed = spec.seed
    windows = np.arange(
        snapshots.start // _BURST_WINDOW, (snapshots.stop - 1) // _BURST_WINDOW + 1, dtype=np.int64
    )[:, None]
    start = np.floor(uniform(seed, _SALT_START, bundle, windows) * 10)
    length = 3 + np.floor(uniform(seed, _SALT_LENGTH, bundle, windows) * 8)
    drawn = uniform(seed, _SALT_BURST, bundle, windows) < _BURST_PROBABILITY
    size = 2.0 + 8.0 * uniform(seed, _SALT_SIZE, bundle, windows)
    row = snapshot[:, 0] // _BURST_WINDOW - windows[0, 0]  # each snapshot's window
    within = np.mod(snapshot, _BURST_WINDOW)
    on = drawn[row] & (within >= start[row]) & (within < start[row] + length[row])
    burst = np.where(on, size[row], 1.0)
    noise = 0.9 + 0.2 * uniform(seed, _SALT_NOISE, bundle, snapshot)
    factor: Doubles = diurnal * burst * noise
    return factor


def owners(plan: StaticPlan, bundle: Longs, snapshot: Longs | int) -> Longs:
    """Index of the broker owning each bundle at each snapshot: its first candidate that is
    up, else its always-up fallback."""
    chosen = plan.fallback[bundle]
    for i in range(CANDIDATE_BROKERS - 1, -1, -1):
        candidate = plan.candidates[bundle, i]
        up = (snapshot >= plan.join_at[candidate]) & (snapshot < plan.leave_at[candidate])
        chosen = np.where(up, candidate, chosen)
    return chosen


def owner_grid(plan: StaticPlan, snapshots: range, bundle: Longs) -> Longs:
    """:func:`owners` of the bundles ``bundle`` at each snapshot of ``snapshots``, shape
    ``(len(snapshots), len(bundle))``. Owners change only when a broker joins or leaves, so
    they are computed once per run of snapshots with the same brokers up."""
    snapshot = np.arange(snapshots.start, snapshots.stop, dtype=np.int64)
    up = (snapshot[:, None] >= plan.join_at) & (snapshot[:, None] < plan.leave_at)
    starts = np.flatnonzero(np.r_[True, (up[1:] != up[:-1]).any(axis=1)])
    grid = np.empty((len(snapshot), len(bundle)), dtype=np.int64)
    for first, end in zip(starts, [*starts[1:], len(snapshot)], strict=True):
        grid[first:end] = owners(plan, bundle, int(snapshot[first]))
    return grid


def _dictionary(indexes: npt.ArrayLike, names: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.asarray(indexes, dtype=np.int32)), names)


def _constant(value: str, count: int) -> pa.DictionaryArray:
    return _dictionary(np.zeros(count, dtype=np.int32), pa.array([value], pa.string()))


def _snapshot_ms(spec: GenerateSpec, snapshot: Longs) -> Longs:
    return spec.start_ms + snapshot * spec.interval_ms


@dataclass(frozen=True, slots=True)
class BundleRows:
    """A block of ``bundles`` rows and, per row, the owner's index and the snapshot index
    (what broker sums need)."""

    batch: pa.RecordBatch
    snapshot: Longs
    owner: Longs


def bundle_rows(
    spec: GenerateSpec, plan: StaticPlan, snapshots: range, bundles: range
) -> BundleRows:
    """``bundles`` rows of the snapshot indexes ``snapshots`` and bundle ids ``bundles``,
    snapshot-major."""
    ids = np.arange(bundles.start, bundles.stop, dtype=np.int64)
    factor = traffic_factor(spec, plan, snapshots, ids).ravel()
    snapshot = np.repeat(np.arange(snapshots.start, snapshots.stop, dtype=np.int64), len(ids))
    bundle = np.tile(ids, len(snapshots))
    rate_in = _binary_fraction(plan.base_rate[bundle] * factor)
    rate_out = _binary_fraction(rate_in * plan.fanout[bundle])
    size = plan.msg_size[bundle].astype(np.float64)
    owner = owner_grid(plan, snapshots, ids).ravel()
    columns = [
        pa.array(_snapshot_ms(spec, snapshot)),
        _constant(spec.cluster, len(bundle)),
        _dictionary(owner, plan.broker_names),
        _dictionary(bundle, plan.bundle_names),
        _dictionary(plan.bundle_namespace[bundle], plan.namespace_names),
        pa.array(rate_in),
        pa.array(rate_out),
        pa.array(_whole(rate_in * size)),
        pa.array(_whole(rate_out * size)),
        pa.array(plan.bundle_topics[bundle]),
        pa.array(plan.producers[bundle]),
        pa.array(plan.consumers[bundle]),
        pa.array(np.minimum(np.floor(rate_in * size * 30), 512 * MIB).astype(np.int64)),
    ]
    batch = pa.RecordBatch.from_arrays(columns, names=list(BUNDLES.column_names))
    return BundleRows(batch, snapshot, owner)


_SUMMED = {
    "msg_rate_in": "msg_rate_in",
    "msg_rate_out": "msg_rate_out",
    "msg_throughput_in": "msg_throughput_in",
    "msg_throughput_out": "msg_throughput_out",
    "num_topics": "topics",
    "num_consumers": "consumer_count",
    "num_producers": "producer_count",
}


class BrokerTotals:
    """Sums of bundle rows per broker and snapshot over the snapshot indexes ``snapshots``,
    added block by block (sums of 2**-10 multiples are exact, so in any order)."""

    def __init__(self, snapshots: range, brokers: int) -> None:
        self.snapshots = snapshots
        self.brokers = brokers
        cells = len(snapshots) * brokers
        self.sums = {name: np.zeros(cells) for name in _SUMMED}
        self.bundles = np.zeros(cells, dtype=np.int64)

    def add(self, rows: BundleRows) -> None:
        cells = len(self.bundles)
        cell = (rows.snapshot - self.snapshots.start) * self.brokers + rows.owner
        for name, source in _SUMMED.items():
            values = rows.batch.column(source).to_numpy()
            self.sums[name] += np.bincount(cell, weights=values, minlength=cells)
        self.bundles += np.bincount(cell, minlength=cells)

    def rows(self, spec: GenerateSpec, plan: StaticPlan) -> pa.RecordBatch:
        """``brokers`` rows: every broker up in each snapshot, with its sums; host usage
        follows the load (CPU from the message rate against the capacity with a 5 % idle
        floor, bandwidth from throughput, direct memory from inbound bytes)."""
        first, end = self.snapshots.start, self.snapshots.stop
        snapshot = np.repeat(np.arange(first, end, dtype=np.int64), self.brokers)
        broker = np.tile(np.arange(self.brokers, dtype=np.int64), end - first)
        up = (snapshot >= plan.join_at[broker]) & (snapshot < plan.leave_at[broker])
        snapshot, broker = snapshot[up], broker[up]
        sums = {k: v[up] for k, v in self.sums.items()}
        load = (sums["msg_rate_in"] + sums["msg_rate_out"]) / cpu_capacity_msg_rate(spec)
        cpu = np.minimum(_CPU_LIMIT, _CPU_LIMIT * (0.05 + 0.95 * load))
        heap = 1024.0 + 2048.0 * uniform(spec.seed, _SALT_HEAP, broker, snapshot)
        direct = np.minimum(_DIRECT_MIB, 256.0 + sums["msg_throughput_in"] / float(MIB) * 4)
        rows = len(snapshot)
        time_ms = _snapshot_ms(spec, snapshot)
        columns = {
            "snapshot_ms": pa.array(time_ms),
            "cluster": _constant(spec.cluster, rows),
            "broker": _dictionary(broker, plan.broker_names),
            "cpu_usage": pa.array(_binary_fraction(cpu)),
            "cpu_limit": pa.array(np.full(rows, _CPU_LIMIT)),
            "memory_usage": pa.array(_whole(heap)),
            "memory_limit": pa.array(np.full(rows, _HEAP_MIB)),
            "direct_memory_usage": pa.array(_whole(direct)),
            "direct_memory_limit": pa.array(np.full(rows, _DIRECT_MIB)),
            "bandwidth_in_usage": pa.array(_binary_fraction(sums["msg_throughput_in"] * 8 / 1024)),
            "bandwidth_in_limit": pa.array(np.full(rows, _NIC_KBITS)),
            "bandwidth_out_usage": pa.array(
                _binary_fraction(sums["msg_throughput_out"] * 8 / 1024)
            ),
            "bandwidth_out_limit": pa.array(np.full(rows, _NIC_KBITS)),
            **{k: pa.array(sums[k]) for k in list(_SUMMED)[:4]},
            **{k: pa.array(sums[k].astype(np.int64)) for k in list(_SUMMED)[4:]},
            "num_bundles": pa.array(self.bundles[up]),
            "last_update_ms": pa.array(time_ms),
        }
        return pa.RecordBatch.from_arrays(
            [columns[c] for c in BROKERS.column_names], names=list(BROKERS.column_names)
        )


def topic_rows(spec: GenerateSpec, plan: StaticPlan, snapshot_index: int) -> pa.RecordBatch:
    """``topics`` rows of one snapshot: each topic carries its weight's share of its
    bundle's traffic."""
    bundle = plan.topic_bundle
    snapshot = np.full(len(bundle), snapshot_index, dtype=np.int64)
    factor = traffic_factor(spec, plan, range(snapshot_index, snapshot_index + 1), bundle)[0]
    bundle_rate = plan.base_rate[bundle] * factor
    share = plan.topic_weight.astype(np.float64) / plan.bundle_weight[bundle].astype(np.float64)
    rate_in = _binary_fraction(bundle_rate * share)
    rate_out = _binary_fraction(rate_in * plan.fanout[bundle])
    size = plan.msg_size[bundle].astype(np.float64)
    rows = len(bundle)
    columns = [
        pa.array(_snapshot_ms(spec, snapshot)),
        _constant(spec.cluster, rows),
        _dictionary(owners(plan, bundle, snapshot), plan.broker_names),
        _dictionary(bundle, plan.bundle_names),
        _dictionary(plan.bundle_namespace[bundle], plan.namespace_names),
        plan.topic_names,
        pa.array(rate_in),
        pa.array(rate_out),
        pa.array(_whole(rate_in * size)),
        pa.array(_whole(rate_out * size)),
        pa.array(plan.topic_producers),
        pa.array(plan.topic_consumers),
    ]
    return pa.RecordBatch.from_arrays(columns, names=list(TOPICS.column_names))


def cpu_capacity_msg_rate(spec: GenerateSpec) -> float:
    """Messages per second (in + out) a broker handles at full CPU: twice the mean broker
    load, so an evenly loaded cluster sits near half its CPU."""
    plans = namespace_plan(spec)
    total = sum(p.msg_rate * (1 + p.fanout) for p in plans)
    return 2.0 * total / spec.brokers


def _blocks(spec: GenerateSpec, snapshots: range, max_rows: int) -> Iterator[tuple[range, range]]:
    """``(snapshots, bundles)`` blocks of at most ``max_rows`` rows (at least one row) that
    cover ``snapshots`` x every bundle, snapshot-major, none spanning an hour (so each
    block goes whole into one partition's file)."""
    per_block = max(1, max_rows // spec.bundles)
    bundle_step = min(spec.bundles, max(1, max_rows))
    hour_ms = 3_600_000
    first = snapshots.start
    while first < snapshots.stop:
        hour = (spec.start_ms + first * spec.interval_ms) // hour_ms
        end = first + 1
        while (
            end < snapshots.stop
            and end - first < per_block
            and (spec.start_ms + end * spec.interval_ms) // hour_ms == hour
        ):
            end += 1
        for lower in range(0, spec.bundles, bundle_step):
            yield range(first, end), range(lower, min(lower + bundle_step, spec.bundles))
        first = end


def history_rows(
    spec: GenerateSpec, plan: StaticPlan, snapshots: range, max_rows: int = 1_000_000
) -> Iterator[tuple[Table, pa.RecordBatch]]:
    """Every history row of the snapshot indexes ``snapshots``: ``bundles`` rows in blocks
    of at most ``max_rows`` rows, then the ``brokers`` rows summing them, then the
    ``topics`` rows of the topic snapshots among them. Memory: a block, and the broker sums
    of the range."""
    totals = BrokerTotals(snapshots, len(plan.join_at))
    for block_snapshots, block_bundles in _blocks(spec, snapshots, max_rows):
        rows = bundle_rows(spec, plan, block_snapshots, block_bundles)
        totals.add(rows)
        yield BUNDLES, rows.batch
    yield BROKERS, totals.rows(spec, plan)
    for snapshot in spec.topic_snapshots:
        if snapshot in snapshots:
            yield TOPICS, topic_rows(spec, plan, snapshot)
