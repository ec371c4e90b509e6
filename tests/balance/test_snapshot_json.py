"""The snapshot's JSON form: every part, canonical names, defaults, and errors with paths."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ballast.balance.shedding.threshold import ThresholdState
from ballast.balance.snapshot_json import (
    dump_to_object,
    parse_snapshot,
    snapshot_from_object,
    state_with,
    strategy_state,
)
from ballast.model.codec import ModelError

BROKER = {
    "cpu": {"usage": 50.0, "limit": 100.0},
    "msgThroughputIn": 10.0,
    "lastUpdate": 1000,
    "bundles": ["t/ns/0x00000000_0x8000000A"],
    "lastStats": {"t/ns/0x8000000A_0xFFFFFFFF": {"topics": 3}},
}
BUNDLE = {
    "shortTermData": {"maxSamples": 10, "numSamples": 10, "msgRateIn": 5.0},
    "longTermData": {"maxSamples": 1000, "numSamples": 10, "msgRateIn": 4.0},
    "topics": 2,
}


def full() -> dict[str, Any]:
    return {
        "brokers": {"b1:8080": BROKER, "b2:8080": {}},
        "timeAverages": {"b2:8080": {"longTermMsgRateIn": 7.0}},
        "bundles": {"t/ns/0x00000000_0x8000000A": BUNDLE},
        "recentlyUnloadedBundles": {"t/ns/0x8000000A_0xFFFFFFFF": 99},
        "recentlyUnloadedBrokers": {"b2:8080": 98},
        "namespaces": {
            "t/ns": {"numBundles": 2, "boundaries": ["0x00000000", "0x8000000A", "0xffffffff"]}
        },
        "policies": {
            "isolation": {"p": {"namespaces": ["t/iso"], "primary": ["b1"]}},
            "antiAffinityGroups": {"t/ns": "g"},
            "failureDomains": {"d1": ["b1:8080"], "d2": {"brokers": ["b2:8080"]}},
        },
        "brokerLoadData": {"b1:8080": {"weightedMaxEMA": 0.5, "msgThroughputEMA": 10.0}},
        "state": {"threshold": {"usageHistory": {"b1:8080": 0.4}}},
    }


def test_every_part_is_read() -> None:
    parsed = snapshot_from_object(full())
    snap = parsed.snapshot
    assert list(snap.brokers) == ["b1:8080", "b2:8080"]
    assert snap.bundles_of("b1:8080") == {
        "t/ns/0x00000000_0x8000000a",
        "t/ns/0x8000000a_0xffffffff",
    }
    assert snap.owner("t/ns/0x8000000a_0xffffffff") == "b1:8080"
    # Time averages: computed from bundle data when absent (the default counts for unknowns).
    assert snap.brokers["b1:8080"].time_average_data.long_term_msg_rate_in == 4.0 + 50.0
    assert snap.brokers["b2:8080"].time_average_data.long_term_msg_rate_in == 7.0
    assert snap.recently_unloaded_bundles == {"t/ns/0x8000000a_0xffffffff": 99}
    assert snap.recently_unloaded_brokers == {"b2:8080": 98}
    assert snap.bundle_count("t/ns") == 2
    assert snap.policies.has_isolation_policy("t/iso")
    assert snap.policies.anti_affinity_group("t/ns") == "g"
    assert dict(snap.policies.broker_domains) == {"b1:8080": "d1", "b2:8080": "d2"}
    load = snap.broker_load["b1:8080"]
    assert (load.weighted_max_ema, load.msg_throughput_ema, load.updated_at_ms) == (0.5, 10.0, 1000)
    assert strategy_state(parsed.state, "threshold", ThresholdState).usage_history == {
        "b1:8080": 0.4
    }
    assert parsed.warnings == ()


def test_only_brokers_is_required() -> None:
    parsed = parse_snapshot('{"brokers": {"b": {}}}')
    assert list(parsed.snapshot.brokers) == ["b"] and parsed.state == {}
    assert strategy_state(parsed.state, "threshold", ThresholdState) == ThresholdState()


def test_warnings_for_unknown_keys_brokers_and_double_reports() -> None:
    parsed = snapshot_from_object(
        {
            "brokers": {
                "a": {"bundles": ["t/n/0x00000000_0xffffffff"]},
                "b": {"bundles": ["t/n/0x00000000_0xffffffff"]},
            },
            "timeAverages": {"zz": {}},
            "extra": 1,
        }
    )
    text = " | ".join(parsed.warnings)
    assert "unknown key extra" in text and "unknown broker zz" in text
    assert "reported by 2 brokers (a, b); a is taken as its owner" in text


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ("[1]", "$"),
        ("null", "$"),
        ("{", "$"),
        ("{}", "$.brokers"),
        ('{"brokers": {"b1": {"cpu": {"usage": "high"}}}}', '$.brokers["b1"].cpu.usage'),
        ('{"brokers": {"b1": {"lastStats": {"nope": {}}}}}', '$.brokers["b1"].lastStats["nope"]'),
        ('{"brokers": {"b1": {"bundles": ["t/n/0x0_0x1", "x"]}}}', '$.brokers["b1"].bundles'),
        (
            '{"brokers": {}, "bundles": {"t/n/0x0_0x1": {"topics": -1}}}',
            '$.bundles["t/n/0x0_0x1"].topics',
        ),
        ('{"brokers": {}, "bundles": {"bad": {}}}', '$.bundles["bad"]'),
        (
            '{"brokers": {}, "namespaces": {"t/n": {"boundaries": ["0x0", "0x10"]}}}',
            '$.namespaces["t/n"].boundaries',
        ),
        ('{"brokers": {}, "namespaces": {"t": {}}}', '$.namespaces["t"]'),
        (
            '{"brokers": {}, "recentlyUnloadedBundles": {"t/n/0x0_0x1": "x"}}',
            '$.recentlyUnloadedBundles["t/n/0x0_0x1"]',
        ),
        (
            '{"brokers": {}, "policies": {"antiAffinityGroups": {"t/n": 3}}}',
            '$.policies.antiAffinityGroups["t/n"]',
        ),
        (
            '{"brokers": {"b": {}}, "brokerLoadData": {"b": {"weightedMaxEMA": 1}}}',
            '$.brokerLoadData["b"]',
        ),
    ],
)
def test_errors_name_the_json_path(document: str, path: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_snapshot(document)
    assert caught.value.path == path


def test_duplicate_bundles_after_normalising_are_an_error() -> None:
    doc = {
        "brokers": {},
        "bundles": {"t/n/0x0000000A_0xffffffff": {}, "t/n/0x0000000a_0xffffffff": {}},
    }
    with pytest.raises(ModelError, match="given twice"):
        snapshot_from_object(doc)


def test_bad_state_is_reported_under_state() -> None:
    parsed = parse_snapshot('{"brokers": {}, "state": {"threshold": {"usageHistory": {"b": "x"}}}}')
    with pytest.raises(ModelError) as caught:
        strategy_state(parsed.state, "threshold", ThresholdState)
    assert caught.value.path == '$.state.threshold.usageHistory["b"]'


def test_state_output_keeps_other_parts() -> None:
    merged = state_with(
        {"placement": {"usageHistory": {}}}, {"threshold": ThresholdState(usage_history={"b": 0.5})}
    )
    assert merged == {"placement": {"usageHistory": {}}, "threshold": {"usageHistory": {"b": 0.5}}}


def test_dump_directory_layout() -> None:
    files = {
        "brokers/10.0.0.1:8080": json.dumps(BROKER).encode(),
        "broker-time-average/10.0.0.1:8080.json": b'{"longTermMsgRateIn": 1.0}',
        "bundle-data/t/ns/0x00000000_0x8000000A": json.dumps(BUNDLE).encode(),
        "leader": b"{}",
    }
    obj, warnings = dump_to_object(files)
    assert list(obj["brokers"]) == ["10.0.0.1:8080"]
    assert obj["timeAverages"] == {"10.0.0.1:8080": {"longTermMsgRateIn": 1.0}}
    assert list(obj["bundles"]) == ["t/ns/0x00000000_0x8000000A"]
    assert warnings == ["leader: not part of a /loadbalance dump, skipped"]
    with pytest.raises(ModelError, match="brokers/x: not valid JSON") as caught:
        dump_to_object({"brokers/x": b"{"})
    assert caught.value.path == '$.brokers["x"]'
    # a file below a broker's was read as a broker named "sub/x"
    nested = {**files, "brokers/sub/x": json.dumps(BROKER).encode()}
    obj, warnings = dump_to_object(nested)
    assert list(obj["brokers"]) == ["10.0.0.1:8080"]
    assert "brokers/sub/x: not a broker's record (host:port), skipped" in warnings


def test_the_extensible_load_managers_lookup_data_is_named_in_a_warning() -> None:
    """Its ``brokers/`` records hold no load: read as reports, the brokers look idle."""
    lookup = {
        "webServiceUrl": "http://b1:8080",
        "pulsarServiceUrl": "pulsar://b1:6650",
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions."
        "ExtensibleLoadManagerImpl",
        "brokerVersion": "3.1.0",
    }
    files = {f"brokers/b{i}:8080": json.dumps(lookup).encode() for i in range(1, 5)}
    files["brokers/b5:8080"] = json.dumps(BROKER).encode()  # a report: not named
    _, warnings = dump_to_object(files)
    assert warnings == [
        "4 broker(s) (b1:8080, b2:8080, b3:8080, ...) are registered by Pulsar's extensible "
        "load manager, which keeps their load out of /loadbalance: they read as idle"
    ]


def test_a_metadata_dump_is_a_snapshot() -> None:
    """``ballast metadata dump /loadbalance`` (or of ``/``): its load records read as the
    directory layout does; the leader and intermediate nodes are skipped without a word."""
    broker = {"json": BROKER, "ephemeral": True}
    for root in ("/loadbalance", "/"):
        dump = {
            "root": root,
            "records": {
                "/loadbalance": {"text": ""},
                "/loadbalance/brokers": {"text": ""},
                "/loadbalance/brokers/10.0.0.1:8080": broker,
                "/loadbalance/broker-time-average/10.0.0.1:8080": {
                    "json": {"longTermMsgRateIn": 1.0}
                },
                "/loadbalance/bundle-data/t/ns/0x00000000_0x8000000A": {"json": BUNDLE},
                "/loadbalance/leader": {"json": {"serviceUrl": "http://10.0.0.1:8080"}},
                "/admin/policies/t/ns": {"json": {}},
            },
        }
        parsed = parse_snapshot(json.dumps(dump))
        assert parsed.warnings == ()
        files = {
            "brokers/10.0.0.1:8080": json.dumps(BROKER).encode(),
            "broker-time-average/10.0.0.1:8080": b'{"longTermMsgRateIn": 1.0}',
            "bundle-data/t/ns/0x00000000_0x8000000A": json.dumps(BUNDLE).encode(),
        }
        expected = snapshot_from_object(dump_to_object(files)[0]).snapshot
        assert parsed.snapshot.brokers == expected.brokers
        assert parsed.snapshot.bundles == expected.bundles
        assert list(parsed.snapshot.bundles) == ["t/ns/0x00000000_0x8000000a"]
    with pytest.raises(ModelError, match="records"):
        parse_snapshot(json.dumps({"root": "/", "records": []}))


def test_the_empty_nodes_above_v1_bundle_records_are_skipped() -> None:
    """ZooKeeper keeps a node for every path level: a v1 bundle's record
    (``bundle-data/TENANT/CLUSTER/NAMESPACE/RANGE``) has three empty nodes above it, and a
    namespace whose bundles are gone leaves its node. None is a load record; an empty node
    ending in a bundle range is one, and refused."""
    v1 = "/loadbalance/bundle-data/old/us-west/legacy"
    records = {
        "/loadbalance/brokers/10.0.0.1:8080": {"json": BROKER},
        "/loadbalance/bundle-data/old": {"text": ""},
        "/loadbalance/bundle-data/old/us-west": {"text": ""},
        v1: {"text": ""},
        f"{v1}/0x00000000_0xffffffff": {"json": BUNDLE},
        "/loadbalance/bundle-data/gone/ns": {"text": ""},  # no records below it
    }
    parsed = parse_snapshot(json.dumps({"root": "/loadbalance", "records": records}))
    assert list(parsed.snapshot.bundles) == ["old/us-west/legacy/0x00000000_0xffffffff"]
    records[f"{v1}/0x00000000_0xffffffff"] = {"text": ""}
    with pytest.raises(ModelError, match="an empty load record") as caught:
        parse_snapshot(json.dumps({"root": "/loadbalance", "records": records}))
    assert caught.value.path == f'$.records["{v1}/0x00000000_0xffffffff"]'


def test_a_load_record_a_metadata_dump_holds_as_text_is_refused_not_dropped() -> None:
    for entry, kind in (({"text": "not json"}, "text"), ({"base64": "AAE="}, "base64")):
        dump = {
            "root": "/loadbalance",
            "records": {
                "/loadbalance/bundle-data/t/ns": {"text": ""},  # a node above the records
                "/loadbalance/brokers/10.0.0.1:8080": {"json": BROKER},
                "/loadbalance/brokers/10.0.0.2:8080": entry,
            },
        }
        with pytest.raises(ModelError, match=f"not JSON .the dump holds it as {kind}") as caught:
            parse_snapshot(json.dumps(dump))
        assert caught.value.path == '$.records["/loadbalance/brokers/10.0.0.2:8080"]'
    # A broken entry of a load record is refused too, not left out with its broker.
    for entry, why in (
        ("oops", "a record is an object"),
        ({"text": ""}, "an empty load record"),
        ({"yaml": 1}, "a record without json, text or base64"),
        ({"json": BROKER, "text": "x"}, "a record holds json, text or base64, not json and text"),
    ):
        dump = {"root": "/", "records": {"/loadbalance/brokers/10.0.0.2:8080": entry}}
        with pytest.raises(ModelError, match=why) as caught:
            parse_snapshot(json.dumps(dump))
        assert caught.value.path == '$.records["/loadbalance/brokers/10.0.0.2:8080"]'


def test_two_files_of_one_record_and_an_empty_snapshot_are_refused() -> None:
    """``brokers/b1`` and ``brokers/b1.json`` in one dump: which is the report is unknown, so
    neither is taken silently."""
    files = {"brokers/b1": json.dumps(BROKER).encode(), "brokers/b1.json": b"{}"}
    with pytest.raises(ModelError, match=r"brokers/b1 and brokers/b1\.json are both the record"):
        dump_to_object(files)
    for empty in ("", "  \n", b"\xef\xbb\xbf"):
        with pytest.raises(ModelError, match="the snapshot is empty"):
            parse_snapshot(empty)


def test_a_namespace_given_by_its_count_is_held_to_the_creation_limit() -> None:
    """A count alone makes every boundary; 2^31 - 1 of them would exhaust memory."""
    root = {"brokers": {"b1": {}}, "namespaces": {"a/b": {"numBundles": 2**31 - 1}}}
    with pytest.raises(ModelError, match="more than a namespace can be created with") as caught:
        parse_snapshot(json.dumps(root))
    assert caught.value.path == '$.namespaces["a/b"].numBundles'
    root["namespaces"] = {"a/b": {"numBundles": 4}}
    assert parse_snapshot(json.dumps(root)).snapshot.namespaces["a/b"].count == 4


def test_a_load_record_a_metadata_dump_holds_as_json_text_is_read() -> None:
    """`ballast metadata dump` keeps as text the JSON it could not write back byte for byte
    as JSON: Pulsar's Jackson writes `1.0E-5`, and a record may be spaced out. Such a
    record is read as the same record held as JSON."""
    jackson = json.dumps(BROKER, indent=2).replace('"cpu": {', '"cpu":  {')
    as_json = {"root": "/", "records": {"/loadbalance/brokers/10.0.0.1:8080": {"json": BROKER}}}
    as_text = {"root": "/", "records": {"/loadbalance/brokers/10.0.0.1:8080": {"text": jackson}}}
    assert (
        parse_snapshot(json.dumps(as_text)).snapshot == parse_snapshot(json.dumps(as_json)).snapshot
    )
