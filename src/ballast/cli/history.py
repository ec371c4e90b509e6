"""The leader's history writer as the runtime commands (``standalone``, ``broker``) build it
from the setting ``loadBalancerHistoryPath`` (:mod:`ballast.pipeline.leader_sink`), with a
path that cannot be written refused at startup."""

from __future__ import annotations

from ballast.cli.common import fail
from ballast.controller.history import HistorySink
from ballast.model.config import Settings
from ballast.pipeline.leader_sink import HistoryPathError, leader_history_sink


def history_sink(settings: Settings) -> HistorySink | None:
    """The sink for ``loadBalancerHistoryPath`` (None when it is empty); a directory that
    cannot be made exits 2 at startup instead of failing every cycle."""
    try:
        return leader_history_sink(settings)
    except HistoryPathError as exc:
        fail(str(exc))
