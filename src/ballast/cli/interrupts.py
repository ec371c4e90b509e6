"""Ctrl-C that is never lost. Python raises ``KeyboardInterrupt`` wherever the main thread is
when SIGINT arrives; inside a weakref callback or a ``__del__`` it is printed as "Exception
ignored" and the program carries on as if nothing happened. :class:`NotedInterrupts` also
records the signal, so a command can tell afterwards that it was interrupted."""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType


class NotedInterrupts:
    """Within ``with``: SIGINT raises ``KeyboardInterrupt`` as usual and sets :attr:`seen`.
    Outside the main thread (where signals cannot be handled) it only does nothing."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: object = None
        self._installed = False

    def _handle(self, _signum: int, _frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def __enter__(self) -> NotedInterrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(
        self,
        _kind: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
