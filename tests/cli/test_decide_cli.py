"""End to end: ``ballast decide shed|split|place`` on the acceptance snapshots, the shipped
example, Pulsar's sample reports, stdin, a /loadbalance dump directory, and bad input."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

Run = Callable[..., CompletedProcess[str]]
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "balance" / "data"
EXAMPLES = json.loads((DATA / "decide-examples.json").read_text())
EXAMPLE = REPO / "examples" / "cluster-snapshot.json"
MODEL_DATA = REPO / "tests" / "model" / "data"


def ok(result: CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def summary(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("action", "bundle", "broker", "destination")
    return [{k: d[k] for k in keys if k in d} for d in decisions]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["example"] for e in EXAMPLES])
def test_acceptance_examples(ballast: Run, example: dict[str, Any]) -> None:
    argv = shlex.split(example["command"])[1:]
    argv = [str(DATA / a) if a.endswith(".snapshot.json") else a for a in argv]
    body = ok(ballast(*argv))
    assert summary(body["decisions"]) == example["expectedDecisions"]
    for decision in body["decisions"]:
        assert decision["reason"] and decision["reasonKind"]


def test_transfer_example_reports_pulsars_figures(ballast: Run) -> None:
    (example,) = [e for e in EXAMPLES if e["example"] == "tr-setup-overloaded"]
    argv = [
        str(DATA / a) if a.endswith(".snapshot.json") else a
        for a in shlex.split(example["command"])[1:]
    ]
    stats = ok(ballast(*argv))["stats"]
    assert stats["loadAvg"] == 0.36400000000000005
    assert stats["loadStd"] == 0.3982762860126121
    assert stats["outcome"] == "Success"
    assert stats["expiredRecentlyUnloadedBrokers"] == ["broker1:8080"]


def test_shipped_example_end_to_end(ballast: Run) -> None:
    shed = ok(ballast("decide", "shed", str(EXAMPLE), "--now-ms", "1700000000000"))
    assert summary(shed["decisions"]) == [
        {
            "action": "transfer",
            "bundle": "public/default/0x00000000_0x40000000",
            "broker": "10.0.0.1:8080",
            "destination": "10.0.0.3:8080",
        }
    ]
    assert set(shed["state"]) == {"threshold", "placement"}
    split = ok(ballast("decide", "split", str(EXAMPLE)))
    assert summary(split["decisions"]) == [
        {
            "action": "split",
            "bundle": "tenant/orders/0x00000000_0x80000000",
            "broker": "10.0.0.1:8080",
        }
    ]
    place = ok(
        ballast("decide", "place", str(EXAMPLE), "--bundle", "public/default/0x40000000_0x80000000")
    )
    assert [d["broker"] for d in place["decisions"]] == ["10.0.0.3:8080"]
    assert place["stats"]["preallocation"]["broker"] == "10.0.0.3:8080"


def test_state_fed_back_continues_the_strategy(ballast: Run) -> None:
    first = ok(ballast("decide", "shed", str(EXAMPLE), "--scope", "strategy", "--now-ms", "1"))
    history = first["state"]["threshold"]["usageHistory"]
    assert history["10.0.0.1:8080"] == pytest.approx(0.88 * 0.9 + 0.1 * 0.92)
    snapshot = json.loads(EXAMPLE.read_text())
    snapshot["state"] = first["state"]
    second = ok(
        ballast(
            "decide",
            "shed",
            "-",
            "--scope",
            "strategy",
            "--now-ms",
            "1",
            stdin=json.dumps(snapshot),
        )
    )
    assert second["state"]["threshold"]["usageHistory"]["10.0.0.1:8080"] == pytest.approx(
        history["10.0.0.1:8080"] * 0.9 + 0.1 * 0.92
    )


@pytest.mark.parametrize(
    ("strategy", "figures"),
    [
        ("threshold", {"cpu": {"usage": 1e300, "limit": 100}}),
        ("transfer", {"msgThroughputIn": 1e308, "msgThroughputOut": 1e308}),
        ("ballast", {"msgRateIn": 1e308, "msgThroughputIn": 1e308}),
        ("ballast", {"msgRateIn": 1e160}),
    ],
)
def test_a_state_with_infinite_figures_is_read_back(
    ballast: Run, strategy: str, figures: dict[str, Any]
) -> None:
    """Printed as "inf" (JSON has no such number), a figure made the printed state unfit
    for the next snapshot ("Expected float, got str"); a load past a double's range made
    ``ballast``'s spread raise OverflowError (an internal error)."""
    bundles = {f"t/n/0x{lo:08x}_0x{hi:08x}": {"msgRateIn": 1, "topics": 1}
               for lo, hi in ((0, 0x80000000), (0x80000000, 0xFFFFFFFF))}  # fmt: skip
    snapshot: dict[str, Any] = {
        "brokers": {
            "b1": {"cpu": {"usage": 90, "limit": 100}, **figures, "lastStats": bundles},
            "b2": {"cpu": {"usage": 10, "limit": 100}, "msgRateIn": 1},
        }
    }
    args = ("decide", "shed", "-", "--strategy", strategy, "--scope", "strategy")
    first = ok(ballast(*args, "--now-ms", "1", stdin=json.dumps(snapshot)))
    assert '"inf"' in json.dumps(first), first
    snapshot["state"] = first["state"]
    second = ok(ballast(*args, "--now-ms", "2", stdin=json.dumps(snapshot)))
    assert set(second["state"]) == {strategy}


