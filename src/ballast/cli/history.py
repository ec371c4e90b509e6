"""The leader's history writer as the runtime commands (``standalone``, ``broker``) build it
from the setting ``loadBalancerHistoryPath``: the runtime only knows a
:class:`~ballast.controller.history.HistorySink`; the Parquet writer comes from the pipeline
layer, which sits above it."""

from __future__ import annotations

from pathlib import Path

from ballast.cli.common import fail
from ballast.controller.history import HistorySink
from ballast.model.config import Settings


def history_sink(settings: Settings) -> HistorySink | None:
    """The sink for ``loadBalancerHistoryPath`` (None when it is empty). The directory is
    created now, so that a path the broker cannot write exits 2 at startup instead of failing
    every cycle."""
    text = settings.get_str("loadBalancerHistoryPath").strip()
    if not text:
        return None
    root = Path(text).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"loadBalancerHistoryPath {text}: {exc.strerror or exc}")
    # pyarrow loads only when a history is kept.
    from ballast.pipeline.history import LeaderHistoryWriter

    return HistorySink(write=LeaderHistoryWriter(root, settings.get_str("clusterName")))
