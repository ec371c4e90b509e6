"""``ballast standalone``: N brokers in this process on consecutive loopback ports over the
embedded store, each serving the HTTP API and Pulsar's binary protocol (real clients produce and
consume non-persistent topics), the brokers talking over HTTP; a leader is elected, a
demo namespace created and driven by the demo load, and a live console shows each broker's load,
its bundles and the load manager's decisions as they happen. Ctrl-C (or ``--duration``) stops it
and prints a summary.

Several brokers share one machine here, so host usage is modelled from each broker's traffic
(measuring the machine would give every broker the same figures).
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from ballast.balance.loadmodel import std
from ballast.broker.cluster import LocalCluster, modelled_usage
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind
from ballast.broker.node import BrokerNode
from ballast.broker.traffic import WorkloadTraffic
from ballast.clock import SystemClock
from ballast.controller.history import HistorySink
from ballast.controller.requests import CreateNamespace, CreateTenant
from ballast.coordination.cluster_name import claim_cluster
from ballast.model.config import Settings, resource_weights
from ballast.standalone.workload import DemoWorkload

# The status of a refusal for something that exists already.
CONFLICT = 409

LOOKUP_EVERY_S = 3.0
MIB = 1024 * 1024
SHOWN_DECISIONS = 6  # the console's panel of the latest decisions


class NoLeaderError(RuntimeError):
    """No broker of the standalone cluster became leader in time."""


class SetupRefusedError(RuntimeError):
    """The leader refused to make the tenants and namespaces the cluster starts with."""


@dataclass(frozen=True, slots=True)
class StandaloneOptions:
    settings: Settings
    brokers: int = 3
    host: str = "127.0.0.1"
    web_port: int = 8080
    broker_port: int = 6650
    store_url: str = "memory:"
    workload: DemoWorkload | None = field(default_factory=DemoWorkload)
    duration_s: float | None = None
    history: HistorySink | None = None


@dataclass(slots=True)
class Summary:
    """What the console shows and the run ends with. Decisions are counted as they are made
    and only the latest few kept, so a standalone left running for days holds no more."""

    uptime_s: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)
    latest: deque[Mapping[str, Any]] = field(default_factory=lambda: deque(maxlen=SHOWN_DECISIONS))
    loads: dict[str, float] = field(default_factory=dict)
    bundles: dict[str, int] = field(default_factory=dict)
    leader: str | None = None
    hot: bool = False
    closed: bool = False

    def record(self, entry: Mapping[str, Any]) -> None:
        """Hear one decision of any broker's leader (a decision listener); none once the
        cluster stops (the leader placing the bundles of the brokers it sees stopping)."""
        if self.closed:
            return
        self.counts[str(entry["action"])] += 1
        self.latest.append(entry)

    def counts_text(self) -> str:
        """``17 assign, 2 transfer``: the leader's decisions by kind, or ``none``."""
        counts = sorted(self.counts.items())
        return ", ".join(f"{n} {action}" for action, n in counts) or "none"


