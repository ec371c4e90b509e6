"""``GET /metrics`` in Prometheus' text format: the broker's load, bundles, lookups and
commands, and — on the leader — the controller's epoch, event queue and moves. One registry
per broker (no global registry), filled at scrape time from the broker's own state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ballast.model.config import resource_weights

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


class BrokerCollector(Collector):
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        node = self.node
        report = node.reporter.current
        weights = resource_weights(node.settings)
        yield _gauge(
            "ballast_broker_load",
            "The broker's weighted max resource usage (fraction).",
            report.max_resource_usage_with_weight(weights),
        )
        usage = GaugeMetricFamily(
            "ballast_broker_resource_usage_percent", "Usage of each resource.", labels=["resource"]
        )
        for resource, percent in report.resource_percentages().items():
            usage.add_metric([resource], percent)
        yield usage
        yield _gauge("ballast_broker_msg_rate", "Messages per second in and out.", report.msg_rate)
        yield _gauge(
            "ballast_broker_msg_throughput_bytes",
            "Bytes per second in and out.",
            report.msg_throughput,
        )
        yield _gauge(
            "ballast_bundles_owned", "Bundles this broker owns.", len(node.ownership.owned())
        )
        yield _gauge("ballast_topics_served", "Topics of the owned bundles.", report.num_topics)
        stats = node.lookups.stats
        yield _counter("ballast_lookups", "Topic lookups answered.", stats.lookups)
        yield _counter(
            "ballast_lookup_redirects", "Lookups answered with a redirect.", stats.redirects
        )
        yield _counter("ballast_lookup_errors", "Lookups answered with an error.", stats.errors)
        yield _counter("ballast_commands", "Leader commands received.", node.commands)
        yield _counter(
            "ballast_stale_commands", "Commands refused for a stale epoch.", node.stale_commands
        )
        yield _counter("ballast_load_report_writes", "Load reports written.", node.reporter.writes)
        controller = node.controller
        yield _gauge("ballast_leader", "1 on the elected leader.", 1 if controller else 0)
        if controller is None:
            return
        yield _gauge("ballast_leader_epoch", "The leader's epoch.", controller.epoch)
        yield _gauge(
            "ballast_controller_event_queue_size", "Events waiting.", controller.events.queue_size
        )
        yield _counter("ballast_controller_faults", "Handler faults.", controller.events.faults)
        count = CounterMetricFamily(
            "ballast_controller_events", "Events processed.", labels=["event"]
        )
        seconds = CounterMetricFamily(
            "ballast_controller_event_seconds", "Time spent handling events.", labels=["event"]
        )
        queued = CounterMetricFamily(
            "ballast_controller_event_queue_seconds", "Time events waited.", labels=["event"]
        )
        for name, event in sorted(controller.events.stats.items()):
            count.add_metric([name], event.count)
            seconds.add_metric([name], event.total_s)
            queued.add_metric([name], event.queue_s)
        yield count
        yield seconds
        yield queued
        moves = controller.moves.stats
        yield _counter("ballast_bundles_assigned", "Bundles assigned.", moves.assigned)
        yield _counter("ballast_bundles_unloaded", "Bundles unloaded.", moves.unloaded)
        yield _counter("ballast_bundles_transferred", "Bundles transferred.", moves.transferred)
        yield _counter("ballast_bundles_split", "Bundles split.", moves.split)
        yield _counter("ballast_moves_failed", "Moves that failed.", moves.failed)
        yield _gauge("ballast_cluster_brokers", "Live brokers.", len(controller.image.brokers))


def metrics_registry(node: BrokerNode) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(node))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
