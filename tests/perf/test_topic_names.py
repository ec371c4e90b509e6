"""The topics a perf run uses: short names completed as Pulsar completes them, but to
non-persistent topics (the only kind Ballast serves)."""

from __future__ import annotations

from ballast.perf.run import topic_names


def test_short_names_are_completed_as_pulsar_completes_them() -> None:
    # "t/ns/x" was glued under public/default: non-persistent://public/default/t/ns/x
    assert topic_names(["x", "t/ns/x", "persistent://a/b/c"], 1) == (
        "non-persistent://public/default/x",
        "non-persistent://t/ns/x",
        "persistent://a/b/c",
    )


def test_other_short_names_are_left_for_the_parse_to_refuse() -> None:
    assert topic_names(["a/b", "p/c/n/t"], 1) == ("a/b", "p/c/n/t")


def test_a_topic_count_numbers_each_name() -> None:
    assert topic_names(["t/ns/x"], 2) == ("non-persistent://t/ns/x-0", "non-persistent://t/ns/x-1")
