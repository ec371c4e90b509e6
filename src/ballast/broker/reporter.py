"""A broker's load report (Pulsar's ``writeBrokerDataOnZooKeeper``): every
``loadBalancerReportUpdateMinIntervalMillis`` it rebuilds its LocalBrokerData from its bundle
stats and host usage (sampled every ``loadBalancerHostUsageCheckIntervalMinutes``) and writes
it to its registry record when ``need_broker_data_update`` says the change is worth it.

Concurrency contract: one event loop; one task per reporter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from ballast.broker.host_usage import HostUsageProvider
from ballast.broker.identity import BrokerIdentity
from ballast.clock import Clock
from ballast.coordination.registry import BrokerRegistration
from ballast.metadata.store import ConnectionLossError, MetadataError, SessionExpiredError
from ballast.model.config import ReportConfig
from ballast.model.loaddata import (
    LocalBrokerData,
    NamespaceBundleStats,
    SystemResourceUsage,
    largest_change,
    need_broker_data_update,
    total_of,
)
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)

# The stats of the bundles a broker serves. A source may return the same mapping object again
# only while its contents stay the same (the reporter then skips the rebuild).
BundleStatsSource = Callable[[], Mapping[str, NamespaceBundleStats]]


class LoadReporter:
    """Builds and writes one broker's load report."""

    def __init__(
        self,
        identity: BrokerIdentity,
        registration: BrokerRegistration,
        host_usage: HostUsageProvider,
        bundle_stats: BundleStatsSource,
        config: ReportConfig,
        clock: Clock,
    ) -> None:
        self._identity = identity
        self._registration = registration
        self._host_usage = host_usage
        self._bundle_stats = bundle_stats
        self._config = config
        self._clock = clock
        self._local = identity.base_report()
        self._last_written = self._local
        self._usage = SystemResourceUsage()
        self._usage_sampled_at: float | None = None
        self._built_from: Mapping[str, NamespaceBundleStats] | None = None
        self._totals = total_of(())  # of the stats the report was built from
        # the last reports compared (written, current) and their largest change
        self._compared: tuple[LocalBrokerData, LocalBrokerData, tuple[str, float]] | None = None
        self._task: asyncio.Task[None] | None = None
        self.writes = 0

    @property
    def current(self) -> LocalBrokerData:
        """The report as last rebuilt (what the broker would write now)."""
        return self._local

    @property
    def last_written(self) -> LocalBrokerData:
        return self._last_written

    def rebuild(self) -> LocalBrokerData:
        """Refresh the report from the bundle stats and (when due) the host usage."""
        stats = self._bundle_stats()
        same_stats = stats is self._built_from
        now = self._clock.monotonic()
        if self._host_usage.continuous:
            # A continuous provider's usage is a function of the traffic: the same stats
            # give the same usage.
            sample_due = not same_stats
        else:
            sample_due = (
                self._usage_sampled_at is None
                or now - self._usage_sampled_at >= self._config.host_usage_check_interval_ms / 1000
            )
        # the stats' sums, for the host usage and the report: one pass over the bundles
        totals = self._totals if same_stats else total_of(stats.values())
        if sample_due:
            self._usage = self._host_usage.sample(totals)
            self._usage_sampled_at = now
        elif same_stats:
            # Nothing changed since the last rebuild: updating would give the same report
            # (its bundles are the stats' keys already, so no gains or losses either).
            return self._local
        self._local = self._local.updated(self._usage, stats, totals=totals)
        self._built_from = stats
        self._totals = totals
        return self._local

    async def register(self) -> None:
        """Rebuild and create the broker's registry record (at start)."""
        self.rebuild()
        await self._write()
        await self._registration.register(self._last_written.to_json())

    async def report(self, *, force: bool = False) -> bool:
        """Rebuild, and write if forced or worth it. Returns whether it wrote."""
        current = self.rebuild()
        last_written = self._last_written
        compared = self._compared
        if compared is not None and compared[0] is last_written and compared[1] is current:
            change = compared[2]  # neither report changed since the last check
        else:
            change = largest_change(last_written, current, self._config.weights)
            self._compared = (last_written, current, change)
        decision = need_broker_data_update(
            last_written,
            current,
            now_ms=self._clock.wall_ms(),
            max_interval_ms=self._config.update_max_interval_ms,
            threshold_percentage=self._config.update_threshold_percentage,
            weights=self._config.weights,
            change=change,
        )
        if not (force or decision.write):
            return False
        await self._write()
        try:
            await self._registration.update(self._last_written.to_json())
        except BaseException:
            # Not stored: the next check compares with what the store holds, as Pulsar
            # updates its last written data only after the write succeeded.
            self._last_written = last_written
            raise
        self.writes += 1
        return True

    async def _write(self) -> None:
        written = self._local.with_last_update(self._clock.wall_ms())
        self._last_written = written
        self._local = written.without_deltas()

    def start(self) -> None:
        self._task = spawn(f"load-report-{self._identity.broker_id}", self._run())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        interval_s = self._config.update_min_interval_ms / 1000
        while True:
            await self._clock.sleep(interval_s)
            try:
                await self.report()
            except (ConnectionLossError, SessionExpiredError):
                continue  # the registration repairs itself; report again next time
            except MetadataError:
                log.exception("writing the load report of %s failed", self._identity.broker_id)
