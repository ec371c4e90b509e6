"""The leader's bundle data held column-wise: the same values as a ``dict[str, BundleData]``
updated with :func:`~ballast.model.loaddata.averages.add_report_samples`, bit for bit, with the
averages of all bundles updated by array operations instead of one object per bundle per
update (the leader folds every report into tens of thousands of bundles, again and again).

``BundleData`` objects are made only when read, through a :class:`BundleAverageView`: a
read-only ``Mapping[str, BundleData]`` that stays as it was when taken while the table moves
on (the snapshots the balancing strategies read).

Concurrency contract: a table and its views belong to one thread (the controller's event
task); a view is immutable, but iterate it within one step of that thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ballast.model.loaddata.averages import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BundleData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from ballast.model.loaddata.stats import DEFAULT_BUNDLE_STATS, NamespaceBundleStats

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

# Columns of the value array: each term's throughputs and rates, in and out, in the order of
# TimeAverageBrokerData's fields (short term first).
_SHORT = 0  # first value column of the short term
_LONG = 4  # first value column of the long term
_T_IN, _T_OUT, _R_IN, _R_OUT = 0, 1, 2, 3  # offsets within a term
_VALUE_COLUMNS = 8
# Columns of the count array.
_SHORT_MAX, _SHORT_N, _LONG_MAX, _LONG_N, _TOPICS = 0, 1, 2, 3, 4
_COUNT_COLUMNS = 5

_MIN_CAPACITY = 1024


def _row_values(data: BundleData) -> tuple[list[float], list[int]]:
    short, long = data.short_term_data, data.long_term_data
    values = [
        short.msg_throughput_in,
        short.msg_throughput_out,
        short.msg_rate_in,
        short.msg_rate_out,
        long.msg_throughput_in,
        long.msg_throughput_out,
        long.msg_rate_in,
        long.msg_rate_out,
    ]
    counts = [
        short.max_samples,
        short.num_samples,
        long.max_samples,
        long.num_samples,
        data.topics,
    ]
    return values, counts


def _term(
    values: Sequence[float], counts: Sequence[int], first: int, max_column: int, n_column: int
) -> TimeAverageMessageData:
    return TimeAverageMessageData(
        max_samples=counts[max_column],
        num_samples=counts[n_column],
        msg_throughput_in=values[first + _T_IN],
        msg_throughput_out=values[first + _T_OUT],
        msg_rate_in=values[first + _R_IN],
        msg_rate_out=values[first + _R_OUT],
    )


def _bundle_data(values: Sequence[float], counts: Sequence[int]) -> BundleData:
    return BundleData(
        short_term_data=_term(values, counts, _SHORT, _SHORT_MAX, _SHORT_N),
        long_term_data=_term(values, counts, _LONG, _LONG_MAX, _LONG_N),
        topics=counts[_TOPICS],
    )


_NEW_VALUES, _NEW_COUNTS = _row_values(
    BundleData.new_default(NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES, DEFAULT_BUNDLE_STATS)
)


class _Samples:
    """One report's stats as arrays (kept while the report is the same object: a broker
    writes a new report far less often than the leader folds them)."""

    __slots__ = ("names", "report", "rows", "rows_of", "topics", "values")

    def __init__(self, report: Mapping[str, NamespaceBundleStats]) -> None:
        self.report = report  # held so that its id stays its own
        self.names = list(report)
        # the names' rows in the table, while its generation is ``rows_of``
        self.rows: Ints | None = None
        self.rows_of = -1
        stats = report.values()
        self.values: Floats = np.array(
            [
                (s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in, s.msg_rate_out)
                for s in stats
            ],
            dtype=np.float64,
        ).reshape(-1, 4)
        self.topics: Ints = np.array([s.topics for s in stats], dtype=np.int64)


class BundleAverageView(Mapping[str, BundleData]):
    """The table as it was when :meth:`BundleAverageTable.view` was called. ``BundleData``
    objects are made on first read and kept."""

    __slots__ = ("_cache", "_counts", "_length", "_rows", "_size", "_values")

    def __init__(
        self, rows: dict[str, int], length: int, size: int, values: Floats, counts: Ints
    ) -> None:
        # ``rows`` may be shared with the table, which only adds names at rows >= length to
        # a dict it shares (removing one copies it first): rows past ``length`` are not ours.
        self._rows = rows
        self._length = length
        self._size = size
        self._values = values
        self._counts = counts
        self._cache: dict[str, BundleData] = {}

    def __getitem__(self, bundle: str) -> BundleData:
        found = self._cache.get(bundle)
        if found is not None:
            return found
        row = self._rows[bundle]
        if row >= self._length:
            raise KeyError(bundle)
        found = self._cache[bundle] = _bundle_data(
            self._values[row].tolist(), self._counts[row].tolist()
        )
        return found

    def __contains__(self, bundle: object) -> bool:
        row = self._rows.get(bundle) if isinstance(bundle, str) else None
        return row is not None and row < self._length

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._live())

    def __len__(self) -> int:
        return self._size

    def over_long_term(self, max_rate: float, max_throughput: float) -> frozenset[str]:
        """The bundles whose long-term message rate (in + out) is not within ``max_rate`` or
        whose throughput (in + out) is not within ``max_throughput``, as
        :func:`over_long_term` says; the columns are compared at once, and names looked up
        only when a bundle is over (rarely)."""
        values = self._values[: self._length]
        rates = values[:, _LONG + _R_IN] + values[:, _LONG + _R_OUT]
        throughputs = values[:, _LONG + _T_IN] + values[:, _LONG + _T_OUT]
        # "not within" rather than "above": NaN is over, as a comparison in Python finds it
        over = ~((rates <= max_rate) & (throughputs <= max_throughput))
        if not over.any():
            return frozenset()
        return frozenset(name for name, row in self._live() if over[row])

    def by_short_term_throughput(self) -> list[str]:
        """The bundles from the highest short-term throughput (in + out) down; ties keep the
        mapping's order (a stable sort, as ``sorted`` over the objects would give)."""
        live = list(self._live())
        rows = np.array([row for _, row in live], dtype=np.int64)
        values = self._values
        keys = -(values[rows, _SHORT + _T_IN] + values[rows, _SHORT + _T_OUT])
        return [live[i][0] for i in np.argsort(keys, kind="stable").tolist()]

    def _live(self) -> Iterator[tuple[str, int]]:
        """Names and rows of this view, in the mapping's order."""
        length = self._length
        return ((name, row) for name, row in self._rows.items() if row < length)


