"""The pipeline's jobs as single-process pandas/numpy programs: the benchmark's baseline.

Each function does what the Spark job does, the way one would write it without Spark: read
the needed columns with pyarrow into numpy/pandas, compute vectorised, write Parquet.
``time_averages`` runs the same recurrence in the same order, so its results are compared
with Spark's for equality; ``generate`` follows the same synthetic model with numpy hashes
(so it writes an equally large, statistically equal, but not identical history), one hour at
a time, as a sensible single-process generator would.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ballast.model.bundles import BundleRange
from ballast.model.config import Settings, SplitConfig
from ballast.model.config.components import resource_weights
from ballast.model.loaddata import AVERAGE_ROUNDING_SLACK
from ballast.model.split_algorithms import SplitRequest, TopicLoad, split_algorithm
from ballast.pipeline.report_render import ClusterReport, render_report
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS, Table

KEYS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
DEFAULTS = {
    "msg_rate_in": 50.0,
    "msg_rate_out": 50.0,
    "msg_throughput_in": 50000.0,
    "msg_throughput_out": 50000.0,
}


def read(history: Path, table: Table, columns: list[str], **filters: Any) -> pa.Table:
    """Columns of a history table; strings as dictionaries (few distinct values each), but
    for topic names, which are nearly all distinct."""
    strings = [c for c in columns if table.column(c).type.value == "string" and c != "topic"]
    file_format = ds.ParquetFileFormat(read_options={"dictionary_columns": strings})
    dataset = ds.dataset(history / table.name, format=file_format, partitioning="hive")
    condition = None
    if "snapshot_ms" in filters:
        condition = ds.field("snapshot_ms") == filters["snapshot_ms"]
    if "bundles" in filters:
        wanted = ds.field("bundle").isin(sorted(filters["bundles"]))
        condition = wanted if condition is None else condition & wanted
    return dataset.to_table(columns=columns, filter=condition)


def codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer codes ordered like the strings (int32), and the sorted distinct strings."""
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    column = column.unify_dictionaries()
    names = column.chunk(0).dictionary.to_pylist() if column.num_chunks else []
    order = np.argsort(np.array(names, dtype=object))
    rank = np.empty(len(names), dtype=np.int32)
    rank[order] = np.arange(len(names), dtype=np.int32)
    indices = [c.indices.to_numpy(zero_copy_only=False) for c in column.chunks]
    joined = np.concatenate(indices) if indices else np.empty(0, dtype=np.int32)
    return rank[joined], [names[i] for i in order]


# -- time averages ----------------------------------------------------------------------------


