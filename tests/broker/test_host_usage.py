"""The real host-usage provider reads this machine."""

from __future__ import annotations

import psutil
import pytest

from ballast.broker.host_usage import PsutilHostUsage, nic_speed_kbits
from ballast.clock import Clock
from ballast.model.loaddata import NamespaceBundleStats


@pytest.mark.real_time
async def test_reads_the_machine(clock: Clock) -> None:
    provider = PsutilHostUsage(clock, nic_speed_override_gbps=10.0)
    await clock.sleep(0.05)
    usage = provider.sample(NamespaceBundleStats())
    cores = psutil.cpu_count() or 1
    assert usage.cpu.limit == 100.0 * cores
    assert 0.0 <= usage.cpu.usage <= usage.cpu.limit
    assert usage.memory.limit == pytest.approx(psutil.virtual_memory().total / 1024 / 1024)
    assert 0 < usage.memory.usage < usage.memory.limit  # this process's resident memory
    assert usage.bandwidth_in.limit == 10_000_000.0  # 10 Gbit/s in kbit/s
    assert usage.bandwidth_in.usage >= 0 and usage.bandwidth_out.usage >= 0


def test_nic_speed_override_wins() -> None:
    assert nic_speed_kbits(2.5) == 2_500_000.0
    assert nic_speed_kbits(None) >= 0.0


def test_the_first_cpu_reading_spans_a_second_not_milliseconds(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reading over the milliseconds after start-up read one busy core of two as 50 %, and
    the report kept it for a minute."""
    asked: list[float | None] = []

    def cpu_percent(interval: float | None = None) -> float:
        asked.append(interval)
        return 3.0

    monkeypatch.setattr(psutil, "cpu_percent", cpu_percent)
    provider = PsutilHostUsage(clock)
    assert asked == [None]  # the baseline
    first = provider.sample(NamespaceBundleStats())
    assert asked[1] == pytest.approx(PsutilHostUsage.MIN_CPU_WINDOW_S)  # the rest of a second
    assert first.cpu.usage == 3.0 * (psutil.cpu_count() or 1)
    provider.sample(NamespaceBundleStats())  # later ones measure since the last
    assert asked[2:] == [None]
