"""Configuration: Pulsar's ``loadBalancer*`` keys with their defaults and units, read from a
``broker.conf``-style file, the environment and ``--set``, split into per-component configs."""

from ballast.model.config.components import (
    AvgShedderConfig,
    BallastShedderConfig,
    NamespaceConfig,
    OverloadShedderConfig,
    PlacementConfig,
    ReportConfig,
    SheddingConfig,
    SplitConfig,
    ThresholdShedderConfig,
    TransferShedderConfig,
    UniformShedderConfig,
    resource_weights,
)
from ballast.model.config.loader import (
    ENV_PREFIX,
    ConfigError,
    Loaded,
    Settings,
    decode_conf,
    defaults,
    load_settings,
    nearest_key,
)
from ballast.model.config.setting import Kind, Setting
from ballast.model.config.settings import SETTINGS, SETTINGS_BY_KEY

__all__ = [
    "ENV_PREFIX",
    "SETTINGS",
    "SETTINGS_BY_KEY",
    "AvgShedderConfig",
    "BallastShedderConfig",
    "ConfigError",
    "Kind",
    "Loaded",
    "NamespaceConfig",
    "OverloadShedderConfig",
    "PlacementConfig",
    "ReportConfig",
    "Setting",
    "Settings",
    "SheddingConfig",
    "SplitConfig",
    "ThresholdShedderConfig",
    "TransferShedderConfig",
    "UniformShedderConfig",
    "decode_conf",
    "defaults",
    "load_settings",
    "nearest_key",
    "resource_weights",
]