def over_long_term(
    bundles: Mapping[str, BundleData], max_rate: float, max_throughput: float
) -> frozenset[str]:
    """The bundles whose long-term message rate (in + out) or throughput (in + out) is not
    within the limit: what the split rules select a bundle for besides its topics and
    sessions. Taken from the columns for a :class:`BundleAverageView` (no ``BundleData``
    made), else from the objects."""
    if isinstance(bundles, BundleAverageView):
        return bundles.over_long_term(max_rate, max_throughput)
    return frozenset(
        name
        for name, data in bundles.items()
        if not (
            data.long_term_data.total_msg_rate <= max_rate
            and data.long_term_data.total_msg_throughput <= max_throughput
        )
    )


class BundleAverageTable:
    """Bundle data by name, in insertion order (as a dict keeps it): one row per bundle in
    a value array (8 averages) and a count array (sample counts and topics)."""

    def __init__(self, data: Mapping[str, BundleData] | None = None) -> None:
        self._rows: dict[str, int] = {}
        self._rows_shared = False  # a view holds self._rows: copy it before removing a name
        self._arrays_shared = False  # a view holds the arrays: copy them before changing a row
        self._length = 0  # rows in use (live or removed)
        self._generation = 0  # changes when a name loses its row (rows kept by samples)
        self._values: Floats = np.zeros((_MIN_CAPACITY, _VALUE_COLUMNS), dtype=np.float64)
        self._counts: Ints = np.zeros((_MIN_CAPACITY, _COUNT_COLUMNS), dtype=np.int64)
        self._view: BundleAverageView | None = None
        self._samples: dict[int, _Samples] = {}
        for name, bundle_data in (data or {}).items():
            self.add(name, bundle_data)

    def __contains__(self, bundle: str) -> bool:
        return bundle in self._rows

    def view(self) -> BundleAverageView:
        """The table as it is now, read-only (the same object until the table changes)."""
        view = self._view
        if view is None:
            view = self._view = BundleAverageView(
                self._rows, self._length, len(self._rows), self._values, self._counts
            )
            self._rows_shared = self._arrays_shared = True
        return view

    def add(self, bundle: str, data: BundleData) -> None:
        """Set ``bundle``'s data (a new bundle goes last)."""
        values, counts = _row_values(data)
        row = self._rows.get(bundle)
        if row is None:
            self._append(bundle, values, counts)
            return
        self._own_arrays()
        self._values[row] = values
        self._counts[row] = counts
        self._view = None

    def remove(self, bundle: str) -> bool:
        """Forget ``bundle``; returns whether it was there."""
        if bundle not in self._rows:
            return False
        if self._rows_shared:
            self._rows = dict(self._rows)
            self._rows_shared = False
        del self._rows[bundle]
        self._generation += 1
        self._view = None
        if self._length > _MIN_CAPACITY and len(self._rows) * 2 < self._length:
            self._compact()
        return True

    def fold(
        self, reports: Sequence[Mapping[str, NamespaceBundleStats]]
    ) -> list[TimeAverageBrokerData]:
        """:func:`~ballast.model.loaddata.averages.add_report_samples` on the table: each
        report's stats, report after report, become one sample of their bundles' averages (a
        new bundle starts at the defaults); returns each report's broker sums, each added in
        its report's order as ``TimeAverageBrokerData.from_bundles`` adds them."""
        samples = [self._samples_of(report) for report in reports]
        self._samples = {id(s.report): s for s in samples}
        if not any(s.names for s in samples):
            return [TimeAverageBrokerData() for _ in reports]
        rows: Ints = np.concatenate([self._rows_of(s) for s in samples])
        sample_values: Floats = np.concatenate([s.values for s in samples])
        sample_topics: Ints = np.concatenate([s.topics for s in samples])
        self._own_arrays()  # the views taken so far keep the arrays they hold
        values, counts = self._values, self._counts
        for wave in _waves(rows):
            at = rows if wave is None else rows[wave]
            x = sample_values if wave is None else sample_values[wave]
            for first, max_column, n_column in (
                (_SHORT, _SHORT_MAX, _SHORT_N),
                (_LONG, _LONG_MAX, _LONG_N),
            ):
                num = counts[at, n_column]
                most = counts[at, max_column]
                n = np.where(num < most, num + 1, most)
                old = values[at, first : first + 4]
                # ((n - 1) * f + new) / n, operation by operation as the object's update does
                values[at, first : first + 4] = ((n - 1)[:, None] * old + x) / n[:, None]
                counts[at, n_column] = n
            counts[at, _TOPICS] = sample_topics if wave is None else sample_topics[wave]
        self._view = None
        return _broker_sums(samples, values[rows])

    # -- rows ---------------------------------------------------------------------------------

    def _samples_of(self, report: Mapping[str, NamespaceBundleStats]) -> _Samples:
        found = self._samples.get(id(report))
        if found is not None and found.report is report:
            return found
        return _Samples(report)

    def _rows_of(self, samples: _Samples) -> Ints:
        """The rows of the samples' bundles, a new bundle appended at the defaults; kept
        with the samples until a bundle loses its row."""
        if samples.rows is not None and samples.rows_of == self._generation:
            return samples.rows
        names = samples.names
        get = self._rows.get
        rows = [get(name, -1) for name in names]
        if -1 in rows:
            for i, name in enumerate(names):
                if rows[i] == -1:
                    row = get(name)
                    if row is None:
                        row = self._append(name, _NEW_VALUES, _NEW_COUNTS)
                    rows[i] = row
        samples.rows = np.array(rows, dtype=np.int64)
        samples.rows_of = self._generation
        return samples.rows

    def _append(self, bundle: str, values: list[float], counts: list[int]) -> int:
        row = self._length
        if row == self._values.shape[0]:
            capacity = 2 * row
            grown_values = np.zeros((capacity, _VALUE_COLUMNS), dtype=np.float64)
            grown_counts = np.zeros((capacity, _COUNT_COLUMNS), dtype=np.int64)
            grown_values[:row] = self._values[:row]
            grown_counts[:row] = self._counts[:row]
            self._values, self._counts = grown_values, grown_counts
            self._arrays_shared = False
        # Rows past every view's length: writing them in place changes no view.
        self._values[row] = values
        self._counts[row] = counts
        self._rows[bundle] = row
        self._length = row + 1
        self._view = None
        return row

    def _own_arrays(self) -> None:
        """Copy the arrays if a view holds them (before changing a row it can see)."""
        if self._arrays_shared:
            self._values = self._values.copy()
            self._counts = self._counts.copy()
            self._arrays_shared = False

    def _compact(self) -> None:
        live = np.fromiter(self._rows.values(), dtype=np.int64, count=len(self._rows))
        capacity = max(_MIN_CAPACITY, 2 * live.size)
        values = np.zeros((capacity, _VALUE_COLUMNS), dtype=np.float64)
        counts = np.zeros((capacity, _COUNT_COLUMNS), dtype=np.int64)
        values[: live.size] = self._values[live]
        counts[: live.size] = self._counts[live]
        self._values, self._counts = values, counts
        self._rows = {name: row for row, name in enumerate(self._rows)}
        self._rows_shared = self._arrays_shared = False
        self._generation += 1
        self._length = live.size


