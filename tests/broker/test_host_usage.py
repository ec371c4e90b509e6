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


async def test_the_first_cpu_reading_spans_a_second_not_milliseconds(clock: Clock) -> None:
    """A reading over the milliseconds after start-up read one busy core of two as 50 %, and
    the report kept it for a minute: the broker waits out a second first, on its clock."""
    provider = PsutilHostUsage(clock)
    started = clock.monotonic()
    await clock.sleep(0.25)
    await provider.warm_up()
    assert clock.monotonic() - started == pytest.approx(PsutilHostUsage.MIN_CPU_WINDOW_S)
    await provider.warm_up()  # once the window has passed, at once
    assert clock.monotonic() - started == pytest.approx(PsutilHostUsage.MIN_CPU_WINDOW_S)
