"""Time for Ballast: the :class:`Clock` protocol, the system clock, and a virtual-time event
loop for tests and the simulator. The only module allowed to touch the system clock."""

from ballast.clock.base import Cancellable, Clock, SystemClock, wall_clock_ms
from ballast.clock.virtual import (
    DEFAULT_START_WALL_MS,
    VirtualClock,
    VirtualTimeLoop,
    run_virtual,
)

__all__ = [
    "DEFAULT_START_WALL_MS",
    "Cancellable",
    "Clock",
    "SystemClock",
    "VirtualClock",
    "VirtualTimeLoop",
    "run_virtual",
    "wall_clock_ms",
]