def _waves(rows: Ints) -> list[Ints | None]:
    """Index arrays that split the samples into waves with each row at most once, in order:
    a bundle in two reports (mid-transfer) takes its second sample after its first. One wave
    (``None``: all samples) when no row repeats."""
    if int(np.bincount(rows).max()) <= 1:
        return [None]
    seen: dict[int, int] = {}
    waves: list[list[int]] = []
    for i, row in enumerate(rows.tolist()):
        k = seen.get(row, 0)
        seen[row] = k + 1
        if k == len(waves):
            waves.append([])
        waves[k].append(i)
    return [np.array(wave, dtype=np.int64) for wave in waves]


def _broker_sums(samples: list[_Samples], latest: Floats) -> list[TimeAverageBrokerData]:
    """Each report's sums of its bundles' latest averages. ``np.bincount`` adds its weights
    one after another in input order, as the object loop does, so the sums are the same."""
    owner = np.repeat(np.arange(len(samples), dtype=np.int64), [len(s.names) for s in samples])
    columns = [
        np.bincount(owner, weights=latest[:, c], minlength=len(samples)).tolist()
        for c in range(_VALUE_COLUMNS)
    ]
    return [
        TimeAverageBrokerData(
            short_term_msg_throughput_in=columns[_SHORT + _T_IN][i],
            short_term_msg_throughput_out=columns[_SHORT + _T_OUT][i],
            short_term_msg_rate_in=columns[_SHORT + _R_IN][i],
            short_term_msg_rate_out=columns[_SHORT + _R_OUT][i],
            long_term_msg_throughput_in=columns[_LONG + _T_IN][i],
            long_term_msg_throughput_out=columns[_LONG + _T_OUT][i],
            long_term_msg_rate_in=columns[_LONG + _R_IN][i],
            long_term_msg_rate_out=columns[_LONG + _R_OUT][i],
        )
        for i in range(len(samples))
    ]
