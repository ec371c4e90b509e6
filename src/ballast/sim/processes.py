"""How topic rates move over time: each process turns a time into one multiplier per topic of a
namespace; a namespace's rates are its topics' base rates times the product of its processes.

- ``constant``: 1.
- ``diurnal``: ``1 + amplitude * sin(2π (t + phase) / period)``, each topic's phase shifted by
  up to ``jitter`` (drawn once).
- ``bursts``: every ``every``, for ``duration``, a random ``share`` of the topics runs at
  ``factor`` (a fresh draw each burst).
- ``random_walk``: each topic's multiplier walks in log space, ``sigma`` per √hour, kept
  within ``[min, max]``; the walk advances with time (the same steps give the same walk).
- ``hot_spot``: a window of ``share`` of the topics, contiguous in hash order (so it lands in
  one or a few bundles), runs at ``factor``; every ``move_every`` it moves on to the next window.
- recorded (not a ``kind`` of scenario files): a series of multipliers over time, one for all
  topics, as a copied load history gives it.

Randomness comes only from generators seeded with the scenario's seed and the namespace's
position; a burst's draw is seeded by its number, so it does not depend on when it is asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ballast.sim.schema import ScenarioError, Table

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Constant:
    pass


@dataclass(frozen=True, slots=True)
class Diurnal:
    amplitude: float = 0.5
    period_s: float = 86400.0
    phase_s: float = 0.0
    jitter_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Bursts:
    every_s: float
    duration_s: float
    share: float = 0.1
    factor: float = 5.0


@dataclass(frozen=True, slots=True)
class RandomWalk:
    sigma: float = 0.2
    min_factor: float = 0.2
    max_factor: float = 5.0


@dataclass(frozen=True, slots=True)
class HotSpot:
    share: float = 0.02
    factor: float = 10.0
    move_every_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class Recorded:
    """A recorded series: from ``times_s[i]`` on, every topic runs at ``factors[i]`` (before
    the first time, at the first factor). Made by a scenario's ``[copy]`` of a load history,
    not written in scenario files."""

    times_s: tuple[float, ...]
    factors: tuple[float, ...]


ProcessSpec = Constant | Diurnal | Bursts | RandomWalk | HotSpot | Recorded


def _share(table: Table, share: float) -> None:
    if not 0 < share <= 1:
        raise ScenarioError(f"{table.path('share')}: must be in (0, 1], not {share:g}")


def parse_process(table: Table) -> ProcessSpec:
    """One ``processes`` entry (``{ kind = "diurnal", amplitude = 0.5, period = "24h" }``)."""
    kind = table.text("kind")
    spec: ProcessSpec
    if kind == "constant":
        spec = Constant()
    elif kind == "diurnal":
        spec = Diurnal(
            amplitude=table.number("amplitude", 0.5),
            period_s=table.duration("period", "24h"),
            phase_s=table.duration("phase", 0.0),
            jitter_s=table.duration("jitter", 0.0),
        )
        if spec.amplitude >= 1:
            raise ScenarioError(f"{table.path('amplitude')}: must be below 1 (rates stay > 0)")
        if spec.period_s <= 0:
            raise ScenarioError(f"{table.path('period')}: must be above 0")
    elif kind == "bursts":
        spec = Bursts(
            every_s=table.duration("every"),
            duration_s=table.duration("duration"),
            share=table.number("share", 0.1),
            factor=table.number("factor", 5.0),
        )
        if spec.every_s <= 0:
            raise ScenarioError(f"{table.path('every')}: must be above 0")
        _share(table, spec.share)
        if not 0 < spec.duration_s <= spec.every_s:  # a burst ends before the next begins
            raise ScenarioError(
                f"{table.path('duration')}: must be more than 0 and at most every "
                f"({spec.every_s:g} s), not {spec.duration_s:g} s"
            )
    elif kind == "random_walk":
        spec = RandomWalk(
            sigma=table.number("sigma", 0.2),
            min_factor=table.number("min", 0.2, minimum=1e-6),
            max_factor=table.number("max", 5.0, minimum=1e-6),
        )
        if spec.min_factor > 1:
            raise ScenarioError(f"{table.path('min')}: must be at most 1, not {spec.min_factor:g}")
        if spec.max_factor < 1:
            raise ScenarioError(f"{table.path('max')}: must be at least 1, not {spec.max_factor:g}")
    elif kind == "hot_spot":
        spec = HotSpot(
            share=table.number("share", 0.02),
            factor=table.number("factor", 10.0),
            move_every_s=table.duration("move_every", "1h"),
        )
        _share(table, spec.share)
        if spec.move_every_s <= 0:
            raise ScenarioError(f"{table.path('move_every')}: must be above 0")
    else:
        kinds = "constant, diurnal, bursts, random_walk, hot_spot"
        raise ScenarioError(f'{table.path("kind")}: "{kind}" is not one of {kinds}')
    table.finish()
    return spec


class RateProcess(Protocol):
    def factors(self, t_s: float) -> Floats:
        """The multiplier of every topic at ``t_s`` (called with non-decreasing times)."""
        ...

    def grow(self, count: int) -> None:
        """Topics were added (at the end): extend the per-topic state."""
        ...


class _ConstantProcess:
    def __init__(self, count: int) -> None:
        self._count = count

    def factors(self, t_s: float) -> Floats:
        return np.ones(self._count)

    def grow(self, count: int) -> None:
        self._count += count


class _RecordedProcess:
    def __init__(self, spec: Recorded, count: int) -> None:
        self._times = np.asarray(spec.times_s, dtype=np.float64)
        self._factors = np.asarray(spec.factors, dtype=np.float64)
        self._count = count

    def factors(self, t_s: float) -> Floats:
        index = max(int(np.searchsorted(self._times, t_s, side="right")) - 1, 0)
        return np.full(self._count, self._factors[index])

    def grow(self, count: int) -> None:
        self._count += count


class _DiurnalProcess:
    def __init__(self, spec: Diurnal, count: int, rng: np.random.Generator) -> None:
        self._spec = spec
        self._rng = rng
        self._offsets = rng.uniform(0.0, spec.jitter_s, count) if spec.jitter_s > 0 else None
        self._count = count

    def factors(self, t_s: float) -> Floats:
        spec = self._spec
        phase = t_s + spec.phase_s
        if self._offsets is None:
            value = 1.0 + spec.amplitude * math.sin(2 * math.pi * phase / spec.period_s)
            return np.full(self._count, value)
        angles = 2 * np.pi * (phase + self._offsets) / spec.period_s
        return 1.0 + spec.amplitude * np.sin(angles)

    def grow(self, count: int) -> None:
        if self._offsets is not None:
            extra = self._rng.uniform(0.0, self._spec.jitter_s, count)
            self._offsets = np.concatenate([self._offsets, extra])
        self._count += count


class _BurstsProcess:
    def __init__(self, spec: Bursts, count: int, seed: tuple[int, ...]) -> None:
        self._spec = spec
        self._count = count
        self._seed = seed

    def factors(self, t_s: float) -> Floats:
        spec = self._spec
        number = int(t_s // spec.every_s)
        out = np.ones(self._count)
        if t_s - number * spec.every_s >= spec.duration_s or self._count == 0:
            return out
        rng = np.random.default_rng([*self._seed, number])
        chosen = rng.random(self._count) < spec.share
        out[chosen] = spec.factor
        return out

    def grow(self, count: int) -> None:
        self._count += count


class _RandomWalkProcess:
    def __init__(self, spec: RandomWalk, count: int, rng: np.random.Generator) -> None:
        self._spec = spec
        self._rng = rng
        self._log = np.zeros(count)
        self._at_s = 0.0

    def factors(self, t_s: float) -> Floats:
        elapsed_h = max(t_s - self._at_s, 0.0) / 3600.0
        if elapsed_h > 0:
            spec = self._spec
            steps = self._rng.standard_normal(self._log.size) * spec.sigma * math.sqrt(elapsed_h)
            self._log = np.clip(
                self._log + steps, math.log(spec.min_factor), math.log(spec.max_factor)
            )
            self._at_s = t_s
        return np.exp(self._log)

    def grow(self, count: int) -> None:
        self._log = np.concatenate([self._log, np.zeros(count)])


class _HotSpotProcess:
    def __init__(self, spec: HotSpot, hash_order: Callable[[], npt.NDArray[np.int64]]) -> None:
        self._spec = spec
        self._hash_order = hash_order

    def factors(self, t_s: float) -> Floats:
        order = self._hash_order()
        count = order.size
        out = np.ones(count)
        if count == 0:
            return out
        width = max(1, round(self._spec.share * count))
        start = (int(t_s // self._spec.move_every_s) * width) % count
        window = (start + np.arange(width)) % count
        out[order[window]] = self._spec.factor
        return out

    def grow(self, count: int) -> None:
        pass  # the hash order is read afresh each time


def make_process(
    spec: ProcessSpec,
    count: int,
    *,
    seed: tuple[int, ...],
    hash_order: Callable[[], npt.NDArray[np.int64]],
) -> RateProcess:
    """The running form of ``spec`` for ``count`` topics. ``hash_order()`` gives the topics'
    positions sorted by hash (the hot spot's notion of neighbours)."""
    rng = np.random.default_rng(list(seed))
    if isinstance(spec, Constant):
        return _ConstantProcess(count)
    if isinstance(spec, Diurnal):
        return _DiurnalProcess(spec, count, rng)
    if isinstance(spec, Bursts):
        return _BurstsProcess(spec, count, seed)
    if isinstance(spec, RandomWalk):
        return _RandomWalkProcess(spec, count, rng)
    if isinstance(spec, Recorded):
        return _RecordedProcess(spec, count)
    return _HotSpotProcess(spec, hash_order)
