"""The strategies a simulation compares, each as the settings Pulsar pairs it with: the
modular load manager's shedders (``overload``, ``threshold``, ``uniform``) with its default
placement (``least_long_term_message_rate``), AvgShedder (``avg``) as both shedding and
placement (as PIP-364 requires), the extensible load manager's ``transfer`` with its placement
(``least_resource_usage_with_weight``), and Ballast's own strategy with its own placement.
Every other setting stays as the scenario (and ``--set``) gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class StrategyProfile:
    name: str
    description: str
    settings: Mapping[str, str] = field(default_factory=dict)

    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.settings.items()]


def _profile(name: str, description: str, shedding: str, placement: str) -> StrategyProfile:
    return StrategyProfile(
        name,
        description,
        MappingProxyType(
            {
                "loadBalancerLoadSheddingStrategy": shedding,
                "loadBalancerLoadPlacementStrategy": placement,
            }
        ),
    )


_MODULAR_PLACEMENT = "least_long_term_message_rate"

PROFILES: Mapping[str, StrategyProfile] = MappingProxyType(
    {
        "overload": _profile(
            "overload", "Pulsar's OverloadShedder (modular)", "overload", _MODULAR_PLACEMENT
        ),
        "threshold": _profile(
            "threshold",
            "Pulsar's ThresholdShedder (modular, Pulsar's default)",
            "threshold",
            _MODULAR_PLACEMENT,
        ),
        "uniform": _profile(
            "uniform", "Pulsar's UniformLoadShedder (modular)", "uniform", _MODULAR_PLACEMENT
        ),
        "transfer": _profile(
            "transfer",
            "Pulsar's TransferShedder (extensible)",
            "transfer",
            "least_resource_usage_with_weight",
        ),
        "avg": _profile(
            "avg", "Pulsar's AvgShedder, shedding and placement (modular, PIP-364)", "avg", "avg"
        ),
        "ballast": StrategyProfile(
            "ballast",
            "Ballast's own strategy and placement (placement by predicted load, not by the "
            "namespace's bundle counts)",
            MappingProxyType(
                {
                    "loadBalancerLoadSheddingStrategy": "ballast",
                    "loadBalancerLoadPlacementStrategy": "ballast",
                    "loadBalancerDistributeBundlesEvenlyEnabled": "false",
                }
            ),
        ),
    }
)

PULSAR_STRATEGIES = ("overload", "threshold", "uniform", "transfer", "avg")


class UnknownProfile(ValueError):
    def __str__(self) -> str:
        return str(self.args[0])


def strategy_profile(name: str) -> StrategyProfile:
    """The profile named ``name``; raises :class:`UnknownProfile` listing the valid ones."""
    found = PROFILES.get(name)
    if found is None:
        raise UnknownProfile(f'unknown strategy "{name}" (valid: {", ".join(PROFILES)})')
    return found
