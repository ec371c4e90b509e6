"""Shedding strategies by name. Each entry bundles a strategy's pure function with the types it
needs, so a caller can build its config from settings once, start from its initial state, and
run it every cycle:

```python
shedder = shedding_strategy(settings.get_str("loadBalancerLoadSheddingStrategy"))
config = shedder.config_from_settings(settings)
state = shedder.initial_state()
result = shedder.find(snapshot, state, config, now_ms)  # result.state feeds the next run
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ballast.balance.shedding import avg, ballast, overload, threshold, transfer, uniform
from ballast.balance.shedding.avg import AvgState
from ballast.balance.shedding.ballast import BallastState
from ballast.balance.shedding.common import NoState, SheddingResult
from ballast.balance.shedding.threshold import ThresholdState
from ballast.balance.shedding.transfer_data import TransferState
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import (
    AvgShedderConfig,
    BallastShedderConfig,
    OverloadShedderConfig,
    Settings,
    ThresholdShedderConfig,
    TransferShedderConfig,
    UniformShedderConfig,
)

C = TypeVar("C")
S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Shedder(Generic[C, S]):
    """A shedding strategy: its name, the Pulsar class it reproduces, whether it belongs to the
    modular load manager (whose cycle then picks a destination for every unload) or to the
    extensible one (which decides transfers itself), and its functions."""

    name: str
    pulsar_class: str
    modular: bool
    state_type: type[S]
    config_from_settings: Callable[[Settings], C]
    find: Callable[[LoadSnapshot, S, C, int], SheddingResult[S]]

    def initial_state(self) -> S:
        """The state of a strategy that has never run."""
        return self.state_type()


SHEDDERS: Mapping[str, Shedder[Any, Any]] = {
    "overload": Shedder(
        name="overload",
        pulsar_class="org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
        modular=True,
        state_type=NoState,
        config_from_settings=OverloadShedderConfig.from_settings,
        find=overload.find_bundles_to_unload,
    ),
    "threshold": Shedder(
        name="threshold",
        pulsar_class="org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
        modular=True,
        state_type=ThresholdState,
        config_from_settings=ThresholdShedderConfig.from_settings,
        find=threshold.find_bundles_to_unload,
    ),
    "uniform": Shedder(
        name="uniform",
        pulsar_class="org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder",
        modular=True,
        state_type=NoState,
        config_from_settings=UniformShedderConfig.from_settings,
        find=uniform.find_bundles_to_unload,
    ),
    "transfer": Shedder(
        name="transfer",
        pulsar_class="org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder",
        modular=False,
        state_type=TransferState,
        config_from_settings=TransferShedderConfig.from_settings,
        find=transfer.find_bundles_to_unload,
    ),
    "avg": Shedder(
        name="avg",
        pulsar_class="org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
        modular=True,
        state_type=AvgState,
        config_from_settings=AvgShedderConfig.from_settings,
        find=avg.find_bundles_to_unload,
    ),
    "ballast": Shedder(
        name="ballast",
        pulsar_class="io.ballast.BallastShedder",
        modular=False,
        state_type=BallastState,
        config_from_settings=BallastShedderConfig.from_settings,
        find=ballast.find_bundles_to_unload,
    ),
}


class UnknownStrategy(ValueError):
    """A strategy name that is not registered; the message lists the valid ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def shedding_strategy(name: str) -> Shedder[Any, Any]:
    """The strategy registered as ``name`` (a short name or Pulsar's class name, simple or
    fully qualified); raises :class:`UnknownStrategy` listing the valid names."""
    found = SHEDDERS.get(name)
    if found is None:
        for shedder in SHEDDERS.values():
            if name in (shedder.pulsar_class, shedder.pulsar_class.rsplit(".", 1)[1]):
                found = shedder
    if found is None:
        valid = ", ".join(SHEDDERS)
        raise UnknownStrategy(f'unknown shedding strategy "{name}" (valid: {valid})')
    return found
