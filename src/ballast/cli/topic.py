"""``ballast topic``: parse a topic name as Pulsar does and place it in a bundle."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from ballast.cli.common import EXIT_INVALID, print_json
from ballast.model.bundles import (
    BundleRange,
    InvalidBundle,
    NamespaceBundles,
    equal_range_for_hash,
    parse_boundaries,
    topic_hash,
)
from ballast.model.naming import InvalidNameError, TopicName


def describe_topic(topic: TopicName, bundle: BundleRange) -> dict[str, Any]:
    """The parsed name in Pulsar's camelCase, with its hash and bundle range."""
    return {
        "name": str(topic),
        "domain": topic.domain.value,
        "tenant": topic.tenant,
        "cluster": topic.cluster,
        "namespacePortion": topic.namespace_portion,
        "namespace": str(topic.namespace),
        "localName": topic.local_name,
        "partitionIndex": topic.partition_index,
        "isV2": topic.is_v2,
        "hash": topic_hash(topic),
        "bundle": str(bundle),
    }


def topic_command(
    name: Annotated[
        str, typer.Argument(metavar="TOPIC", help="Topic name, full or short (my-topic, t/ns/x).")
    ],
    bundles_text: Annotated[
        str | None,
        typer.Option(
            "--bundles",
            metavar="INTEGER",
            help="Number of equal bundles in the namespace [default: 4].",
        ),
    ] = None,
    boundaries: Annotated[
        str | None,
        typer.Option(
            "--boundaries",
            help="The namespace's bundle boundaries, comma-separated, from 0x00000000 to "
            "0xffffffff (instead of --bundles).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Parse a topic name exactly as Pulsar does; print its parts, its hash (CRC-32 of the
    canonical name) and the bundle range that serves it.

    Exits 2 with the reason on stderr when the name, the bundle count or the boundaries are
    invalid (with --json, also {"valid": false, "error": ...} on stdout)."""

    def invalid(reason: str) -> None:
        typer.echo(f"error: {reason}", err=True)
        if as_json:
            print_json({"valid": False, "error": reason})
        raise typer.Exit(EXIT_INVALID)

    if bundles_text is not None and boundaries is not None:
        invalid("give --bundles or --boundaries, not both")
    bundles = None  # read here, not by the option's type, so that --json still answers
    if bundles_text is not None:
        if re.fullmatch("[0-9]+", bundles_text) is None:
            invalid(f"--bundles must be a whole number of bundles, not {bundles_text!r}")
        digits = len(bundles_text.lstrip("0"))
        if digits > 10:  # past any int, and past the digits Python converts
            invalid(f"--bundles must be in 1..2147483647, not a number of {digits} digits")
        bundles = int(bundles_text)
    try:
        topic = TopicName.parse(name)
    except InvalidNameError as exc:
        invalid(str(exc))
        return
    try:
        if boundaries is not None:
            bounds = parse_boundaries(b for b in boundaries.split(",") if b.strip())
            bundle = NamespaceBundles(topic.namespace, bounds).find(topic).range
        else:  # any count, without listing its boundaries
            bundle = equal_range_for_hash(4 if bundles is None else bundles, topic_hash(topic))
    except InvalidBundle as exc:
        invalid(str(exc))
        return
    described = describe_topic(topic, bundle)
    if as_json:
        print_json({"valid": True, **described})
        return
    width = max(len(k) for k in described)
    for key, value in described.items():
        shown = (
            "null" if value is None else str(value).lower() if isinstance(value, bool) else value
        )
        typer.echo(f"{key:<{width}}  {shown}")
