"""The leader's history sink as the setting ``loadBalancerHistoryPath`` asks for it: the
runtime only knows a :class:`~ballast.controller.history.HistorySink`; its Parquet writer
comes from this layer, which sits above the runtime. Used by the runtime commands
(``standalone``, ``broker``) and by simulations."""

from __future__ import annotations

import os
from pathlib import Path

from ballast.controller.history import BlockingRunner, HistorySink, in_thread
from ballast.model.config import Settings


class HistoryPathError(ValueError):
    """``loadBalancerHistoryPath`` names a directory that cannot be made (the message says
    why)."""


def leader_history_sink(
    settings: Settings, *, subdir: str | None = None, run_blocking: BlockingRunner = in_thread
) -> HistorySink | None:
    """The sink for ``loadBalancerHistoryPath`` (None when it is empty), writing under
    ``subdir`` of it when given. The directory is made now, so that a path that cannot be
    written fails at startup (:class:`HistoryPathError`) rather than at every cycle."""
    text = settings.get_str("loadBalancerHistoryPath").strip()
    if not text:
        return None
    root = Path(text).expanduser() / (subdir or "")
    if root.exists() and not root.is_dir():
        raise HistoryPathError(f"loadBalancerHistoryPath {text}: {root} is a file, not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HistoryPathError(f"loadBalancerHistoryPath {text}: {exc.strerror or exc}") from None
    if not os.access(root, os.W_OK | os.X_OK):  # it exists: a read-only mount, another's
        raise HistoryPathError(f"loadBalancerHistoryPath {text}: cannot write in {root}")
    # pyarrow loads only when a history is kept.
    from ballast.pipeline.history import LeaderHistoryWriter

    writer = LeaderHistoryWriter(root, settings.get_str("clusterName"))
    return HistorySink(write=writer, run_blocking=run_blocking)
