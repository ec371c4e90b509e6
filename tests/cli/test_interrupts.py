"""Ctrl-C is noted even where Python swallows its ``KeyboardInterrupt``."""

from __future__ import annotations

import signal

import pytest

from ballast.cli.interrupts import NotedInterrupts


class _SignalledWhileDropped:
    """Receives SIGINT inside ``__del__``, where Python prints the exception as ignored."""

    def __del__(self) -> None:
        # The handler runs before __del__ returns; its KeyboardInterrupt goes nowhere.
        signal.raise_signal(signal.SIGINT)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_ctrl_c_is_still_seen() -> None:
    before = signal.getsignal(signal.SIGINT)
    with NotedInterrupts() as noted:
        _SignalledWhileDropped()  # made and dropped at once
    assert noted.seen
    assert signal.getsignal(signal.SIGINT) is before


def test_a_quiet_block_sees_nothing() -> None:
    with NotedInterrupts() as noted:
        pass
    assert not noted.seen
