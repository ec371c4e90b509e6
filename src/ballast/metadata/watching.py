"""Turning two observations of a watched record into the notifications between them.

Both backends describe a record by the transaction ids ZooKeeper keeps: ``czxid`` (its
creation), ``mzxid`` (its last data change) and ``pzxid`` (the last change of its children).
Comparing two such snapshots tells what happened in between, which is how a watch reports
changes it could not see one by one (ZooKeeper's one-shot watches, a reconnect)."""

from __future__ import annotations

from dataclasses import dataclass

from ballast.metadata.store import EventType, Notification


@dataclass(frozen=True, slots=True)
class WatchSnapshot:
    czxid: int
    mzxid: int
    pzxid: int


def notifications_between(
    path: str, before: WatchSnapshot | None, after: WatchSnapshot | None
) -> list[Notification]:
    """What a watch on ``path`` reports for the change from ``before`` to ``after`` (None:
    the record did not exist)."""
    if before is None and after is None:
        return []
    if after is None:
        return [Notification(EventType.DELETED, path)]
    if before is None or before.czxid != after.czxid:
        events = [] if before is None else [Notification(EventType.DELETED, path)]
        events.append(Notification(EventType.CREATED, path))
        if after.pzxid != after.czxid:
            events.append(Notification(EventType.CHILDREN_CHANGED, path))
        return events
    events = []
    if before.mzxid != after.mzxid:
        events.append(Notification(EventType.MODIFIED, path))
    if before.pzxid != after.pzxid:
        events.append(Notification(EventType.CHILDREN_CHANGED, path))
    return events
