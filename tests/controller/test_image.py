"""The leader's image hands out frozen snapshots: later changes never show in an earlier one,
and a snapshot taken after only a preallocation reuses what did not change."""

from __future__ import annotations

from ballast.controller.image import ClusterImage
from ballast.model.loaddata import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    SystemResourceUsage,
)
from ballast.model.naming import NamespaceName

A = "t/ns/0x00000000_0x80000000"
B = "t/ns/0x80000000_0xffffffff"


def report(*bundles: str) -> LocalBrokerData:
    stats = {b: NamespaceBundleStats(msg_rate_in=10.0, topics=1) for b in bundles}
    return LocalBrokerData().updated(SystemResourceUsage(), stats)


def test_snapshots_stay_frozen_and_share_unchanged_brokers() -> None:
    image = ClusterImage()
    image.update_all({"b1": (report(A), 1), "b2": (report(), 2)})
    first = image.snapshot()
    assert set(first.bundles) == {A}
    image.preallocate(B, "b2", BundleData.new_default(), True)
    second = image.snapshot()
    # The earlier snapshot saw nothing of it.
    assert set(first.bundles) == {A}
    assert first.brokers["b2"].preallocated_bundle_data == {}
    assert first.preallocated_broker(B) is None
    # The new one did; the unchanged broker's data is the very same object.
    assert set(second.bundles) == {A, B}
    assert second.preallocated_broker(B) == "b2"
    assert second.namespace_bundle_count("b2", "t/ns") == 1
    assert second.brokers["b1"] is first.brokers["b1"]
    assert second.bundles is not first.bundles
    # Nothing changed: the same bundle data is handed out again.
    assert image.snapshot().bundles is second.bundles
    # The broker reports the bundle: the preallocation is reaped, averages updated.
    image.update_all({"b1": (report(A), 1), "b2": (report(B), 2)})
    third = image.snapshot()
    assert third.preallocated_broker(B) is None
    assert third.bundles[B].short_term_data.num_samples == 1
    assert second.bundles[B].short_term_data.num_samples == 0
    image.forget_bundle(B)
    assert B not in image.snapshot().bundles
    assert B in third.bundles
    image.brokers["b2"].draining = True
    assert set(image.snapshot().brokers) == {"b1"}


def test_owner_indexes_follow_every_change() -> None:
    image = ClusterImage()
    other = "t/ns-2/0x00000000_0xffffffff"  # a namespace whose name extends "t/ns"
    ns, ns2 = NamespaceName.parse("t/ns"), NamespaceName.parse("t/ns-2")
    assert image.set_owners(ns, {A: "b1", B: "b1"}) == {}
    assert image.set_owners(ns2, {other: "b2"}) == {}
    assert image.bundles_owned_by("b1") == [A, B]
    image.set_owner(B, "b2")  # a finished transfer
    assert image.bundles_owned_by("b1") == [A]
    assert image.bundles_owned_by("b2") == [other, B]  # in name order
    assert list(image.owners) == [A, B, other]  # a new owner keeps the bundle's place
    # A rescan of t/ns without A: A lost its owner, t/ns-2 is untouched.
    assert image.set_owners(ns, {B: "b2"}) == {A: "b1"}
    assert image.owners == {B: "b2", other: "b2"}
    assert image.drop_owner(B) == "b2" and image.drop_owner(B) is None
    image.forget_bundle(other)
    assert image.owners == {} and image.bundles_owned_by("b2") == []


def test_a_deleted_namespace_leaves_nothing_in_the_placements_figures() -> None:
    """A bundle placed and deleted before its broker reported it stayed preallocated (and in
    the averages) for good: 700 ghost bundles after 280 namespaces created and deleted, each
    placement slower and its brokers' loads overstated."""
    image = ClusterImage()
    image.update_all({"b1": (report(), 1), "b2": (report(), 2)})
    kept = "t/ns-2/0x00000000_0xffffffff"  # a namespace whose name extends "t/ns"
    image.preallocate(A, "b1", BundleData.new_default(), True)
    image.preallocate(B, "b2", BundleData.new_default(), True)
    image.preallocate(kept, "b2", BundleData.new_default(), True)
    image.forget_namespace(NamespaceName.parse("t/ns"))
    snapshot = image.snapshot()
    assert set(snapshot.bundles) == {kept}
    assert snapshot.brokers["b1"].preallocated_bundle_data == {}
    assert set(snapshot.brokers["b2"].preallocated_bundle_data) == {kept}
    assert snapshot.namespace_bundle_count("b2", "t/ns") == 0


def test_preallocations_go_with_a_release_and_with_a_change_of_policies() -> None:
    """Placement sends a preallocated bundle back to its broker unchecked, and a broker whose
    report did not change enough to be rewritten never reaped it: a bundle unloaded went back
    to a broker an isolation policy set since excluded."""
    image = ClusterImage()
    image.update_all({"b1": (report(), 1), "b2": (report(), 2)})
    image.preallocate(A, "b1", BundleData.new_default(), True)
    image.preallocate(B, "b2", BundleData.new_default(), True)
    image.drop_preallocations(A)  # released (an admin unload)
    assert (image.snapshot().preallocated_broker(A), image.snapshot().preallocated_broker(B)) == (
        None,
        "b2",
    )
    image.preallocate(A, "b1", BundleData.new_default(), False)
    image.set_owner(B, "b2")  # acquired, not yet reported: it keeps its preallocation
    image.drop_preallocations()  # the policies changed: what no broker owns is placed afresh
    after = image.snapshot()
    assert (after.preallocated_broker(A), after.preallocated_broker(B)) == (None, "b2")
