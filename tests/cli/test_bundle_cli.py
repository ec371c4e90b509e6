"""End to end: ``ballast bundle ranges`` and ``ballast bundle split``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

Run = Callable[..., CompletedProcess[str]]


def test_ranges_json(ballast: Run) -> None:
    result = ballast("bundle", "ranges", "--count", "3", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "numBundles": 3,
        "boundaries": ["0x00000000", "0x55555555", "0xaaaaaaaa", "0xffffffff"],
        "ranges": [
            "0x00000000_0x55555555",
            "0x55555555_0xaaaaaaaa",
            "0xaaaaaaaa_0xffffffff",
        ],
    }


def test_ranges_of_a_large_count_are_written_as_they_are_made(ballast: Run) -> None:
    count = 200_000  # more than one chunk of the writer
    as_json = json.loads(ballast("bundle", "ranges", "--count", str(count), "--json").stdout)
    segment = 2**32 // count
    assert len(as_json["boundaries"]) == count + 1 and len(as_json["ranges"]) == count
    assert as_json["boundaries"][65536] == f"0x{65536 * segment:08x}"
    assert as_json["ranges"][-1] == f"0x{(count - 1) * segment:08x}_0xffffffff"
    lines = ballast("bundle", "ranges", "--count", str(count)).stdout.splitlines()
    assert lines[0].split()[1:] == as_json["boundaries"]
    assert lines[1:] == as_json["ranges"]


def test_ranges_rejects_bad_count(ballast: Run) -> None:
    result = ballast("bundle", "ranges", "--count", "0")
    assert result.returncode == 2 and "number of bundles 0" in result.stderr


def test_split_in_parts_and_default(ballast: Run) -> None:
    parts = ballast("bundle", "split", "0x00000000_0xFFFFFFFF", "--parts", "4")
    assert parts.stdout.split() == [
        "0x00000000_0x3fffffff",
        "0x3fffffff_0x7ffffffe",
        "0x7ffffffe_0xbffffffd",
        "0xbffffffd_0xffffffff",
    ]
    default = ballast("bundle", "split", "0x40000000_0x80000000")
    assert default.stdout.split() == ["0x40000000_0x60000000", "0x60000000_0x80000000"]
    # a bundle written with its namespace, as the docs and the admin API write it
    named = ballast("bundle", "split", "public/default/0x40000000_0x80000000")
    assert named.returncode == 0 and named.stdout == default.stdout
    v1 = ballast("bundle", "split", "acme/us-west/orders/0x40000000_0x80000000")
    assert v1.returncode == 0 and v1.stdout == default.stdout  # tenant/cluster/namespace
    for bad, said in (("a b/c/", 'tenant "a b" has characters'), ("/", 'namespace "" is empty')):
        refused = ballast("bundle", "split", f"{bad}0x40000000_0x80000000")
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr


def test_split_at_positions(ballast: Run) -> None:
    result = ballast(
        "bundle", "split", "0x00000000_0x80000000", "--positions=0x60000000,0x20000000"
    )
    assert result.stdout.split() == [
        "0x00000000_0x20000000",
        "0x20000000_0x60000000",
        "0x60000000_0x80000000",
    ]
    outside = ballast("bundle", "split", "0x00000000_0x80000000", "--positions=0x80000000")
    assert outside.returncode == 2 and "strictly inside" in outside.stderr
    decimal = ballast("bundle", "split", "0x00000000_0xffffffff", "--positions=0100000000")
    assert decimal.stdout.split() == ["0x00000000_0x05f5e100", "0x05f5e100_0xffffffff"]
    negative = ballast("bundle", "split", "0x00000000_0xffffffff", "--positions=-1")
    assert negative.returncode == 2 and 'position "-1" is not a hash position' in negative.stderr


def test_specified_positions_algorithm_needs_two_owned_topics(ballast: Run, tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text("a\n")
    result = ballast(
        "bundle",
        "split",
        "0x00000000_0xffffffff",
        "--algorithm",
        "specified_positions_divide",
        "--positions=0x10",
        "--topics-file",
        str(topics),
        "--json",
    )
    assert result.returncode == 0
    body = json.loads(result.stdout)
    assert body["children"] == []
    assert "needs at least 2" in body["reason"]
    assert "no split" in result.stderr


def test_a_topic_algorithm_without_topics_says_where_they_go(ballast: Run) -> None:
    for algorithm in ("topic_count_equally_divide", "flow_or_qps_equally_divide"):
        result = ballast("bundle", "split", "0x00000000_0x40000000", "--algorithm", algorithm)
        assert result.returncode == 0 and result.stdout == ""
        assert result.stderr == (
            "no split: bundle owns 0 topic(s); needs at least 2 "
            f"({algorithm} cuts by the bundle's topics: give them with --topics-file)\n"
        )
    positions = ("--algorithm", "specified_positions_divide", "--positions", "0x20000000")
    result = ballast("bundle", "split", "0x00000000_0x40000000", *positions)
    assert result.returncode == 0 and result.stdout == ""
    assert "give them with --topics-file, or give --positions alone" in result.stderr


def test_flow_or_qps_on_the_example_topics(ballast: Run) -> None:
    result = ballast(
        "bundle",
        "split",
        "0x00000000_0xffffffff",
        "--algorithm",
        "flow_or_qps_equally_divide",
        "--topics-file",
        "examples/topics.txt",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["boundaries"] == ["0x92fb0b88", "0xd57858cc"]
    assert len(body["children"]) == 3


def test_split_with_settings_override(ballast: Run) -> None:
    result = ballast(
        "bundle",
        "split",
        "0x00000000_0xffffffff",
        "--set",
        "defaultNamespaceBundleSplitAlgorithm=topic_count_equally_divide",
        "--topics-file",
        "examples/topics.txt",
    )
    assert result.stdout.split() == ["0x00000000_0xb189a651", "0xb189a651_0xffffffff"]


def test_split_errors_exit_2(ballast: Run, tmp_path: Path) -> None:
    bad_topics = tmp_path / "bad.txt"
    bad_topics.write_text("a,1,2,x,4\n")
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("persistent://t/ns/a\n".encode("utf-16"))
    for args in (
        [
            "0x0_0xffffffff",
            "--algorithm",
            "topic_count_equally_divide",
            "--topics-file",
            str(utf16),
        ],
        ["nope"],
        ["0x0_0x1"],
        ["0x0_0x10", "--parts", "2", "--positions", "0x5"],
        ["0x0_0x10", "--algorithm", "halves"],
        ["0x0_0x10", "--algorithm", "range_equally_divide", "--positions", "0x5"],  # unused
        [
            "0x0_0xffffffff",
            "--algorithm",
            "topic_count_equally_divide",
            "--topics-file",
            str(bad_topics),
        ],
        [
            "0x0_0xffffffff",
            "--algorithm",
            "flow_or_qps_equally_divide",
            "--topics-file",
            str(tmp_path / "missing.txt"),
        ],
        ["0x0_0x10", "--set", "loadBalancerNamespaceBundleMaxMsgRate=fast"],
    ):
        result = ballast("bundle", "split", *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("error:"), args


def test_a_topics_file_lists_each_topic_once_and_may_start_with_a_bom(
    ballast: Run, tmp_path: Path
) -> None:
    def split(text: bytes) -> CompletedProcess[str]:
        path = tmp_path / "topics.txt"
        path.write_bytes(text)
        return ballast(
            "bundle", "split", "0x00000000_0xffffffff",
            "--algorithm", "topic_count_equally_divide", "--topics-file", str(path),
        )  # fmt: skip

    plain = split(b"orders\npayments\n")
    assert plain.returncode == 0, plain.stderr
    marked = split(b"\xef\xbb\xbforders\npayments\n")  # as some editors save UTF-8
    assert marked.stdout == plain.stdout  # the mark is not part of the first name
    twice = split(b"orders\npayments\n# a comment\norders\n")
    assert twice.returncode == 2
    assert "topics.txt:4: topic orders is listed already (line 1)" in twice.stderr
    assert split(b"orders\r\npayments\r\n").stdout == plain.stdout  # Windows line ends
    # U+0085 and U+2028 are characters of a name, not line ends: split there, "a\x85b" was
    # two topics, "a" and "b", and the cut moved
    for inside in ("\x85", "\u2028"):
        one = split(f"a{inside}b\nc\n".encode())
        two = split(b"a\nb\nc\n")
        assert one.returncode == 0 and two.returncode == 0, one.stderr
        assert one.stdout != two.stdout, inside


def test_a_topics_file_a_cut_does_not_read_is_refused(ballast: Run) -> None:
    """A forgotten --algorithm: the default cut in halves, and the topics played no part."""
    topics = ("--topics-file", "examples/topics.txt")
    for args, cut in (
        ((), "range_equally_divide"),  # the default algorithm
        (("--parts", "4"), "--parts"),
        (("--positions", "0x10"), "--positions alone"),
    ):
        result = ballast("bundle", "split", "0x00000000_0xffffffff", *args, *topics)
        assert result.returncode == 2 and result.stdout == ""
        assert f"{cut} does not read topics" in result.stderr


def test_an_algorithms_cut_at_the_bundles_edge_is_no_split_not_a_bad_input(
    ballast: Run, tmp_path: Path
) -> None:
    """Two topics hashing to 0x100 and 0x101 in 0x100_0x102: topic_count_equally_divide cuts
    at 0x100, the bundle's edge. It said "split boundary ... is not strictly inside", exit 2,
    as if the user had given it."""
    path = tmp_path / "edge.txt"
    path.write_text(
        "p/accaacccaaacaccacaaacacaaaacccacaaaaaaaaa\n"  # hashes to 0x00000100
        "p/bccaccaacccaaaccaacacacaacaccaaaaaaaaaaaa\n"  # hashes to 0x00000101
    )
    result = ballast(
        "bundle", "split", "0x100_0x102", "--algorithm", "topic_count_equally_divide",
        "--topics-file", str(path), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["boundaries"], body["children"]) == ([], [])
    assert body["reason"].startswith("topic_count_equally_divide cut where the bundle cannot")
    # positions given alone come back in order, as the children they make
    given = json.loads(
        ballast("bundle", "split", "0x0_0xffffffff", "--positions", "0x30,0x10", "--json").stdout
    )
    assert given["boundaries"] == ["0x00000010", "0x00000030"]
