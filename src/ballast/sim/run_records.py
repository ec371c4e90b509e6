"""What a simulation run is asked for and what it records: the run's options, one record per
step and per running broker at each step, and the result that holds them (the summaries,
timelines and charts are made from it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ballast.model.config import Settings
from ballast.sim.metrics import Decision
from ballast.sim.scenario import Scenario

Progress = Callable[[float, float], None]


class SimulationError(RuntimeError):
    """The simulation could not go on (no leader, a request refused, an invariant broken)."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """``strategy``: a profile of :mod:`ballast.sim.strategies` (None: the settings as the
    scenario and ``overrides`` give them); ``seed``: replaces the scenario's; ``overrides``:
    ``key=value`` settings applied last; ``check_invariants``: check them at every step;
    ``history_subdir``: with ``loadBalancerHistoryPath`` set, the leader writes its history
    in this directory under it (runs compared side by side keep theirs apart)."""

    strategy: str | None = None
    seed: int | None = None
    overrides: tuple[str, ...] = ()
    check_invariants: bool = False
    progress: Progress | None = None
    history_subdir: str | None = None

    def __post_init__(self) -> None:
        # numpy's generators take no negative seed; say so before a run starts
        if self.seed is not None and self.seed < 0:
            raise ValueError(f"seed must be 0 or more, not {self.seed}")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """The cluster at one step boundary; moves and unowned topic-seconds are those of the
    step that just ended."""

    t_s: float
    brokers: int
    mean: float
    std: float
    minimum: float
    maximum: float
    bound: float
    ratio: float
    unowned_topics: int
    unowned_topic_seconds: float
    transfers: int
    unloads: int
    splits: int
    assigns: int
    shedding_moves: int
    client_lookups: int


@dataclass(frozen=True, slots=True)
class BrokerRecord:
    """One running broker at one step boundary."""

    t_s: float
    broker: str
    load: float
    reported_load: float
    bundles: int
    topics: int
    msg_rate: float
    throughput: float
    leader: bool


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """One shedding cycle of a leader: how many moves it proposed, and its outcome
    (``Success``, or ``Skip`` with the reason and its detail)."""

    t_s: float
    leader: str
    moves: int
    outcome: str
    reason: str
    detail: str


@dataclass(slots=True)
class RunResult:
    scenario: Scenario
    strategy: str
    seed: int
    settings: Settings
    steps: list[StepRecord] = field(default_factory=list)
    brokers: list[BrokerRecord] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    cycles: list[CycleRecord] = field(default_factory=list)
    event_times: list[tuple[float, str]] = field(default_factory=list)
    broker_starts: dict[str, list[float]] = field(default_factory=dict)
    lookups: int = 0
    redirects: int = 0
    client_lookups: int = 0
    failed_lookups: int = 0
    invariant_checks: int = 0
    unowned_topic_seconds: float = 0.0
