"""The column-held bundle data against the object reference: a dict of ``BundleData`` updated
by ``add_report_samples``. Same values bit for bit, same order, and views that do not move."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from ballast.model.loaddata import BundleData, NamespaceBundleStats, TimeAverageBrokerData
from ballast.model.loaddata.averages import add_report_samples
from ballast.model.loaddata.table import (
    BundleAverageTable,
    BundleAverageView,
    over_long_term,
)

NAMES = [f"t/n/0x{i:08x}_0x{i + 1:08x}" for i in range(12)]

rates = st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False)
stats = st.builds(
    NamespaceBundleStats,
    msg_rate_in=rates,
    msg_rate_out=rates,
    msg_throughput_in=rates,
    msg_throughput_out=rates,
    topics=st.integers(0, 5000),
)
reports = st.dictionaries(st.sampled_from(NAMES), stats, max_size=6)
stored = st.builds(
    BundleData.new_default,
    short_samples=st.integers(1, 12),
    long_samples=st.integers(1, 30),
    defaults=stats,
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("fold"), st.lists(st.integers(0, 4), max_size=4)),
        st.tuples(st.just("add"), st.sampled_from(NAMES), stored),
        st.tuples(st.just("remove"), st.sampled_from(NAMES)),
        st.tuples(st.just("view")),
    ),
    max_size=25,
)


def bits(data: BundleData) -> tuple[object, ...]:
    """Every field, floats as their bit patterns (== would let -0.0 pass for 0.0)."""
    fields: list[object] = [data.topics]
    for term in (data.short_term_data, data.long_term_data):
        fields += [term.max_samples, term.num_samples]
        for value in (
            term.msg_throughput_in,
            term.msg_throughput_out,
            term.msg_rate_in,
            term.msg_rate_out,
        ):
            fields.append(struct.pack("<d", value))
    return tuple(fields)


def sums_bits(sums: list[TimeAverageBrokerData]) -> list[bytes]:
    """Each broker's eight sums as their bit patterns."""
    return [
        b"".join(struct.pack("<d", getattr(s, name)) for name in s.__struct_fields__) for s in sums
    ]


def same(view: BundleAverageView, reference: dict[str, BundleData]) -> None:
    assert list(view) == list(reference)
    assert len(view) == len(reference)
    assert {name: bits(data) for name, data in view.items()} == {
        name: bits(data) for name, data in reference.items()
    }
    for name in NAMES:
        assert (name in view) == (name in reference)
    assert view.by_short_term_throughput() == sorted(
        reference, key=lambda name: -reference[name].short_term_data.total_msg_throughput
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(reports, min_size=5, max_size=5), operations)
def test_the_table_keeps_what_the_objects_keep(
    pool: list[dict[str, NamespaceBundleStats]], ops: list[tuple[object, ...]]
) -> None:
    # Reports come from a pool, so the same report object comes back across removals and
    # additions (the table keeps what it read from a report while the report is the same).
    table = BundleAverageTable()
    reference: dict[str, BundleData] = {}
    taken: list[tuple[BundleAverageView, dict[str, BundleData]]] = []
    for op in ops:
        if op[0] == "fold":
            folded = [pool[i] for i in op[1]]  # type: ignore[union-attr]
            expected = add_report_samples(reference, folded)
            got = table.fold(folded)
            assert sums_bits(got) == sums_bits(expected)
            expected = add_report_samples(reference, folded)
            assert sums_bits(table.fold(folded)) == sums_bits(expected)
        elif op[0] == "add":
            name, data = op[1], op[2]
            assert isinstance(name, str) and isinstance(data, BundleData)
            table.add(name, data)
            reference[name] = data
        elif op[0] == "remove":
            name = op[1]
            assert isinstance(name, str)
            assert table.remove(name) == (reference.pop(name, None) is not None)
        else:
            taken.append((table.view(), dict(reference)))
    same(table.view(), reference)
    for view, then in taken:
        same(view, then)  # later changes did not reach an earlier view


def test_a_bundle_in_two_reports_takes_two_samples_in_report_order() -> None:
    name = NAMES[0]
    first = {name: NamespaceBundleStats(msg_rate_in=10.0, topics=3)}
    second = {name: NamespaceBundleStats(msg_rate_in=1000.0, topics=7)}
    reference: dict[str, BundleData] = {}
    expected = add_report_samples(reference, [first, second])
    table = BundleAverageTable()
    assert table.fold([first, second]) == expected
    assert table.view()[name] == reference[name]
    assert reference[name].short_term_data.num_samples == 2
    assert reference[name].topics == 7


def test_many_bundles_grow_and_compact_the_table() -> None:
    names = [f"t/n/b{i}" for i in range(5000)]
    report = {name: NamespaceBundleStats(msg_rate_in=float(i)) for i, name in enumerate(names)}
    table = BundleAverageTable()
    reference: dict[str, BundleData] = {}
    assert table.fold([report]) == add_report_samples(reference, [report])
    before = table.view()
    for name in names[:4000]:
        table.remove(name)
        del reference[name]
    assert table.fold([{names[-1]: NamespaceBundleStats(msg_rate_in=1.0)}]) == add_report_samples(
        reference, [{names[-1]: NamespaceBundleStats(msg_rate_in=1.0)}]
    )
    same(table.view(), reference)
    assert len(before) == 5000 and before[names[0]].short_term_data.msg_rate_in == 0.0


def test_bundles_over_the_long_term_limits_are_the_same_from_columns_and_objects() -> None:
    table = BundleAverageTable()
    reference: dict[str, BundleData] = {}
    report = {
        NAMES[0]: NamespaceBundleStats(msg_rate_in=0.1, msg_rate_out=0.2, msg_throughput_in=3.0),
        NAMES[1]: NamespaceBundleStats(msg_throughput_out=7.5),
        NAMES[2]: NamespaceBundleStats(msg_rate_in=math.nan),
    }
    table.fold([report])
    add_report_samples(reference, [report])
    for max_rate, max_throughput, expected in (
        (0.31, 7.5, {NAMES[2]}),  # at a limit is within it; NaN is never within
        (0.29, 7.5, {NAMES[0], NAMES[2]}),  # 0.1 + 0.2 in + out
        (1.0, 7.0, {NAMES[1], NAMES[2]}),
    ):
        from_columns = over_long_term(table.view(), max_rate, max_throughput)
        assert from_columns == over_long_term(reference, max_rate, max_throughput)
        assert from_columns == expected


def test_by_short_term_throughput_keeps_ties_in_order() -> None:
    table = BundleAverageTable()
    report = {
        NAMES[0]: NamespaceBundleStats(msg_throughput_in=5.0),
        NAMES[1]: NamespaceBundleStats(msg_throughput_in=9.0),
        NAMES[2]: NamespaceBundleStats(msg_throughput_in=5.0),
    }
    table.fold([report])
    assert table.view().by_short_term_throughput() == [NAMES[1], NAMES[0], NAMES[2]]
