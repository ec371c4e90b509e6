"""The controller event queue: order, preemption, deadlines, deferral, errors, metrics."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ballast.clock import Clock
from ballast.controller.event_types import NoBrokerError
from ballast.controller.events import (
    BadRequestError,
    ControllerEvent,
    DeadlineExceededError,
    ErrorClass,
    EventManager,
    PreemptedError,
    classify,
)
from ballast.coordination.election import NotLeaderError


@dataclass(frozen=True)
class Step(ControllerEvent):
    name = "step"
    label: str
    work_s: float = 0.0
    deadline_s: float | None = None


@dataclass(frozen=True)
class Fail(ControllerEvent):
    name = "fail"
    error: Exception


async def make(clock: Clock, log: list[str], lost: list[str] | None = None) -> EventManager:
    manager = EventManager(clock, on_lost_leadership=(lost.append if lost is not None else None))

    async def step(event: Step) -> str:
        await clock.sleep(event.work_s)
        log.append(event.label)
        return event.label.upper()

    async def fail(event: Fail) -> None:
        raise event.error

    manager.register(Step, step)
    manager.register(Fail, fail)
    manager.start()
    return manager


async def test_events_run_one_at_a_time_in_order(clock: Clock) -> None:
    log: list[str] = []
    manager = await make(clock, log)
    queued = [manager.put(Step(label, work_s=1.0)) for label in "abc"]
    assert manager.queue_size == 3
    assert [await q.result for q in queued] == ["A", "B", "C"]
    assert log == ["a", "b", "c"]
    assert clock.monotonic() == pytest.approx(3.0)  # serial, not parallel
    stats = manager.stats["step"]
    assert stats.count == 3 and stats.max_s == pytest.approx(1.0)
    assert stats.queue_s == pytest.approx(0 + 1 + 2)
    await manager.stop()


async def test_clear_and_put_preempts_the_queue(clock: Clock) -> None:
    log: list[str] = []
    manager = await make(clock, log)
    running = manager.put(Step("running", work_s=1.0))
    await clock.sleep(0.5)  # "running" is being processed now
    dropped = [manager.put(Step(label)) for label in ("x", "y")]
    urgent = manager.clear_and_put(Step("urgent"))
    assert await urgent.result == "URGENT"
    assert await running.result == "RUNNING"  # the one in progress completes
    for queued in dropped:
        with pytest.raises(PreemptedError):
            await queued.result
    assert log == ["running", "urgent"]
    await manager.stop()


async def test_halt_stops_the_handler_at_its_next_await_and_drops_the_rest(
    clock: Clock,
) -> None:
    log: list[str] = []
    manager = await make(clock, log)
    running = manager.put(Step("running", work_s=1.0))
    queued = manager.put(Step("queued"))
    manager.defer("later", 0.5, lambda: Step("deferred"))
    await clock.sleep(0.25)  # "running" sleeps in its handler
    manager.halt()
    for pending in (running, queued):
        with pytest.raises(PreemptedError):
            await pending.result
    await clock.sleep(5.0)
    assert log == []  # the running one never finished, the others never started
    await manager.stop()


async def test_deadlines(clock: Clock) -> None:
    log: list[str] = []
    manager = await make(clock, log)
    manager.put(Step("slow", work_s=5.0))
    late = manager.put(Step("late", deadline_s=clock.monotonic() + 2.0))
    on_time = manager.put(Step("on-time", deadline_s=clock.monotonic() + 10.0))
    with pytest.raises(DeadlineExceededError):
        await late.result
    assert await on_time.result == "ON-TIME"
    assert log == ["slow", "on-time"]
    await manager.stop()


async def test_deferred_events_replace_each_other_by_tag(clock: Clock) -> None:
    log: list[str] = []
    manager = await make(clock, log)
    manager.defer("shed", 10.0, lambda: Step("first"))
    await clock.sleep(5.0)
    manager.defer("shed", 10.0, lambda: Step("second"))  # replaces the first
    manager.defer("other", 1.0, lambda: Step("other"))
    await clock.sleep(20.0)
    assert log == ["other", "second"]
    manager.defer("gone", 1.0, lambda: Step("never"))
    manager.cancel_deferred("gone")
    await clock.sleep(5.0)
    assert log == ["other", "second"]
    await manager.stop()


async def test_one_error_classifier(clock: Clock) -> None:
    log: list[str] = []
    lost: list[str] = []
    manager = await make(clock, log, lost)
    bad = manager.put(Fail(BadRequestError("no such namespace")))
    stale = manager.put(Fail(NotLeaderError("fenced")))
    nobody = manager.put(Fail(NoBrokerError("no broker can take bundle t/ns/0x0_0x1")))
    broken = manager.put(Fail(RuntimeError("bug")))
    after = manager.put(Step("after"))
    with pytest.raises(BadRequestError):
        await bad.result
    with pytest.raises(NotLeaderError):
        await stale.result
    with pytest.raises(NoBrokerError):  # a state of the cluster, told to the caller
        await nobody.result
    with pytest.raises(RuntimeError):
        await broken.result
    assert await after.result == "AFTER"  # the loop survives every kind of error
    assert manager.faults == 1
    assert lost == ["not the leader (fenced)"]
    assert manager.stats["fail"].errors == {
        "bad-request": 1,
        "lost-leadership": 1,
        "unavailable": 1,
        "fault": 1,
    }
    assert classify(ValueError()) is ErrorClass.FAULT
    await manager.stop()


async def test_registration_rules(clock: Clock) -> None:
    manager = await make(clock, [])
    with pytest.raises(ValueError, match="already registered"):
        manager.register(Step, lambda e: clock.sleep(0))  # type: ignore[arg-type]

    @dataclass(frozen=True)
    class Unknown(ControllerEvent):
        name = "unknown"

    with pytest.raises(ValueError, match="no handler"):
        manager.put(Unknown())
    pending = manager.put(Step("pending", work_s=100))
    queued = manager.put(Step("queued"))
    await manager.stop()
    with pytest.raises(PreemptedError):
        await queued.result
    with pytest.raises(PreemptedError):
        await pending.result
