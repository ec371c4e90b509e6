"""The two passes over the bundle history that a split plan needs, as functions of a batch of
``bundles`` rows (pyarrow), for Spark tasks that read the history files themselves
(:func:`ballast.pipeline.taskio.read_in_tasks`):

- :func:`busy_keys_of`: the bundles with a sample over half a rate or throughput limit (the
  rows :func:`ballast.pipeline.transforms.split.busy_bundles` keeps), distinct;
- :func:`samples_of`: the rows of given bundles, with the columns the time-average fold reads;
  :func:`sample_lists_of`: the same, as one list per bundle
  (:func:`ballast.pipeline.transforms.averages.merged_sample_lists` joins a bundle's lists).

Both give exactly what the Spark SQL of :mod:`~ballast.pipeline.transforms.split` gives on
the same rows, comparisons included: Spark orders NaN above every number, so a NaN sample
counts as over a limit there and here; a null one does not.

String columns may be plain or dictionary-encoded (for a dictionary the test runs once per
distinct value). The job reads bundle names as a dictionary from files where they repeat, and
plain where they are nearly all distinct (:func:`ballast.pipeline.taskio.stores_repeats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ballast.model.config import SplitConfig
from ballast.model.loaddata import AVERAGE_ROUNDING_SLACK
from ballast.pipeline.schema import BUNDLES
from ballast.pipeline.transforms.averages import SAMPLE_COLUMNS, SAMPLE_FIELDS

RATES = ("msg_rate_in", "msg_rate_out")
SIZES = ("msg_throughput_in", "msg_throughput_out")
BUSY_INPUT_COLUMNS = ("cluster", "bundle", *RATES, *SIZES)
BUSY_SCHEMA = "cluster string, bundle string"
_SAMPLE_ARROW = pa.schema([(c, BUNDLES.column(c).type.arrow()) for c in SAMPLE_COLUMNS])


def half_limits(config: SplitConfig) -> tuple[float, float]:
    """Half the message-rate limit (msg/s) and half the throughput limit (bytes/s)."""
    return config.max_msg_rate * 0.5, config.max_bandwidth_bytes * 0.5


def _over(column: pa.ChunkedArray, half: float) -> npt.NDArray[np.bool_]:
    """Per row: the value's :func:`~ballast.model.loaddata.average_ceiling` > ``half``, as
    Spark compares doubles (NaN over everything, null never)."""
    values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):
        ceiling = values + np.abs(values) * AVERAGE_ROUNDING_SLACK
        over: npt.NDArray[np.bool_] = (ceiling > half) | np.isnan(values)
    if column.null_count:
        over &= column.is_valid().to_numpy(zero_copy_only=False)
    return over


def _plain(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    return column.cast(kind) if column.type != kind else column


def busy_keys_of(rows: pa.Table, rate_half: float, size_half: float) -> pa.Table:
    """``cluster, bundle`` (plain strings), once each, of the rows of ``rows``
    (``BUSY_INPUT_COLUMNS``) with a rate over ``rate_half`` or a throughput over
    ``size_half`` in either direction; rows without a cluster or bundle are left out."""
    over = np.zeros(rows.num_rows, dtype=np.bool_)
    for name in RATES:
        over |= _over(rows.column(name), rate_half)
    for name in SIZES:
        over |= _over(rows.column(name), size_half)
    keys = rows.select(["cluster", "bundle"]).filter(pa.array(over))
    keys = keys.filter(pc.and_(pc.is_valid(keys.column(0)), pc.is_valid(keys.column(1))))
    plain = pa.table(
        {
            "cluster": _plain(keys.column("cluster"), pa.string()),
            "bundle": _plain(keys.column("bundle"), pa.string()),
        }
    )
    return plain.group_by(["cluster", "bundle"]).aggregate([])


def _member(column: pa.ChunkedArray, names: pa.Array) -> npt.NDArray[np.bool_]:
    """Per row: whether the value is one of ``names`` (false for null)."""
    parts = []
    for chunk in column.chunks:
        if isinstance(chunk, pa.DictionaryArray):
            known = pc.is_in(chunk.dictionary, value_set=names).to_numpy(zero_copy_only=False)
            hit = known[chunk.indices.fill_null(0).to_numpy(zero_copy_only=False)]
            if chunk.null_count:
                hit &= chunk.is_valid().to_numpy(zero_copy_only=False)
        else:
            hit = pc.fill_null(pc.is_in(chunk, value_set=names), False).to_numpy(
                zero_copy_only=False
            )
        parts.append(hit.astype(np.bool_, copy=False))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.bool_)


def samples_of(rows: pa.Table, bundles: Mapping[str, pa.Array]) -> pa.Table:
    """The rows of ``rows`` (``SAMPLE_COLUMNS``) whose ``bundle`` is one of
    ``bundles[cluster]``, in ``SAMPLE_COLUMNS`` with plain strings."""
    wanted = np.zeros(rows.num_rows, dtype=np.bool_)
    for cluster, names in bundles.items():
        here = _member(rows.column("cluster"), pa.array([cluster], pa.string()))
        if here.any():
            wanted |= here & _member(rows.column("bundle"), names)
    chosen = rows.select(list(SAMPLE_COLUMNS)).filter(pa.array(wanted))
    return pa.table(
        [_plain(chosen.column(f.name), f.type) for f in _SAMPLE_ARROW], schema=_SAMPLE_ARROW
    )


def sample_lists_of(rows: pa.Table, bundles: Mapping[str, pa.Array]) -> pa.Table:
    """:func:`samples_of` as one row per bundle: ``cluster, bundle, namespace`` and
    ``samples``, a list of its rows' ``SAMPLE_FIELDS`` in no particular order
    (``SAMPLE_LIST_SCHEMA``). A list per bundle and file reaches the JVM instead of a row
    per sample (a twentieth of the rows for it to take in and group on a day at 100,000
    bundles per snapshot, where a file holds twenty snapshots)."""
    chosen = samples_of(rows, bundles)
    # Sorted runs cut into lists by hand: pyarrow's group_by has no list aggregate of structs.
    order = pc.sort_indices(chosen, sort_keys=[("cluster", "ascending"), ("bundle", "ascending")])
    chosen = chosen.take(order)
    count = chosen.num_rows
    starts = np.zeros(0, dtype=np.int64)
    if count:
        cluster = chosen.column("cluster").combine_chunks()
        bundle = chosen.column("bundle").combine_chunks()
        change = pc.or_(
            pc.not_equal(cluster.slice(1), cluster.slice(0, count - 1)),
            pc.not_equal(bundle.slice(1), bundle.slice(0, count - 1)),
        ).to_numpy(zero_copy_only=False)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)
    offsets = pa.array(np.append(starts, count).astype(np.int32))
    fields = [chosen.column(name).combine_chunks() for name in SAMPLE_FIELDS]
    samples = pa.ListArray.from_arrays(
        offsets, pa.StructArray.from_arrays(fields, names=list(SAMPLE_FIELDS))
    )
    first = pa.array(starts)
    return pa.table(
        {
            "cluster": chosen.column("cluster").take(first),
            "bundle": chosen.column("bundle").take(first),
            "namespace": chosen.column("namespace").take(first),
            "samples": samples,
        }
    )


def by_cluster(keys: Sequence[tuple[str, str]]) -> dict[str, pa.Array]:
    """``(cluster, bundle)`` pairs as :func:`samples_of` takes them."""
    grouped: dict[str, list[str]] = {}
    for cluster, bundle in keys:
        grouped.setdefault(cluster, []).append(bundle)
    return {cluster: pa.array(sorted(names), pa.string()) for cluster, names in grouped.items()}
