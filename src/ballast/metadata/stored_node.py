"""A record of the in-process tree (:mod:`ballast.metadata.memory`) as the server holds it:
value, versions, ZooKeeper's transaction ids, children, and the stat and watch snapshot last
handed out (reused while they stay true: every read makes one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ballast.metadata.store import Stat
from ballast.metadata.watching import WatchSnapshot


@dataclass(slots=True)
class StoredNode:
    value: bytes
    version: int
    created_ms: int
    modified_ms: int
    ephemeral_owner: int | None
    children: set[str] = field(default_factory=set)
    # Transaction ids of creation, last data change and last children change (as ZooKeeper's).
    czxid: int = 0
    mzxid: int = 0
    pzxid: int = 0
    # The children in name order as of ``pzxid``: listing a namespace's topics (every broker
    # does, for every namespace) would otherwise sort thousands of names each time.
    listed: tuple[int, list[str]] | None = None
    # The last Stat and WatchSnapshot made, handed out again while the fields they copy stay
    # the same (every read makes one, and a report is read by every broker).
    made_stat: Stat | None = field(default=None, repr=False, compare=False)
    made_snapshot: WatchSnapshot | None = field(default=None, repr=False, compare=False)

    def sorted_children(self) -> list[str]:
        listed = self.listed
        if listed is None or listed[0] != self.pzxid:
            listed = self.listed = (self.pzxid, sorted(self.children))
        return list(listed[1])

    def stat(self) -> Stat:
        made = self.made_stat
        if (
            made is None
            or made.version != self.version
            or made.modified_ms != self.modified_ms
            or made.created_ms != self.created_ms
            or made.ephemeral_owner != self.ephemeral_owner
        ):
            made = self.made_stat = Stat(
                self.version, self.created_ms, self.modified_ms, self.ephemeral_owner
            )
        return made

    def snapshot(self) -> WatchSnapshot:
        made = self.made_snapshot
        if (
            made is None
            or made.czxid != self.czxid
            or made.mzxid != self.mzxid
            or made.pzxid != self.pzxid
        ):
            made = self.made_snapshot = WatchSnapshot(self.czxid, self.mzxid, self.pzxid)
        return made


Change = tuple[str, StoredNode | None]  # a record written (node) or deleted (None)
