"""The ceiling of a moving average: no average of samples at most ``m`` exceeds
``average_ceiling(m)``, whatever the averages started at, however long the run and whatever
the window (rounding included). ``pipeline split-plan`` skips bundles on this law."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ballast.model.loaddata import TimeAverageMessageData, average_ceiling

# Values that round: arbitrary doubles in a bundle's range, and runs of one value (whose
# exact mean is that value, so any excess is rounding alone).
magnitudes = st.floats(0, 1e15, allow_nan=False, allow_infinity=False)
samples = st.lists(st.tuples(magnitudes, magnitudes, magnitudes, magnitudes), min_size=1)
repeated = st.builds(lambda value, count: [(value,) * 4] * count, magnitudes, st.integers(1, 300))


@given(
    start=st.tuples(magnitudes, magnitudes, magnitudes, magnitudes),
    window=st.integers(1, 1000),
    run=st.one_of(samples, repeated),
)
def test_no_average_exceeds_the_ceiling_of_its_largest_sample(
    start: tuple[float, float, float, float],
    window: int,
    run: list[tuple[float, float, float, float]],
) -> None:
    average = TimeAverageMessageData(
        max_samples=window,
        msg_throughput_in=start[0],
        msg_throughput_out=start[1],
        msg_rate_in=start[2],
        msg_rate_out=start[3],
    )
    largest = [0.0] * 4
    for sample in run:
        average = average.updated(*sample)
        largest = [max(a, b) for a, b in zip(largest, sample, strict=True)]
        assert average.msg_throughput_in <= average_ceiling(largest[0])
        assert average.msg_throughput_out <= average_ceiling(largest[1])
        assert average.msg_rate_in <= average_ceiling(largest[2])
        assert average.msg_rate_out <= average_ceiling(largest[3])
    # The sums the split rules compare: rounding a sum is monotone, so the ceiling holds too.
    assert average.total_msg_rate <= average_ceiling(largest[2]) + average_ceiling(largest[3])


def test_the_ceiling_is_needed_and_tight() -> None:
    # Rounding alone carries this mean of one repeated value past it...
    average = TimeAverageMessageData(max_samples=1000)
    value = 0.1
    exceeded = False
    for _ in range(1000):
        average = average.updated(value, value, value, value)
        exceeded |= average.msg_rate_in > value
    assert exceeded
    assert average.msg_rate_in <= average_ceiling(value)
    # ...and the ceiling stays within a billionth of the sample.
    assert average_ceiling(30_000.0) - 30_000.0 <= 30_000.0 * 1e-9
    assert average_ceiling(0.0) == 0.0