class Standalone:
    def __init__(self, options: StandaloneOptions) -> None:
        self.options = options
        self.clock = SystemClock()
        self.traffic = WorkloadTraffic()
        self.summary = Summary()
        self.cluster = LocalCluster(
            self.clock,
            settings=options.settings,
            store_url=options.store_url,
            traffic=self.traffic,
            host_usage=modelled_usage(),
            serve_http=True,
            history=options.history,
            on_node=self._listen,
        )
        self._started = 0.0
        self.notes: list[str] = []  # what the start noticed, told once it has started

    def _listen(self, node: BrokerNode) -> None:
        node.decision_listeners.append(self.summary.record)

    async def start(self, stop: asyncio.Event) -> bool:
        """Start the brokers and set up the demo once one is elected; False if ``stop`` was
        set first. A :class:`NoLeaderError` if none is elected within two sessions' time (a
        leader record of a session still alive expires within one)."""
        self._started = self.clock.monotonic()
        await self._claim_store()
        for i in range(self.options.brokers):
            await self.cluster.add_broker(
                BrokerIdentity(
                    self.options.host, self.options.web_port + i, self.options.broker_port + i
                )
            )
        session_s = self.cluster.settings.get_int("metadataStoreSessionTimeoutMillis") / 1000
        wait_s = 2 * session_s + 10
        while self.cluster.leader() is None:
            if stop.is_set():
                return False
            if self.clock.monotonic() - self._started > wait_s:
                raise NoLeaderError(
                    f"no broker was elected leader in {wait_s:.0f} s (see `ballast metadata get "
                    "/loadbalance/leader --store ...` for a leader record in the way)"
                )
            await self.clock.sleep(0.05)
        workload = self.options.workload
        namespace = workload.namespace if workload else "public/default"
        tenant = namespace.split("/")[0]
        await self._set_up(CreateTenant(tenant=tenant))
        bundles = workload.bundles if workload else None
        await self._set_up(CreateNamespace(namespace=namespace, bundles=bundles))
        if namespace != "public/default":  # where clients' bare topic names go, as in Pulsar
            await self._set_up(CreateTenant(tenant="public"))
            await self._set_up(CreateNamespace(namespace="public/default"))
        if workload is not None:
            node = self.cluster.running()[0]
            current = await node.bundles.bundles(workload.namespace_name)
            if current.count != workload.bundles:
                self.notes.append(
                    f"{namespace} exists with {current.count} bundles (the store's): the "
                    f"workload's {workload.bundles} are not used"
                )
            for i in range(workload.topics):  # named one by one: a million take seconds
                if i % 1000 == 0:
                    await self.clock.sleep(0)  # the store may answer without yielding: signals
                    if stop.is_set():
                        break
                await node.topic_index.create(workload.topic_name(i))
            else:
                workload.apply(self.traffic, hot=False)
        return True

    async def _claim_store(self) -> None:
        """Claim the store for this cluster's ``clusterName`` as ``ballast broker`` does: a
        store of another cluster (``--store`` a production ZooKeeper, say) is refused before
        any broker joins its balancing."""
        store = await self.cluster.connect()
        try:
            await claim_cluster(store, self.cluster.settings.get_str("clusterName"))
        finally:
            await store.close()

    async def _set_up(self, request: CreateTenant | CreateNamespace) -> None:
        """Ask the leader for a tenant or namespace the cluster starts with; one that exists
        (a ``sqlite:`` store of an earlier run) is fine, any other refusal stops the start."""
        reply = await self.cluster.request(request)
        if not reply.ok and reply.status != CONFLICT:
            raise SetupRefusedError(f"the leader refused to set up the cluster: {reply.message}")

    async def drive(self, stop: asyncio.Event) -> None:
        """The demo's clients: look topics up (owning their bundles), turn the hot spot on."""
        workload = self.options.workload
        if workload is None or stop.is_set():  # naming a million topics takes seconds
            return
        topics = workload.topic_names()
        while not stop.is_set():
            elapsed = self.clock.monotonic() - self._started
            hot = workload.hotspot_after_s > 0 and elapsed >= workload.hotspot_after_s
            if hot and not self.summary.hot:
                # the hot bundle among the namespace's bundles as they are now
                node = self.cluster.running()[0]
                bundles = await node.bundles.bundles(workload.namespace_name)
                workload.apply(self.traffic, hot=True, bundles=bundles)
                self.summary.hot = True
            for topic in topics:
                if stop.is_set() or not self.cluster.running():
                    return
                answer = await self.cluster.lookup(topic)
                if answer.kind is not AnswerKind.CONNECT:
                    continue
            try:
                await asyncio.wait_for(stop.wait(), LOOKUP_EVERY_S)
            except TimeoutError:
                pass

    def collect(self) -> None:
        """Refresh the summary from the brokers (loads, bundles, leader)."""
        weights = resource_weights(self.options.settings)
        self.summary.uptime_s = self.clock.monotonic() - self._started
        leader = self.cluster.leader()
        self.summary.leader = leader.broker_id if leader else None
        for node in self.cluster.running():
            report = node.reporter.current
            self.summary.loads[node.broker_id] = report.max_resource_usage_with_weight(weights)
            self.summary.bundles[node.broker_id] = len(node.ownership.owned())

    def render(self) -> Group:
        table = Table(title=None, expand=True)
        for heading in ("broker", "role", "load", "bundles", "topics", "msg/s", "MiB/s"):
            table.add_column(heading, justify="left" if heading in ("broker", "role") else "right")
        for node in self.cluster.running():
            report = node.reporter.current
            load = self.summary.loads.get(node.broker_id, 0.0)
            color = "red" if load > 0.85 else "yellow" if load > 0.6 else "green"
            table.add_row(
                node.broker_id,
                "leader" if node.broker_id == self.summary.leader else "",
                f"[{color}]{load * 100:5.1f}%[/{color}]",
                str(self.summary.bundles.get(node.broker_id, 0)),
                str(report.num_topics),
                f"{report.msg_rate:,.0f}",
                f"{report.msg_throughput / MIB:,.1f}",
            )
        lines = [
            f"{_at(d)} {d['action']:<8} {d['bundle']}"
            + (
                f"  {d['broker'] or ''} -> {d['destination']}"
                if d.get("destination")
                else f"  {d['broker'] or ''}"
            )
            + f"\n    [dim]{d['reason']}[/dim]"
            for d in self.summary.latest
        ]
        title = f"Ballast standalone — up {self.summary.uptime_s:.0f} s"
        workload = self.options.workload
        if workload is not None and workload.hotspot_after_s > 0:
            left = max(0.0, workload.hotspot_after_s - self.summary.uptime_s)
            title += " — hot spot " + ("ON" if self.summary.hot else f"in {left:.0f} s")
        decisions = "\n".join(lines) or "[dim]no decisions yet[/dim]"
        return Group(
            Panel(table, title=title),
            Panel(decisions, title="load manager decisions (latest last)"),
        )

    async def stop(self) -> None:
        self.collect()
        self.summary.closed = True
        await self.cluster.close()