def test_stdin_gives_the_same_answer_as_the_file(ballast: Run) -> None:
    from_file = ok(ballast("decide", "split", str(DATA / "bsd-topics.snapshot.json")))
    text = (DATA / "bsd-topics.snapshot.json").read_text()
    from_stdin = ok(ballast("decide", "split", "-", stdin=text))
    assert from_stdin == from_file


def write_dump(root: Path, snapshot: dict[str, Any]) -> None:
    for broker, report in snapshot["brokers"].items():
        (root / "brokers").mkdir(parents=True, exist_ok=True)
        (root / "brokers" / broker).write_text(json.dumps(report))
    for bundle, data in snapshot.get("bundles", {}).items():
        path = root / "bundle-data" / bundle
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))


def test_dump_directory_gives_the_same_decisions(ballast: Run, tmp_path: Path) -> None:
    source = DATA / "os-multiple-bundles.snapshot.json"
    write_dump(tmp_path, json.loads(source.read_text()))
    args = ("--strategy", "overload", "--scope", "strategy", "--now-ms", "1700000001000")
    from_dir = ok(ballast("decide", "shed", str(tmp_path), *args))
    from_file = ok(ballast("decide", "shed", str(source), *args))
    assert summary(from_dir["decisions"]) == summary(from_file["decisions"])
    assert len(from_dir["decisions"]) == 2
    # a dump of the store's root holds the tree under loadbalance/, as the importer reads it
    root = tmp_path / "root"
    write_dump(root / "loadbalance", json.loads(source.read_text()))
    from_root = ok(ballast("decide", "shed", str(root), *args))
    assert summary(from_root["decisions"]) == summary(from_file["decisions"])
    # an empty loadbalance/ beside the dump's own brokers/ was taken for the whole dump
    (tmp_path / "loadbalance").mkdir()
    beside = ok(ballast("decide", "shed", str(tmp_path), *args))
    assert summary(beside["decisions"]) == summary(from_file["decisions"])


def test_seed002_sample_reports(ballast: Run, tmp_path: Path) -> None:
    """Pulsar's stored JSON from seed 002 (a standalone broker), as a /loadbalance dump."""
    broker = "localhost:8080"
    bundle = "public/default/0x00000000_0xffffffff"
    for folder, name, source in (
        ("brokers", broker, "seed002_local_broker_data.json"),
        ("broker-time-average", broker, "seed002_time_average_broker_data.json"),
        ("bundle-data/public/default", "0x00000000_0xffffffff", "seed002_bundle_data.json"),
    ):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(MODEL_DATA / source, tmp_path / folder / name)
    shed = ok(ballast("decide", "shed", str(tmp_path), "--now-ms", "1668497351981"))
    assert shed["decisions"] == [] and shed["stats"]["reason"] == "NoBrokers"
    alone = ok(ballast("decide", "shed", str(tmp_path), "--scope", "strategy", "--now-ms", "1"))
    assert alone["decisions"] == [] and alone["stats"]["reason"] == "NoLoadData"
    place = ok(ballast("decide", "place", str(tmp_path), "--bundle", bundle))
    assert summary(place["decisions"]) == [{"action": "assign", "bundle": bundle, "broker": broker}]
    assert place["stats"]["preallocation"]["newBundleData"] is False
    assert ok(ballast("decide", "split", str(tmp_path)))["decisions"] == []


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ('{"brokers": {"b1": {"cpu": {"usage": "lots"}}}}', '$.brokers["b1"].cpu.usage'),
        ('{"bundles": {}}', "$.brokers"),
        ('{"brokers": null}', "$.brokers"),  # was read as a cluster of no brokers
        ('{"brokers": {}, "bundles": {"t/n/0xZZ_0x1": {}}}', '$.bundles["t/n/0xZZ_0x1"]'),
        (
            '{"brokers": {}, "state": {"threshold": {"usageHistory": []}}}',
            "$.state.threshold.usageHistory",
        ),
        ("not json", "$"),
    ],
)
def test_malformed_snapshot_exits_2_naming_the_path(ballast: Run, document: str, path: str) -> None:
    result = ballast(
        "decide", "shed", "-", "--strategy", "threshold", "--now-ms", "1", stdin=document
    )
    assert result.returncode == 2
    assert f"malformed snapshot: {path}" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "strategy", ["overload", "threshold", "uniform", "avg", "transfer", "ballast"]
)
def test_every_cycle_reports_its_outcome(ballast: Run, strategy: str) -> None:
    stats = ok(ballast("decide", "shed", str(EXAMPLE), "--strategy", strategy, "--now-ms", "1"))[
        "stats"
    ]
    assert stats["outcome"] in ("Success", "Skip") and isinstance(stats["skipped"], list)
    if stats["outcome"] == "Skip":
        assert stats["reason"]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("decide shed ''", "SNAPSHOT is empty: give a snapshot file"),
        ("decide split ''", "SNAPSHOT is empty: give a snapshot file"),
        ("pipeline import '' --history {tmp}/h", "SOURCE is empty: give a dump directory"),
        ("metadata load --store sqlite:{tmp}/s.db ''", "the file name is empty: give a file"),
    ],
)
def test_an_empty_file_argument_exits_2(
    ballast: Run, tmp_path: Path, command: str, message: str
) -> None:
    """An empty name was the current directory: read as a dump, or "cannot read : Is a
    directory"."""
    result = ballast(*shlex.split(command.format(tmp=tmp_path)))
    assert result.returncode == 2
    assert f"error: {message}" in result.stderr
    assert not (tmp_path / "h").exists() and not (tmp_path / "s.db").exists()


