"""End to end: ``ballast topic``."""

from __future__ import annotations

import json
from collections.abc import Callable
from subprocess import CompletedProcess

Run = Callable[..., CompletedProcess[str]]


def test_topic_json_has_pulsar_fields(ballast: Run) -> None:
    result = ballast("topic", "my-topic-partition-1", "--json")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body == {
        "valid": True,
        "name": "persistent://public/default/my-topic-partition-1",
        "domain": "persistent",
        "tenant": "public",
        "cluster": None,
        "namespacePortion": "default",
        "namespace": "public/default",
        "localName": "my-topic-partition-1",
        "partitionIndex": 1,
        "isV2": True,
        "hash": 0x4A4C72A3,
        "bundle": "0x40000000_0x80000000",
    }


def test_the_largest_bundle_count_is_answered_at_once(ballast: Run) -> None:
    # 2^31 - 1 bundles of width 2: the boundaries are never listed (they would fill memory)
    result = ballast("topic", "my-topic-partition-1", "--bundles", "2147483647", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bundle"] == "0x4a4c72a2_0x4a4c72a4"  # hash 0x4a4c72a3


def test_topic_with_custom_boundaries_and_text_output(ballast: Run) -> None:
    result = ballast(
        "topic", "persistent://my-tenant/my-ns/test", "--boundaries", "0x0,0xc3000000,0xFFFFFFFF"
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["bundle"] == "0xc3000000_0xffffffff"
    assert lines["cluster"] == "null"


def test_invalid_topic_exits_2_with_reason(ballast: Run) -> None:
    result = ballast("topic", "persistent:///ns/t")
    assert result.returncode == 2
    assert 'InvalidTopicName: tenant "" is empty in "persistent:///ns/t"' in result.stderr
    assert result.stdout == ""
    as_json = ballast("topic", "persistent:///ns/t", "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {
        "valid": False,
        "error": 'InvalidTopicName: tenant "" is empty in "persistent:///ns/t"',
    }


def test_invalid_bundle_options_exit_2(ballast: Run) -> None:
    for args in (
        ["--bundles", "0"],
        ["--boundaries", "0x10,0xffffffff"],
        ["--bundles", "2", "--boundaries", "0x0,0xffffffff"],
    ):
        result = ballast("topic", "t", *args)
        assert result.returncode == 2, args
        assert "error:" in result.stderr
        assert "Traceback" not in result.stderr
    # a count that is not one gave a usage error and, with --json, no JSON at all
    for count, said in (
        ("abc", "--bundles must be a whole number of bundles, not 'abc'"),
        ("4.0", "--bundles must be a whole number of bundles, not '4.0'"),
        ("1" * 5000, "--bundles must be in 1..2147483647, not a number of 5000 digits"),
    ):
        result = ballast("topic", "t", "--bundles", count, "--json")
        assert result.returncode == 2
        assert json.loads(result.stdout) == {"valid": False, "error": said}
