"""A load history's broker churn as scenario events: which brokers left and joined between
snapshots, and the stops and starts that replay it, naming each leaving broker by its place in
the simulated cluster's creation order (the scenario's own added brokers included)."""

from __future__ import annotations

from ballast.sim.churn import BrokerChange, broker_changes, with_churn
from ballast.sim.events import AddBrokers, BrokerSelection, Event, ScaleRates, StopBrokers


def test_the_changes_between_snapshots() -> None:
    present = [frozenset("ab"), frozenset("ab"), frozenset("bc"), frozenset("abc")]
    assert broker_changes([0.0, 60.0, 120.0, 180.0], present) == [
        BrokerChange(120.0, joined=("c",), left=("a",)),
        BrokerChange(180.0, joined=("a",), left=()),  # missing from one snapshot: back later
    ]


def stops(event: Event) -> tuple[int, ...]:
    assert isinstance(event.action, StopBrokers) and event.action.graceful
    return event.action.brokers.indexes


def test_a_leaving_broker_is_stopped_by_its_place_in_creation_order() -> None:
    # The first brokers in name order: a = 0, b = 1. The scenario adds two more (2, 3) before
    # c joins (4); then a leaves, and later c.
    added = Event(30.0, AddBrokers(2))
    hot = Event(60.0, ScaleRates(3.0))
    changes = [
        BrokerChange(60.0, joined=("c",), left=("a",)),
        BrokerChange(90.0, joined=(), left=("c",)),
    ]
    events = with_churn(["b", "a"], changes, [added, hot])
    assert [e.at_s for e in events] == [30.0, 60.0, 60.0, 60.0, 90.0]
    assert events[0] == added and events[1] == hot  # on a tie, the scenario's own first
    assert events[2] == Event(60.0, AddBrokers(1))  # starts before stops
    assert stops(events[3]) == (0,)
    assert stops(events[4]) == (4,)


def test_a_broker_that_comes_back_is_a_new_one() -> None:
    changes = [
        BrokerChange(60.0, joined=(), left=("a",)),
        BrokerChange(120.0, joined=("a",), left=()),
        BrokerChange(180.0, joined=(), left=("a", "b")),
    ]
    events = with_churn(["a", "b"], changes, [])
    assert stops(events[0]) == (0,)
    assert events[1].action == AddBrokers(1)
    assert stops(events[2]) == (1, 2)  # b, and a's second life


def test_events_after_the_last_change_keep_their_order() -> None:
    late = Event(500.0, StopBrokers(BrokerSelection(count=1)))
    events = with_churn(["a"], [BrokerChange(60.0, joined=("b",), left=())], [late])
    assert events == (Event(60.0, AddBrokers(1)), late)
