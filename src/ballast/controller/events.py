"""The controller's event queue (Kafka's ``ControllerEventManager``): one task drains one queue,
so controller state needs no locks.

- ``put(event)`` queues an event and returns its :class:`QueuedEvent`, whose ``result`` future
  completes with the handler's return value or error;
- ``clear_and_put(event)`` drops everything queued (each dropped event's future fails with
  :class:`PreemptedError`) and queues ``event`` — for events that make the rest moot (resign);
- an event may carry a deadline: dequeued after it, its handler does not run
  (:class:`DeadlineExceededError`);
- ``defer(tag, delay_s, factory)`` queues ``factory()`` after a delay; a later ``defer`` with the
  same tag replaces the earlier one (periodic tasks, debouncing);
- per event type: count, total and max processing time, total queue time; the queue size.

One error classifier decides what a handler's exception means: a bad request is the caller's
(the future fails, nothing else happens); lost leadership triggers the ``on_lost_leadership``
callback; anything else is a fault — counted, logged, and the loop carries on.

Concurrency contract: ``put``/``defer`` are called on the event loop's thread; handlers run one
at a time in the manager's task.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ballast.clock import Cancellable, Clock
from ballast.coordination.election import NotLeaderError
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)


class ControllerEvent:
    """Base of every controller event. Subclasses are small frozen dataclasses; ``name`` keys
    the metrics and the handler table."""

    name: ClassVar[str] = "event"
    deadline_s: float | None = None  # absolute, on the manager's clock


class BadRequestError(Exception):
    """The event asked for something invalid (unknown namespace, bad bundle): the caller's
    problem, reported to it, nothing more."""


class UnavailableError(Exception):
    """Nothing can serve the event now (no broker may take a bundle): the caller is told,
    and it is not a fault of the controller."""


class PreemptedError(Exception):
    """The event was dropped from the queue by ``clear_and_put``."""


class DeadlineExceededError(Exception):
    """The event waited past its deadline and was not processed."""


class ErrorClass(enum.Enum):
    BAD_REQUEST = "bad-request"
    UNAVAILABLE = "unavailable"
    LOST_LEADERSHIP = "lost-leadership"
    FAULT = "fault"


def classify(exc: BaseException) -> ErrorClass:
    """The one place that decides what a handler's error means."""
    if isinstance(exc, BadRequestError):
        return ErrorClass.BAD_REQUEST
    if isinstance(exc, UnavailableError):
        return ErrorClass.UNAVAILABLE
    if isinstance(exc, NotLeaderError):
        return ErrorClass.LOST_LEADERSHIP
    return ErrorClass.FAULT


@dataclass(slots=True)
class QueuedEvent:
    event: ControllerEvent
    enqueued_at: float
    result: asyncio.Future[Any]


@dataclass(slots=True)
class EventStats:
    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    queue_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)


Handler = Callable[[Any], Awaitable[Any]]


class EventManager:
    """One queue, one task, handlers routed by event type."""

    def __init__(
        self,
        clock: Clock,
        *,
        on_lost_leadership: Callable[[str], None] | None = None,
        name: str = "controller-events",
    ) -> None:
        self._clock = clock
        self._name = name
        self._handlers: dict[type[ControllerEvent], Handler] = {}
        self._queue: deque[QueuedEvent] = deque()
        self._ready = asyncio.Event()
        self._deferred: dict[str, Cancellable] = {}
        self._on_lost_leadership = on_lost_leadership
        self._task: asyncio.Task[None] | None = None
        self.stats: dict[str, EventStats] = {}
        self.faults = 0
        self.current: str | None = None

    def register(self, event_type: type[ControllerEvent], handler: Handler) -> None:
        """Route events of ``event_type`` to ``handler`` (one handler per type)."""
        if event_type in self._handlers:
            raise ValueError(f"a handler for {event_type.__name__} is already registered")
        self._handlers[event_type] = handler

    @property
    def queue_size(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        self._task = spawn(self._name, self._drain())

    async def stop(self) -> None:
        """Stop processing; queued events fail with PreemptedError; deferred ones are dropped."""
        for handle in self._deferred.values():
            handle.cancel()
        self._deferred.clear()
        self._fail_queued()
        await cancel_and_wait(self._task)
        self._task = None

    def halt(self) -> None:
        """Stop now, from any code on the loop (a handler that found leadership gone too):
        no further event is handled — queued ones fail with PreemptedError, deferred ones are
        dropped — and the one being handled is cancelled at its next await. :meth:`stop`
        still waits for the task to end."""
        for handle in self._deferred.values():
            handle.cancel()
        self._deferred.clear()
        self._fail_queued()
        if self._task is not None:
            self._task.cancel()

    def put(self, event: ControllerEvent) -> QueuedEvent:
        if type(event) not in self._handlers:
            raise ValueError(f"no handler for {type(event).__name__}")
        queued = QueuedEvent(
            event, self._clock.monotonic(), asyncio.get_running_loop().create_future()
        )
        self._queue.append(queued)
        self._ready.set()
        return queued

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        self._fail_queued()
        return self.put(event)

    def defer(self, tag: str, delay_s: float, factory: Callable[[], ControllerEvent]) -> None:
        """Queue ``factory()`` after ``delay_s``, replacing an earlier deferral of ``tag``."""
        previous = self._deferred.pop(tag, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._deferred.pop(tag, None)
            self.put(factory())

        self._deferred[tag] = self._clock.call_later(delay_s, fire)

    def cancel_deferred(self, tag: str) -> None:
        handle = self._deferred.pop(tag, None)
        if handle is not None:
            handle.cancel()

    # -- the loop ---------------------------------------------------------------------------

    def _fail_queued(self) -> None:
        while self._queue:
            queued = self._queue.popleft()
            if not queued.result.done():
                queued.result.set_exception(PreemptedError(queued.event.name))
                queued.result.exception()  # mark retrieved: nobody may be waiting

    async def _drain(self) -> None:
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            queued = self._queue.popleft()
            await self._process(queued)

    async def _process(self, queued: QueuedEvent) -> None:
        event = queued.event
        stats = self.stats.setdefault(event.name, EventStats())
        started = self._clock.monotonic()
        stats.queue_s += started - queued.enqueued_at
        if event.deadline_s is not None and started > event.deadline_s:
            self._settle_error(queued, DeadlineExceededError(event.name))
            return
        self.current = event.name
        try:
            value = await self._handlers[type(event)](event)
        except asyncio.CancelledError:
            self._settle_error(queued, PreemptedError(event.name))
            raise
        except Exception as exc:
            kind = classify(exc)
            stats.errors[kind.value] = stats.errors.get(kind.value, 0) + 1
            if kind is ErrorClass.FAULT:
                self.faults += 1
                log.exception("controller event %s failed", event.name)
            elif kind is ErrorClass.LOST_LEADERSHIP and self._on_lost_leadership is not None:
                self._on_lost_leadership(str(exc))
            self._settle_error(queued, exc)
        else:
            if not queued.result.done():
                queued.result.set_result(value)
        finally:
            self.current = None
            elapsed = self._clock.monotonic() - started
            stats.count += 1
            stats.total_s += elapsed
            stats.max_s = max(stats.max_s, elapsed)

    @staticmethod
    def _settle_error(queued: QueuedEvent, exc: BaseException) -> None:
        if not queued.result.done():
            queued.result.set_exception(exc)
            queued.result.exception()  # the caller may not wait; don't warn about it
