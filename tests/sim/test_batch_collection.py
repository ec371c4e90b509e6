"""A simulation tunes the cyclic garbage collector for its run and leaves it as it found it
(tests and ``--compare`` run many simulations in one process)."""

from __future__ import annotations

import gc

from ballast.sim.runner import BATCH_GC_THRESHOLD, batch_collection


def test_batch_collection_restores_the_collector() -> None:
    before = gc.get_threshold()
    with batch_collection():
        assert gc.get_threshold()[0] == BATCH_GC_THRESHOLD
        gc.freeze()  # what a run does once its cluster is built
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_batch_collection_restores_the_collector_after_a_failure() -> None:
    before = gc.get_threshold()
    try:
        with batch_collection():
            gc.freeze()
            raise RuntimeError("the run failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