def bundle_averages(history: Path, only: Collection[str] | None = None) -> pd.DataFrame:
    """Every bundle's short/long averages (or only those of the bundles named in ``only``),
    by the leader's recurrence, in sample order. Columns are freed as they are used (about
    80 bytes per sample at the peak)."""
    columns = ["snapshot_ms", "cluster", "broker", "bundle", *KEYS, "topics"]
    table = read(history, BUNDLES, columns, **({} if only is None else {"bundles": only}))
    cluster_codes, cluster_names = codes(table.column("cluster"))
    bundle_codes, bundle_names = codes(table.column("bundle"))
    key = cluster_codes.astype(np.int64) * len(bundle_names) + bundle_codes
    del cluster_codes, bundle_codes
    broker_codes, _ = codes(table.column("broker"))
    snapshot = table.column("snapshot_ms").to_numpy()
    order = np.lexsort((broker_codes, snapshot, key))
    del broker_codes
    key = key[order]
    snapshot = snapshot[order]
    pending = {name: table.column(name) for name in (*KEYS, "topics")}
    del table
    values: dict[str, np.ndarray] = {}
    for name in (*KEYS, "topics"):
        values[name] = pending.pop(name).to_numpy()[order]
    del order
    boundary = np.empty(len(key), dtype=bool)
    boundary[:1] = True
    np.not_equal(key[1:], key[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    del boundary
    last = np.r_[starts[1:], len(key)] - 1
    group = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(np.r_[starts, len(key)]))
    sample = np.arange(len(key), dtype=np.int64) - starts[group]
    by_sample = np.argsort(sample, kind="stable")
    bounds = np.searchsorted(sample[by_sample], np.arange(sample.max() + 2))
    del sample
    groups = len(starts)
    result: dict[str, Any] = {}
    for term, window in (("short", 10), ("long", 1000)):
        state = {k: np.full(groups, DEFAULTS[k]) for k in KEYS}
        count = np.zeros(groups, dtype=np.int64)
        for s in range(len(bounds) - 1):
            rows = by_sample[bounds[s] : bounds[s + 1]]
            g = group[rows]
            n = np.minimum(count[g] + 1, window)
            for k in KEYS:
                state[k][g] = ((n - 1) * state[k][g] + values[k][rows]) / n
            count[g] = n
        result[f"{term}_num_samples"] = count
        result[f"{term}_max_samples"] = np.full(groups, window)
        for k in KEYS:
            result[f"{term}_{k}"] = state[k]
    first_key = key[starts]
    frame = pd.DataFrame(
        {
            "snapshot_ms": snapshot[last],
            "cluster": [cluster_names[k // len(bundle_names)] for k in first_key],
            "bundle": [bundle_names[k % len(bundle_names)] for k in first_key],
            **result,
            "topics": values["topics"][last],
        }
    )
    frame.insert(3, "namespace", frame["bundle"].str.rpartition("/")[0])
    return frame


def broker_averages(history: Path, averages: pd.DataFrame) -> pd.DataFrame:
    brokers = read(history, BROKERS, ["snapshot_ms", "cluster", "broker"]).to_pandas()
    latest = brokers.groupby("cluster")["snapshot_ms"].transform("max")
    live = brokers[brokers["snapshot_ms"] == latest]
    rows: list[dict[str, Any]] = []
    terms = [f"{t}_{k}" for t in ("short", "long") for k in KEYS]
    indexed = averages.set_index(["cluster", "bundle"])[terms]
    for (cluster, snapshot_ms), part in live.groupby(["cluster", "snapshot_ms"]):
        owned = read(history, BUNDLES, ["cluster", "broker", "bundle"], snapshot_ms=snapshot_ms)
        owned_frame = owned.to_pandas()
        owned_frame = owned_frame[owned_frame["cluster"] == cluster]
        by_broker = owned_frame.sort_values("bundle").groupby("broker")["bundle"]
        for broker in sorted(part["broker"]):
            names = list(by_broker.get_group(broker)) if broker in by_broker.groups else []
            sums = [0.0] * len(terms)
            for name in names:
                values = indexed.loc[(cluster, name)].to_numpy()
                sums = [a + float(b) for a, b in zip(sums, values, strict=True)]
            rows.append(
                {
                    "snapshot_ms": snapshot_ms,
                    "cluster": cluster,
                    "broker": broker,
                    "num_bundles": len(names),
                    **dict(zip(terms, sums, strict=True)),
                }
            )
    return pd.DataFrame(rows)


def time_averages(history: Path, out: Path, settings: Settings) -> dict[str, Any]:
    del settings
    averages = bundle_averages(history)
    out.mkdir(parents=True, exist_ok=True)
    averages.to_parquet(out / "bundle_averages.parquet", index=False)
    brokers = broker_averages(history, averages)
    brokers.to_parquet(out / "broker_averages.parquet", index=False)
    return {"bundles": len(averages), "brokers": len(brokers)}


# -- split plan -------------------------------------------------------------------------------


def busy_bundles(history: Path, config: SplitConfig) -> set[str]:
    """Bundles with a sample whose ceiling (:func:`ballast.model.loaddata.average_ceiling`)
    is over half the rate or throughput limit in either direction; no other bundle can
    average over a limit, so only these and the bundles over the topic or session limit are
    averaged, as the Spark job does."""
    table = read(history, BUNDLES, ["bundle", *KEYS])
    halves = {
        "msg_rate_in": config.max_msg_rate * 0.5,
        "msg_rate_out": config.max_msg_rate * 0.5,
        "msg_throughput_in": config.max_bandwidth_bytes * 0.5,
        "msg_throughput_out": config.max_bandwidth_bytes * 0.5,
    }
    over = np.zeros(table.num_rows, dtype=bool)
    for key, half in halves.items():
        values = table.column(key).to_numpy()
        over |= values + np.abs(values) * AVERAGE_ROUNDING_SLACK > half
    return set(table.column("bundle").filter(pa.array(over)).to_pylist())


def split_plan(history: Path, out: Path, settings: Settings) -> dict[str, Any]:
    config = SplitConfig.from_settings(settings)
    brokers = read(history, BROKERS, ["snapshot_ms", "cluster", "broker"]).to_pandas()
    latest_ms = brokers.groupby("cluster")["snapshot_ms"].max()
    busy = busy_bundles(history, config)
    currents: dict[str, tuple[int, pd.DataFrame]] = {}
    for cluster, snapshot_ms in latest_ms.items():
        live = brokers[(brokers["cluster"] == cluster) & (brokers["snapshot_ms"] == snapshot_ms)]
        if len(live) <= 1:
            continue
        current = read(
            history,
            BUNDLES,
            [
                "cluster",
                "broker",
                "bundle",
                "namespace",
                "topics",
                "producer_count",
                "consumer_count",
            ],
            snapshot_ms=snapshot_ms,
        ).to_pandas()
        current = current[(current["cluster"] == cluster) & current["broker"].isin(live["broker"])]
        current["sessions"] = current["producer_count"] + current["consumer_count"]
        currents[str(cluster)] = (int(snapshot_ms), current)
    needed: set[str] = set()
    for _, current in currents.values():
        crowded = current["topics"] > config.max_topics
        if config.max_sessions > 0:
            crowded |= current["sessions"] > config.max_sessions
        eligible = (current["topics"] >= 2) & (crowded | current["bundle"].isin(busy))
        needed.update(current.loc[eligible, "bundle"])
    averages = bundle_averages(history, only=needed)
    plans: list[dict[str, Any]] = []
    for cluster, (snapshot_ms, current) in currents.items():
        sizes = current.groupby("namespace")["bundle"].nunique()
        long = averages[averages["cluster"] == cluster].set_index("bundle")
        rate = (long["long_msg_rate_in"] + long["long_msg_rate_out"]).reindex(current["bundle"])
        size = (long["long_msg_throughput_in"] + long["long_msg_throughput_out"]).reindex(
            current["bundle"]
        )
        current["long_msg_rate"] = rate.fillna(0.0).to_numpy()
        current["long_msg_throughput"] = size.fillna(0.0).to_numpy()
        above = (
            (current["topics"] > config.max_topics)
            | (current["long_msg_rate"] > config.max_msg_rate)
            | (current["long_msg_throughput"] > config.max_bandwidth_bytes)
        )
        if config.max_sessions > 0:
            above |= current["sessions"] > config.max_sessions
        chosen = current[(current["topics"] >= 2) & above].sort_values(
            ["namespace", "broker", "bundle"]
        )
        walk = chosen.groupby("namespace").cumcount() + 1
        room = config.max_bundles - chosen["namespace"].map(sizes).astype(np.int64)
        chosen = chosen[walk <= room]
        # The newest topic snapshot at or before the plan's, from two narrow columns; then
        # only its rows of the chosen bundles (filtered as they are read).
        times = read(history, TOPICS, ["snapshot_ms", "cluster"])
        usable = times.filter(
            pc.and_(
                pc.equal(times.column("cluster"), cluster),
                pc.less_equal(times.column("snapshot_ms"), snapshot_ms),
            )
        )
        by_bundle = None
        if usable.num_rows and len(chosen):
            newest = pc.max(usable.column("snapshot_ms")).as_py()
            topics = read(
                history,
                TOPICS,
                ["cluster", "bundle", "topic", *KEYS],
                snapshot_ms=newest,
                bundles=chosen["bundle"].tolist(),
            )
            topics = topics.filter(pc.equal(topics.column("cluster"), cluster))
            by_bundle = topics.to_pandas().groupby("bundle") if topics.num_rows else None
        algorithm = split_algorithm(config.default_algorithm)
        for row in chosen.itertuples(index=False):
            loads = []
            if by_bundle is not None and row.bundle in by_bundle.groups:
                part = by_bundle.get_group(row.bundle)
                loads = [
                    TopicLoad(t, a, b, c, d)
                    for t, a, b, c, d in zip(part["topic"], *(part[k] for k in KEYS), strict=True)
                ]
            loads.sort(key=lambda t: (t.hash, t.name))
            found = algorithm(
                SplitRequest(
                    bundle=BundleRange.parse(row.bundle.rpartition("/")[2]),
                    topics=loads,
                    thresholds=config.flow_or_qps,
                )
            )
            plans.append(
                {
                    "cluster": cluster,
                    "bundle": row.bundle,
                    "broker": row.broker,
                    "split_points": list(found.points),
                }
            )
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(plans).to_parquet(out / "split_plan.parquet", index=False)
    return {"selected": len(plans), "with_cut_points": sum(1 for p in plans if p["split_points"])}


# -- report -----------------------------------------------------------------------------------


def _percent(usage: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Pulsar's float32 percentUsage (positive limits)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        proportion = usage.astype(np.float32) / limit.astype(np.float32)
    proportion = np.where(limit > 0, proportion, np.float32(0.0)).astype(np.float32)
    return (proportion * np.float32(100.0)).astype(np.float32).astype(np.float64)


def report(history: Path, out: Path, settings: Settings) -> dict[str, Any]:
    weights = resource_weights(settings)
    brokers = read(
        history,
        BROKERS,
        ["snapshot_ms", "cluster", "broker", "msg_rate_in", "msg_rate_out"]
        + [
            f"{r}_{p}"
            for r in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")
            for p in ("usage", "limit")
        ],
    ).to_pandas()
    terms = [
        _percent(brokers[f"{r}_usage"].to_numpy(), brokers[f"{r}_limit"].to_numpy()) * w
        for r, w in (
            ("cpu", weights.cpu),
            ("memory", weights.memory),
            ("direct_memory", weights.direct_memory),
            ("bandwidth_in", weights.bandwidth_in),
            ("bandwidth_out", weights.bandwidth_out),
        )
    ]
    brokers["usage"] = np.fmax.reduce(np.vstack(terms), axis=0) / 100.0
    brokers["rate"] = brokers["msg_rate_in"] + brokers["msg_rate_out"]
    per_time = brokers.groupby(["cluster", "snapshot_ms"])
    over_time = per_time["usage"].quantile([0.5, 0.9, 0.99]).unstack()
    over_time.columns = ["usage_p50", "usage_p90", "usage_p99"]
    over_time["brokers"] = per_time.size()
    over_time["usage_max"] = per_time["usage"].max()
    over_time["usage_mean"] = per_time["usage"].mean()
    rate_mean = per_time["rate"].mean()
    over_time["usage_spread"] = over_time["usage_max"] - over_time["usage_mean"]
    over_time["rate_peak_to_mean"] = per_time["rate"].max() / rate_mean
    over_time["rate_cv"] = per_time["rate"].std(ddof=0) / rate_mean
    over_time = over_time.reset_index()
    per_broker = brokers.groupby(["cluster", "broker"])
    broker_table = per_broker["usage"].quantile([0.5, 0.95, 0.99]).unstack()
    broker_table.columns = ["usage_p50", "usage_p95", "usage_p99"]
    rates = per_broker["rate"].quantile([0.5, 0.95, 0.99]).unstack()
    broker_table[["msg_rate_p50", "msg_rate_p95", "msg_rate_p99"]] = rates.to_numpy()
    broker_table["snapshots"] = per_broker.size()
    broker_table["usage_max"] = per_broker["usage"].max()
    broker_table["msg_rate_max"] = per_broker["rate"].max()
    broker_table = broker_table.reset_index()
    bundles = read(
        history, BUNDLES, ["snapshot_ms", "cluster", "namespace", "msg_rate_in", "msg_rate_out"]
    )
    cluster_codes, cluster_names = codes(bundles.column("cluster"))
    namespace_codes, namespace_names = codes(bundles.column("namespace"))
    snapshot_codes, snapshot_values = pd.factorize(bundles.column("snapshot_ms").to_numpy())
    rate = bundles.column("msg_rate_in").to_numpy() + bundles.column("msg_rate_out").to_numpy()
    del bundles
    clusters, spaces = len(cluster_names), len(namespace_names)
    cell = (snapshot_codes.astype(np.int64) * clusters + cluster_codes) * spaces + namespace_codes
    del snapshot_codes, cluster_codes, namespace_codes
    cells = len(snapshot_values) * clusters * spaces
    total = np.bincount(cell, weights=rate, minlength=cells)
    count = np.bincount(cell, minlength=cells)
    peak = np.zeros(cells)
    np.maximum.at(peak, cell, rate)
    del cell, rate
    present = np.flatnonzero(count)
    series = pd.DataFrame(
        {
            "cluster": [cluster_names[(c // spaces) % clusters] for c in present],
            "snapshot_ms": snapshot_values[present // (clusters * spaces)],
            "namespace": [namespace_names[c % spaces] for c in present],
            "msg_rate": total[present],
            "bundles": count[present],
        }
    )
    series["bundle_peak_to_mean"] = peak[present] / (series["msg_rate"] / series["bundles"])
    per_namespace = series.groupby(["cluster", "namespace"])
    namespace_table = per_namespace["msg_rate"].quantile([0.5, 0.95, 0.99]).unstack()
    namespace_table.columns = ["msg_rate_p50", "msg_rate_p95", "msg_rate_p99"]
    namespace_table["msg_rate_max"] = per_namespace["msg_rate"].max()
    namespace_table["msg_rate_mean"] = per_namespace["msg_rate"].mean()
    namespace_table["bundles_max"] = per_namespace["bundles"].max()
    namespace_table["bundle_peak_to_mean_p95"] = per_namespace["bundle_peak_to_mean"].quantile(0.95)
    namespace_table = namespace_table.reset_index()
    reports = []
    for cluster in sorted(over_time["cluster"].unique()):
        mine = namespace_table[namespace_table["cluster"] == cluster]
        top = mine.sort_values(["msg_rate_mean", "namespace"], ascending=[False, True]).head(8)
        reports.append(
            ClusterReport(
                cluster=str(cluster),
                over_time=over_time[over_time["cluster"] == cluster],
                brokers=broker_table[broker_table["cluster"] == cluster],
                namespaces=mine,
                top_series=series[
                    (series["cluster"] == cluster) & series["namespace"].isin(top["namespace"])
                ],
            )
        )
    page, images = render_report(reports, "Ballast load report")
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").write_text(page)
    for name, data in images.items():
        (out / name).write_bytes(data)
    over_time.to_csv(out / "broker_load_over_time.csv", index=False)
    broker_table.to_csv(out / "broker_percentiles.csv", index=False)
    namespace_table.to_csv(out / "namespace_percentiles.csv", index=False)
    return {
        "snapshots": len(over_time),
        "brokers": len(broker_table),
        "namespaces": len(namespace_table),
    }
