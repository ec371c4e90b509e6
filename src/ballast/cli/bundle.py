"""``ballast bundle``: bundle boundaries and splits, with Pulsar's arithmetic."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from ballast.cli.common import fail, print_json, settings_from
from ballast.model.bundles import (
    BundleName,
    BundleRange,
    InvalidBundle,
    equal_split_points,
    format_boundary,
    hex_boundaries,
    iter_equal_boundaries,
    parse_position,
    split_boundaries,
    validate_num_bundles,
)
from ballast.model.config import SplitConfig
from ballast.model.split_algorithms import (
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    SplitRequest,
    TopicLoad,
    split_algorithm,
)

# The algorithms that cut by the bundle's topics (their names, or their load too).
TOPIC_ALGORITHMS = frozenset({TOPIC_COUNT_EQUALLY_DIVIDE, FLOW_OR_QPS_EQUALLY_DIVIDE})


def _where_topics_go(algorithm: str) -> str:
    """What to add to an algorithm's "no split" when it was given no topics: it needed them."""
    if algorithm in TOPIC_ALGORITHMS:
        return f" ({algorithm} cuts by the bundle's topics: give them with --topics-file)"
    if algorithm == SPECIFIED_POSITIONS_DIVIDE:
        return (
            f" ({algorithm} splits only a bundle with topics, as Pulsar does: give them with "
            "--topics-file, or give --positions alone to cut anyway)"
        )
    return ""


bundle_app = typer.Typer(
    help="Bundle boundaries and splits, computed as Pulsar computes them.",
    no_args_is_help=True,
)