def test_a_directory_that_is_not_a_dump_exits_2(ballast: Run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a load report\n")
    result = ballast("decide", "shed", str(tmp_path), "--now-ms", "1")
    assert result.returncode == 2
    assert "no /loadbalance entries (brokers/, broker-time-average/, bundle-data/)" in result.stderr


def test_a_snapshot_that_is_not_utf_8_exits_2(ballast: Run, tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"brokers": {"b\xe9": {}}}')
    result = ballast("decide", "shed", str(latin), "--now-ms", "1")
    assert result.returncode == 2 and "malformed snapshot: $: not valid JSON" in result.stderr
    assert "internal error" not in result.stderr


def test_a_snapshot_saved_with_a_byte_order_mark_is_read(ballast: Run, tmp_path: Path) -> None:
    marked = tmp_path / "bom.json"
    plain = (DATA / "bsd-topics.snapshot.json").read_bytes()
    marked.write_bytes(b"\xef\xbb\xbf" + plain)  # as some Windows editors save UTF-8
    with_mark = ballast("decide", "split", str(marked))
    assert with_mark.returncode == 0, with_mark.stderr
    assert (
        with_mark.stdout
        == ballast("decide", "split", str(DATA / "bsd-topics.snapshot.json")).stdout
    )


def test_bad_names_exit_2_with_the_valid_choices(ballast: Run) -> None:
    snapshot = str(DATA / "bsd-topics.snapshot.json")
    shed = ballast("decide", "shed", snapshot, "--strategy", "fastest")
    assert shed.returncode == 2 and "valid: overload, threshold, uniform, transfer" in shed.stderr
    empty = ballast("decide", "shed", snapshot, "--strategy", "")  # not the default
    assert empty.returncode == 2 and 'unknown shedding strategy ""' in empty.stderr
    place = ballast(
        "decide", "place", snapshot, "--bundle", "t/n/0x00000000_0x80000000", "--strategy", "x"
    )
    assert place.returncode == 2 and "least_long_term_message_rate" in place.stderr
    outside = ballast("decide", "place", snapshot, "--bundle", "t/n/0x00000000_0x40000000")
    assert outside.returncode == 2 and "not a bundle of namespace t/n" in outside.stderr
    bad = ballast("decide", "place", snapshot, "--bundle", "t/n/nope")
    assert bad.returncode == 2
    # a time before 1970 or past a Java long is no time of a snapshot
    for now in ("-5", str(2**63)):
        past = ballast("decide", "shed", snapshot, "--now-ms", now)
        assert past.returncode == 2 and "--now-ms" in past.stderr, now


def test_pulsar_class_names_are_accepted(ballast: Run) -> None:
    argv = ["--scope", "strategy", "--now-ms", "1"]
    short = ok(ballast("decide", "shed", str(EXAMPLE), "--strategy", "uniform", *argv))
    long = ok(
        ballast(
            "decide",
            "shed",
            str(EXAMPLE),
            "--strategy",
            "org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder",
            *argv,
        )
    )
    assert short["decisions"] == long["decisions"] != []


def test_placement_seed_makes_ties_reproducible(ballast: Run) -> None:
    tie = json.dumps({"brokers": {"a:8080": {}, "b:8080": {}, "c:8080": {}}})
    bundle = "t/n/0x00000000_0xffffffff"

    def pick(seed: int) -> str:
        body = ok(
            ballast("decide", "place", "-", "--bundle", bundle, "--seed", str(seed), stdin=tie)
        )
        broker: str = body["decisions"][0]["broker"]
        return broker

    assert len({pick(seed) for seed in range(8)}) > 1
    assert pick(4) == pick(4)
