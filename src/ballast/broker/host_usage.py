"""How busy a broker's host is (the ``cpu``, ``memory``, ``directMemory``, ``bandwidthIn`` and
``bandwidthOut`` of its load report).

- :class:`PsutilHostUsage` reads the real machine: CPU percent over all cores, the process's
  resident memory against the machine's, and NIC byte counters turned into rates between
  samples against the NIC speed (from the system, or ``loadBalancerOverrideBrokerNicSpeedGbps``).
- :class:`ModelledHostUsage` derives usage from the broker's traffic and a capacity model —
  for the simulator and for several brokers sharing one machine, where the machine's figures
  would be the same for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import psutil

from ballast.clock import Clock
from ballast.model.loaddata import NamespaceBundleStats, ResourceUsage, SystemResourceUsage

MIB = 1024 * 1024


class HostUsageProvider(Protocol):
    # True when sampling is cheap and exact (a function of the traffic being reported alone):
    # the reporter then samples whenever the traffic changes instead of every host-usage
    # check interval.
    continuous: bool

    def sample(self, traffic: NamespaceBundleStats) -> SystemResourceUsage:
        """Usage now; ``traffic`` is the broker's total over its bundles."""
        ...


@dataclass(frozen=True, slots=True)
class BrokerCapacity:
    """What one broker can do: CPU cost per message and per byte (core-seconds), cores, NIC
    speed and memory."""

    cores: float = 4.0
    cpu_per_msg_s: float = 20e-6
    cpu_per_byte_s: float = 2e-9
    nic_bytes_per_s: float = 125_000_000.0  # 1 Gbit/s
    memory_mb: float = 8192.0
    base_memory_mb: float = 512.0
    memory_per_topic_mb: float = 0.05


class ModelledHostUsage:
    """Usage computed from traffic: CPU from messages and bytes handled, bandwidth from
    throughput against the NIC, memory from a base plus a cost per topic. Bandwidth is in
    kbit/s, as Pulsar reports it."""

    continuous = True

    def __init__(self, capacity: BrokerCapacity) -> None:
        self.capacity = capacity

    def sample(self, traffic: NamespaceBundleStats) -> SystemResourceUsage:
        cap = self.capacity
        busy_cores = (traffic.msg_rate_in + traffic.msg_rate_out) * cap.cpu_per_msg_s + (
            traffic.msg_throughput_in + traffic.msg_throughput_out
        ) * cap.cpu_per_byte_s
        nic_kbits = cap.nic_bytes_per_s * 8 / 1000
        return SystemResourceUsage(
            cpu=ResourceUsage(usage=busy_cores * 100, limit=cap.cores * 100),
            memory=ResourceUsage(
                usage=cap.base_memory_mb + traffic.topics * cap.memory_per_topic_mb,
                limit=cap.memory_mb,
            ),
            direct_memory=ResourceUsage(),
            bandwidth_in=ResourceUsage(usage=traffic.msg_throughput_in * 8 / 1000, limit=nic_kbits),
            bandwidth_out=ResourceUsage(
                usage=traffic.msg_throughput_out * 8 / 1000, limit=nic_kbits
            ),
        )


def nic_speed_kbits(override_gbps: float | None) -> float:
    """Total speed of the machine's up NICs in kbit/s (loopback excluded); the override wins.
    0 when unknown (Pulsar then reads bandwidth as 0%)."""
    if override_gbps is not None:
        return override_gbps * 1_000_000
    total = 0.0
    for name, stats in psutil.net_if_stats().items():
        if name == "lo" or not stats.isup or stats.speed <= 0:
            continue
        total += stats.speed * 1000  # psutil reports Mbit/s
    return total


class PsutilHostUsage:
    """The real machine, read with psutil. CPU and NIC rates are measured between samples.

    The first sample comes moments after the broker starts, and a CPU percent over a few
    milliseconds is noise (one busy core of two reads as 50 %) that the report would then
    carry until the next host-usage check, a minute later: placement would take the new
    broker for loaded. So the broker awaits :meth:`warm_up` before its first report."""

    continuous = False
    MIN_CPU_WINDOW_S = 1.0

    def __init__(self, clock: Clock, *, nic_speed_override_gbps: float | None = None) -> None:
        self._clock = clock
        self._override = nic_speed_override_gbps
        self._process = psutil.Process()
        psutil.cpu_percent(interval=None)  # the first call only sets the baseline
        self._started = self._last_time = clock.monotonic()
        counters = psutil.net_io_counters()
        self._last_rx, self._last_tx = counters.bytes_recv, counters.bytes_sent

    async def warm_up(self) -> None:
        """Return once the first CPU measurement spans ``MIN_CPU_WINDOW_S``."""
        waited = self._clock.monotonic() - self._started
        if waited < self.MIN_CPU_WINDOW_S:
            await self._clock.sleep(self.MIN_CPU_WINDOW_S - waited)

    def sample(self, traffic: NamespaceBundleStats) -> SystemResourceUsage:
        now = self._clock.monotonic()
        elapsed = max(now - self._last_time, 1e-6)
        counters = psutil.net_io_counters()
        rx_kbits = (counters.bytes_recv - self._last_rx) * 8 / 1000 / elapsed
        tx_kbits = (counters.bytes_sent - self._last_tx) * 8 / 1000 / elapsed
        self._last_time, self._last_rx, self._last_tx = (
            now,
            counters.bytes_recv,
            counters.bytes_sent,
        )
        cores = psutil.cpu_count() or 1
        nic = nic_speed_kbits(self._override)
        return SystemResourceUsage(
            cpu=ResourceUsage(usage=psutil.cpu_percent(interval=None) * cores, limit=100.0 * cores),
            memory=ResourceUsage(
                usage=self._process.memory_info().rss / MIB,
                limit=psutil.virtual_memory().total / MIB,
            ),
            direct_memory=ResourceUsage(),
            bandwidth_in=ResourceUsage(usage=max(rx_kbits, 0.0), limit=nic),
            bandwidth_out=ResourceUsage(usage=max(tx_kbits, 0.0), limit=nic),
        )
