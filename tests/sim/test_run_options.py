"""The options of a simulation run are checked before a run starts."""

from __future__ import annotations

import pytest

from ballast.sim.runner import RunOptions


def test_a_negative_seed_is_refused() -> None:
    with pytest.raises(ValueError, match="seed must be 0 or more, not -1"):
        RunOptions(seed=-1)
    assert RunOptions(seed=0).seed == 0
