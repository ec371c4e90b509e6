"""A simulation tunes the cyclic garbage collector for its run and leaves it as it found it
(tests and ``--compare`` run many simulations in one process)."""

from __future__ import annotations

import gc
import tomllib

from ballast.clock import Clock, run_virtual
from ballast.sim.runner import BATCH_GC_THRESHOLD, RunOptions, Simulation, batch_collection
from ballast.sim.scenario import parse_scenario


def test_batch_collection_restores_the_collector() -> None:
    before = gc.get_threshold()
    with batch_collection():
        assert gc.get_threshold()[0] == BATCH_GC_THRESHOLD
    assert gc.get_threshold() == before


def test_a_run_unfreezes_what_it_froze() -> None:
    # Simulation.run on its own, without simulate()'s batch_collection: the objects it froze
    # once its cluster was built go back to the collector when it ends.
    scenario = parse_scenario(tomllib.loads('duration = "2m"\n[cluster]\nbrokers = 2\n'))
    frozen: list[int] = []

    async def main(clock: Clock) -> None:
        simulation = Simulation(scenario, RunOptions(), clock)
        original = simulation.record

        def record(now: float) -> None:  # called at every step, while the run holds the freeze
            frozen.append(gc.get_freeze_count())
            original(now)

        simulation.record = record  # type: ignore[method-assign]
        await simulation.run()

    assert gc.get_freeze_count() == 0
    run_virtual(main)
    assert frozen and all(count > 0 for count in frozen)
    assert gc.get_freeze_count() == 0


def test_batch_collection_restores_the_collector_after_a_failure() -> None:
    before = gc.get_threshold()
    try:
        with batch_collection():
            raise RuntimeError("the run failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