def _at(entry: Mapping[str, Any]) -> str:
    return datetime.fromtimestamp(entry["at"] / 1000).strftime("%H:%M:%S")


async def run_standalone(options: StandaloneOptions, console: Console) -> Summary:
    """Run until Ctrl-C / SIGTERM or ``duration_s``; returns the summary."""
    standalone = Standalone(options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if options.duration_s is not None:  # the start counts too: a run never outlasts it
        loop.call_later(options.duration_s, stop.set)
    try:
        started = await standalone.start(stop)
    except BaseException:
        await standalone.stop()
        raise
    if not started:
        await standalone.stop()
        raise NoLeaderError("stopped before any broker was elected leader")
    urls = ", ".join(f"http://{b}" for b in standalone.cluster.nodes)
    brokers = f"{options.brokers} broker{'' if options.brokers == 1 else 's'}"
    console.print(f"[bold]Ballast standalone[/bold]: {brokers} at {urls}")
    clients = ", ".join(node.identity.pulsar_service_url for node in standalone.cluster.running())
    console.print(f"clients (non-persistent topics): {clients}")
    console.print(
        f"admin: ballast admin --url http://{options.host}:{options.web_port} ...; Ctrl-C stops"
    )
    for note in standalone.notes:
        console.print(f"note: {note}")
    driver = asyncio.ensure_future(standalone.drive(stop))
    deadline = (
        None if options.duration_s is None else standalone.clock.monotonic() + options.duration_s
    )
    try:
        if console.is_terminal:
            with Live(standalone.render(), console=console, refresh_per_second=2) as live:
                while not stop.is_set():
                    await _tick(stop, standalone, deadline)
                    live.update(standalone.render())
        else:
            last_line = -10.0
            while not stop.is_set():
                await _tick(stop, standalone, deadline)
                if standalone.summary.uptime_s - last_line >= 10:
                    last_line = standalone.summary.uptime_s
                    console.print(_status_line(standalone.summary))
    finally:
        stop.set()
        await driver
        await standalone.stop()
    return standalone.summary


async def _tick(stop: asyncio.Event, standalone: Standalone, deadline: float | None) -> None:
    try:
        await asyncio.wait_for(stop.wait(), 1.0)
    except TimeoutError:
        pass
    standalone.collect()
    if deadline is not None and standalone.clock.monotonic() >= deadline:
        stop.set()


def _status_line(summary: Summary) -> str:
    loads = " ".join(f"{b}={v * 100:.0f}%" for b, v in sorted(summary.loads.items()))
    return (
        f"t={summary.uptime_s:.0f}s leader={summary.leader} loads: {loads} "
        f"decisions: {summary.counts_text()}"
    )


def summary_text(summary: Summary) -> str:
    # loadmodel's std: statistics.pstdev fails on a load past a double's range (inf)
    spread = std(summary.loads.values())
    lines = [
        f"ran {summary.uptime_s:.0f} s; leader {summary.leader}",
        "final loads: "
        + ", ".join(f"{b} {v * 100:.1f}%" for b, v in sorted(summary.loads.items())),
        f"load std-dev {spread:.3f}; decisions: {summary.counts_text()}",
    ]
    return "\n".join(lines)