@bundle_app.command("ranges")
def ranges_command(
    count: Annotated[int, typer.Option("--count", help="Number of equal bundles (>= 1).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The boundaries and ranges of COUNT equal bundles of a namespace (the last boundary is
    always 0xffffffff; the last bundle takes the remainder). Written as they are worked out,
    so any count up to 2147483647 runs in constant memory."""
    try:
        validate_num_bundles(count)
    except InvalidBundle as exc:
        fail(str(exc))

    def boundaries() -> Iterator[str]:
        return (format_boundary(b) for b in iter_equal_boundaries(count))

    def ranges() -> Iterator[str]:
        pairs = itertools.pairwise(iter_equal_boundaries(count))
        return (f"{format_boundary(a)}_{format_boundary(b)}" for a, b in pairs)

    out = sys.stdout
    if as_json:  # the bytes print_json would write, without building the lists
        out.write(f'{{\n  "numBundles": {count},\n  "boundaries": [\n')
        _write_joined(out, (f'    "{b}"' for b in boundaries()), ",\n")
        out.write('\n  ],\n  "ranges": [\n')
        _write_joined(out, (f'    "{r}"' for r in ranges()), ",\n")
        out.write("\n  ]\n}\n")
        return
    out.write("boundaries: ")
    _write_joined(out, boundaries(), " ")
    out.write("\n")
    _write_joined(out, ranges(), "\n")
    out.write("\n")


def _write_joined(out: TextIO, items: Iterator[str], separator: str) -> None:
    """``separator.join(items)`` written in chunks."""
    first = True
    while chunk := list(itertools.islice(items, 65536)):
        if not first:
            out.write(separator)
        out.write(separator.join(chunk))
        first = False


def parse_positions(text: str) -> list[int]:
    """Comma-separated hash positions, hex (0x...) or decimal."""
    positions: list[int] = []
    for item in text.split(","):
        stripped = item.strip()
        if not stripped:
            continue
        try:
            positions.append(parse_position(stripped))
        except ValueError:
            fail(f'position "{stripped}" is not a hash position (use 0x... hex or decimal)')
    if not positions:
        fail("--positions needs at least one position")
    return positions


def parse_topics_file(path: Path) -> list[TopicLoad]:
    """One topic per line, optionally ``,msgRateIn,msgRateOut,msgThroughputIn,
    msgThroughputOut``; blank lines and lines starting with ``#`` are skipped. A topic
    listed twice is refused: the broker's list of its topics never holds one twice, and
    the count and flow algorithms would weigh it double."""
    try:
        # A byte order mark is not a name. Lines end at \n (or \r\n) only: a topic name may
        # hold any other character, U+0085 and U+2028 (line ends to str.splitlines) and a
        # lone \r (one to read_text) among them.
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        fail(f"cannot read topics file {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"topics file {path} is not UTF-8 text: {exc}")
    topics: list[TopicLoad] = []
    seen: dict[str, int] = {}

    def add(topic: TopicLoad, number: int) -> None:
        first = seen.setdefault(topic.name, number)
        if first != number:
            fail(f"{path}:{number}: topic {topic.name} is listed already (line {first})")
        topics.append(topic)

    for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1):
        stripped = line.removesuffix("\r").strip()
        if not stripped or stripped.startswith("#"):
            continue
        if "," not in stripped:
            add(TopicLoad(stripped), number)
            continue
        parts = stripped.rsplit(",", 4)
        if len(parts) != 5:
            fail(
                f"{path}:{number}: expected NAME or NAME,msgRateIn,msgRateOut,"
                f"msgThroughputIn,msgThroughputOut"
            )
        name = parts[0].strip()
        try:
            values = [float(p) for p in parts[1:]]
        except ValueError:
            fail(f"{path}:{number}: rates and throughputs must be numbers")
        if any(v < 0 or not math.isfinite(v) for v in values):
            fail(f"{path}:{number}: rates and throughputs must be finite and not negative")
        if not name:
            fail(f"{path}:{number}: empty topic name")
        add(TopicLoad(name, *values), number)
    return topics


@bundle_app.command("split")
def split_command(
    bundle_range: Annotated[
        str,
        typer.Argument(
            metavar="RANGE",
            help="Bundle range, e.g. 0x00000000_0x40000000 (or with its namespace, "
            "public/default/0x00000000_0x40000000).",
        ),
    ],
    parts: Annotated[
        int | None,
        typer.Option("--parts", help="Cut into N equal parts, as Pulsar's split does."),
    ] = None,
    positions: Annotated[
        str | None,
        typer.Option(
            "--positions",
            help="Hash positions, comma-separated. Alone: cut at exactly these (each strictly "
            "inside RANGE). With --algorithm specified_positions_divide: that algorithm's "
            "rules.",
        ),
    ] = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--algorithm",
            help="range_equally_divide, topic_count_equally_divide, "
            "specified_positions_divide or flow_or_qps_equally_divide.",
        ),
    ] = None,
    topics_file: Annotated[
        Path | None,
        typer.Option(
            "--topics-file",
            help="Topics the bundle owns, one per line, optionally followed by "
            ",msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut. Names are hashed exactly "
            "as written; topics outside RANGE are not owned and are ignored.",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="broker.conf-style settings file.")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Split a bundle range and print the children (lowercase hex).

    With no option the configured default algorithm (defaultNamespaceBundleSplitAlgorithm,
    range_equally_divide) cuts it in two. When an algorithm finds no boundary the command
    exits 0 with no children and says why on stderr."""
    if parts is not None and (positions is not None or algorithm is not None):
        fail("--parts cannot be combined with --positions or --algorithm")
    try:
        # A bundle with its namespace (tenant/ns/RANGE) is its range here: the arithmetic is
        # the same for every namespace, once the namespace is one Pulsar accepts.
        parent = (
            BundleName.parse(bundle_range).range
            if "/" in bundle_range
            else BundleRange.parse(bundle_range)
        )
    except InvalidBundle as exc:
        fail(str(exc))
    settings = settings_from(config, overrides)
    split_config = SplitConfig.from_settings(settings)
    if topics_file is not None:  # a forgotten --algorithm would otherwise go unnoticed
        cut_by = (
            "--parts"
            if parts is not None
            else "--positions alone"
            if positions is not None and algorithm is None
            else algorithm or split_config.default_algorithm
        )
        if cut_by not in TOPIC_ALGORITHMS | {SPECIFIED_POSITIONS_DIVIDE}:
            fail(
                f"--topics-file goes with --algorithm {', '.join(sorted(TOPIC_ALGORITHMS))} or "
                f"{SPECIFIED_POSITIONS_DIVIDE}; {cut_by} does not read topics"
            )
    topics = parse_topics_file(topics_file) if topics_file is not None else []
    chosen = algorithm
    reason = ""
    try:
        if parts is not None:
            chosen = None
            cut_points: tuple[int, ...] = equal_split_points(parent, parts)
        elif positions is not None and algorithm is None:
            cut_points = tuple(sorted(parse_positions(positions)))
        else:
            chosen = algorithm or split_config.default_algorithm
            run = split_algorithm(chosen)
            if not parent.can_split:
                raise InvalidBundle(f"bundle {parent} can't be split further")
            request = SplitRequest(
                bundle=parent,
                topics=topics,
                positions=parse_positions(positions) if positions is not None else (),
                thresholds=split_config.flow_or_qps,
            )
            if chosen == SPECIFIED_POSITIONS_DIVIDE and positions is None:
                raise InvalidBundle("specified_positions_divide needs --positions")
            if chosen != SPECIFIED_POSITIONS_DIVIDE and positions is not None:
                fail(
                    f"--positions goes alone or with --algorithm {SPECIFIED_POSITIONS_DIVIDE}; "
                    f"{chosen} does not use them"
                )
            found = run(request)
            cut_points, reason = found.points, found.reason
            if not cut_points and topics_file is None:
                reason += _where_topics_go(chosen)
        try:
            children = split_boundaries(parent, cut_points) if cut_points else ()
        except InvalidBundle as exc:
            if chosen is None:  # the user's cut (--parts, --positions alone): bad input
                raise
            # the algorithm's cut, not the user's: no split
            reason = (
                f"{chosen} cut where the bundle cannot be split ({exc}: its topics hash "
                "to its edge); Pulsar's split fails there too"
            )
            cut_points, children = (), ()
    except InvalidBundle as exc:
        fail(str(exc))
    child_ranges = [str(BundleRange(lo, hi)) for lo, hi in itertools.pairwise(children)]
    if not child_ranges:
        typer.echo(f"no split: {reason}", err=True)
    if as_json:
        body: dict[str, Any] = {
            "bundle": str(parent),
            "algorithm": chosen,
            "boundaries": hex_boundaries(cut_points),
            "children": child_ranges,
        }
        if not child_ranges:
            body["reason"] = reason
        print_json(body)
        return
    for item in child_ranges:
        typer.echo(item)
