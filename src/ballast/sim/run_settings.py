"""A simulated run's settings: the scenario's, then the strategy profile's, then ``--set``;
the name the run goes by; the warnings they deserve; the leader's history sink."""

from __future__ import annotations

from ballast.controller.history import HistorySink, inline
from ballast.model.config import ConfigError, Settings, load_settings
from ballast.pipeline.leader_sink import HistoryPathError, leader_history_sink
from ballast.sim.run_records import RunOptions
from ballast.sim.scenario import Scenario, setting_text
from ballast.sim.strategies import PROFILES, strategy_profile


def effective_settings(scenario: Scenario, options: RunOptions) -> tuple[Settings, str]:
    """The run's settings (scenario, then the strategy's profile, then ``overrides``) and
    the strategy's name."""
    overrides = list(scenario.settings_overrides())
    if options.strategy is not None:
        overrides += strategy_profile(options.strategy).overrides()
    overrides += list(options.overrides)
    settings = load_settings(overrides=overrides, strict=True).settings
    shedding = settings.get_str("loadBalancerLoadSheddingStrategy")
    if options.strategy is not None:
        profiled = strategy_profile(options.strategy).settings["loadBalancerLoadSheddingStrategy"]
        if shedding != profiled:  # the run would be named for a strategy it did not run
            raise ConfigError(
                f"loadBalancerLoadSheddingStrategy={shedding} contradicts the strategy "
                f"{options.strategy}, which sheds with {profiled}"
            )
    # named for what it runs: a profile whose placement --set changed is not that profile
    return settings, settings_label(settings)


def settings_warnings(scenario: Scenario, overrides: tuple[str, ...]) -> tuple[str, ...]:
    """What the scenario's settings and ``overrides`` deserve a word about (a deprecated key
    that does nothing, say); the profiles set none such, so every run shares them."""
    return load_settings(
        overrides=[*scenario.settings_overrides(), *overrides], strict=True
    ).warnings


def replaced_by_profile(scenario: Scenario, strategy: str) -> tuple[str, ...]:
    """The scenario's own ``[settings]`` that the strategy's profile sets otherwise (the
    profile wins: the run is that strategy's), each as a warning to give."""
    profile = strategy_profile(strategy)
    mine = load_settings(overrides=scenario.settings_overrides(), strict=True).settings
    theirs = load_settings(overrides=profile.overrides(), strict=True).settings
    return tuple(
        f"the scenario's {key}={setting_text(scenario.settings[key])} is replaced by the "
        f"strategy {strategy}'s {setting_text(theirs[key])}"
        for key in sorted(profile.settings)
        if key in scenario.settings and mine[key] != theirs[key]
    )


def settings_label(settings: Settings) -> str:
    """The name of a run without ``--strategy``: the profile whose settings it has, or, where
    it pairs them otherwise, its shedding and placement strategies (``ballast+
    least_long_term_message_rate``), or the profile's name with ``+evenly`` or ``+unevenly``
    where only ``loadBalancerDistributeBundlesEvenlyEnabled`` differs — never a profile's
    name alone for a run that is not that profile."""
    for name, profile in PROFILES.items():
        parsed = load_settings(overrides=profile.overrides(), strict=True).settings
        if all(settings[key] == parsed[key] for key in profile.settings):
            return name
    shedding = settings.get_str("loadBalancerLoadSheddingStrategy")
    placement = settings.get_str("loadBalancerLoadPlacementStrategy")
    for name, profile in PROFILES.items():
        if (shedding, placement) == (
            profile.settings["loadBalancerLoadSheddingStrategy"],
            profile.settings["loadBalancerLoadPlacementStrategy"],
        ):
            evenly = settings.get_bool("loadBalancerDistributeBundlesEvenlyEnabled")
            return f"{name}+evenly" if evenly else f"{name}+unevenly"
    return f"{shedding}+{placement}"


def history_sink(settings: Settings, subdir: str | None) -> HistorySink | None:
    """The leader's load history as a running cluster keeps it (``loadBalancerHistoryPath``;
    None when empty), written inline: on virtual time a write takes no simulated time, and
    every cycle's snapshot is written (none skipped), so the same seed gives the same
    history. Raises :class:`ConfigError` if the directory cannot be made."""
    try:
        return leader_history_sink(settings, subdir=subdir, run_blocking=inline)
    except HistoryPathError as exc:
        raise ConfigError(str(exc)) from None
