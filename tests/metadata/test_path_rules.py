"""The rules every metadata path is checked against, and their memo."""

from __future__ import annotations

import pytest

from ballast.metadata import store
from ballast.model.naming import MEMOISED_NAME_LENGTH


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("a/b", "must start with /"),
        ("/a/", "must not end with /"),
        ("/a//b", "empty segment"),
        ("/a/../b", 'segment ".." is not allowed'),
        ("/a/\x01", "control characters are not allowed"),
        # ZooKeeper refuses these too (Java sees a character past U+FFFF as two surrogates):
        # a store of another backend took them, and a lone surrogate failed deep in kazoo
        ("/a/\udcff", "character U\\+DCFF is not allowed"),
        ("/a/\ue000", "character U\\+E000 is not allowed"),
        ("/a/\ufff0", "character U\\+FFF0 is not allowed"),
        ("/a/\U0001f600", "character U\\+1F600 is not allowed"),
    ],
)
def test_paths_breaking_zookeepers_rules_are_refused(path: str, reason: str) -> None:
    with pytest.raises(store.InvalidPathError, match=reason):
        store.validate_path(path)


def test_paths_in_other_scripts_are_taken() -> None:
    for path in ("/a/caf\u00e9", "/a/\u6771\u4eac", "/a/\uffef"):
        store.validate_path(path)


def test_long_paths_are_checked_but_not_memoised() -> None:
    """The memo is bounded by entries: paths of a megabyte each would grow it without bound."""
    store.validate_path.cache_clear()
    long_path = "/a/" + "x" * (MEMOISED_NAME_LENGTH + 1)
    store.validate_path(long_path)
    with pytest.raises(store.InvalidPathError):
        store.validate_path(long_path + "/..")
    assert store.validate_path.cache_info().currsize == 0
    store.validate_path("/a/b")
    assert store.validate_path.cache_info().currsize == 1
