"""Topic and namespace names against Pulsar's TopicName / NamespaceName behaviour."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.model import naming
from ballast.model.naming import (
    InvalidNameError,
    InvalidNamespaceName,
    InvalidTopicName,
    NamespaceName,
    TopicDomain,
    TopicName,
    destination_broker_id,
    heartbeat_namespace,
    java_url_encode,
    partition_index,
    validate_entity_name,
    validate_tenant,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("my-topic", "persistent://public/default/my-topic"),
        ("a/b/c", "persistent://a/b/c"),
        ("persistent://public/default/my-topic", "persistent://public/default/my-topic"),
        ("PERSISTENT://t/ns/x", "persistent://t/ns/x"),
        ("Non-Persistent://t/ns/x", "non-persistent://t/ns/x"),
        ("persistent://t/c/ns/a/b/1", "persistent://t/c/ns/a/b/1"),
        ("persistent://t/c/ns//x//", "persistent://t/c/ns//x//"),
        ("persistent://t/c/ns/$#3rpa/table/1", "persistent://t/c/ns/$#3rpa/table/1"),
    ],
)
def test_canonical_forms(text: str, canonical: str) -> None:
    assert str(TopicName.parse(text)) == canonical


def test_v2_parts() -> None:
    topic = TopicName.parse("non-persistent://my-tenant/my-ns/orders-partition-3")
    assert topic.domain is TopicDomain.NON_PERSISTENT
    assert (topic.tenant, topic.cluster, topic.namespace_portion) == ("my-tenant", None, "my-ns")
    assert topic.local_name == "orders-partition-3"
    assert topic.is_v2 and not topic.is_persistent
    assert topic.partition_index == 3
    assert str(topic.partitioned_parent) == "non-persistent://my-tenant/my-ns/orders"
    assert str(topic.namespace) == "my-tenant/my-ns"


@pytest.mark.parametrize("local", ["-partition-0", ".-partition-1", "..-partition-2"])
def test_a_partition_of_no_topic_is_its_own_parent(local: str) -> None:
    """What precedes the suffix is no topic name: parsing it raised, and a broker opening
    the partition failed the request without an answer."""
    topic = TopicName.parse(f"non-persistent://t/n/{local}")
    assert topic.is_partition and topic.partitioned_parent == topic


def test_v1_parts_and_the_slash_quirk() -> None:
    legacy = TopicName.parse("persistent://t/c/ns/a/b/1")
    assert (legacy.tenant, legacy.cluster, legacy.namespace_portion) == ("t", "c", "ns")
    assert legacy.local_name == "a/b/1"
    assert not legacy.is_v2
    # A v2-looking name whose local part has a slash parses as v1, as in Pulsar.
    quirk = TopicName.parse("persistent://t/ns/a/b")
    assert (quirk.cluster, quirk.namespace_portion, quirk.local_name) == ("ns", "a", "b")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("persistent:///ns/t", 'tenant "" is empty in "persistent:///ns/t"'),
        ("persistent://p//ns/x", 'cluster "" is empty'),
        ("persistent://p/c//x", 'namespace "" is empty'),
        ("persistent:///c/ns/x", 'tenant "" is empty'),
        ("persistent://p/c/ns/", 'topic "" is empty'),
        ("persistent://t/ns/", 'topic "" is empty'),
        ("persistent://t/ns/..", 'topic ".." is not a name'),
        ("non-persistent://t/c/ns/.", 'topic "." is not a name'),
        ("queue://t/ns/x", 'domain "queue"'),
        ("://t/ns/x", 'domain ""'),
        ("persistent://t/x", "is not <domain>://"),
        ("t/ns", "short name"),
        ("tenant/cluster/namespace/topic", "short name"),
        ("persistent://te nant/ns/x", 'tenant "te nant" has characters'),
        ("persistent://t/n$s/x", 'namespace "n$s" has characters'),
        ("persistent://tënant/ns/x", 'tenant "tënant"'),
        ("persistent://../ns/x", 'tenant ".." is not a name: "." and ".." are path steps in'),
        ("persistent://t/./x", 'namespace "." is not a name'),
        ("persistent://t/../ns/x", 'cluster ".." is not a name'),
        ("", "short name"),
        # the byte 0xff of a shell argument, as Python decodes it; shown as that byte
        ("persistent://t/ns/a\udcff", '"persistent://t/ns/a\\xff" is not valid UTF-8 text'),
        # a lone surrogate of other text (JSON's \ud800), shown escaped
        ("persistent://t/ns/a\ud800", '"persistent://t/ns/a\\ud800" is not valid UTF-8 text'),
    ],
)
def test_invalid_names_say_which_part(text: str, message: str) -> None:
    with pytest.raises(InvalidTopicName) as caught:
        TopicName.parse(text)
    assert message in str(caught.value)
    assert str(caught.value).startswith("InvalidTopicName: ")


def test_documented_error_text() -> None:
    with pytest.raises(InvalidTopicName) as caught:
        TopicName.parse("persistent:///ns/t")
    assert str(caught.value) == 'InvalidTopicName: tenant "" is empty in "persistent:///ns/t"'


@pytest.mark.parametrize(
    ("tenant", "message"),
    [
        ("", "InvalidNamespaceName: tenant name is empty"),
        ("a/b", 'InvalidNamespaceName: tenant "a/b" has characters outside [a-zA-Z0-9_-=:.]'),
        ("..", 'InvalidNamespaceName: tenant ".." is not a name: "." and ".." are path steps'),
    ],
)
def test_a_tenant_on_its_own_is_named_once(tenant: str, message: str) -> None:
    with pytest.raises(InvalidNamespaceName) as caught:
        validate_tenant(tenant)
    assert str(caught.value) == message
    validate_tenant("acme-1.prod")
    validate_tenant("...")  # only the path steps themselves are refused


def test_an_entity_name_is_one_path_step() -> None:
    validate_entity_name("failure domain", "rack-1")
    for bad, why in ((".", "is not a name"), ("a/b", "characters outside"), ("", "is empty")):
        with pytest.raises(InvalidNameError, match=why) as caught:
            validate_entity_name("failure domain", bad)
        assert "failure domain" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("t-partition-0", 0),
        ("t-partition-12", 12),
        ("a-partition-1-partition-2", 2),
        ("t-partition-00", -1),
        ("t-partition-01", -1),
        ("t-partition-012", -1),
        ("t-partition- 12", -1),
        ("t-partition-12 ", -1),
        ("t-partition-1&", -1),
        ("t-partition--1", -1),
        ("t-partition-+1", -1),
        ("t-partition-", -1),
        ("t-partition-2147483648", -1),
        ("t-partition-2147483647", 2147483647),
        ("plain", -1),
        ("t-partition-\u0663", 3),  # ARABIC-INDIC DIGIT THREE: a digit to Java too
        ("t-partition-\U0001d7d1", -1),  # MATHEMATICAL BOLD DIGIT THREE: two surrogates
    ],
)
def test_partition_index_follows_java_rules(name: str, index: int) -> None:
    assert partition_index(name) == index


def test_partition_of_topic() -> None:
    topic = TopicName.parse("persistent://t/ns/x")
    assert str(topic.partition(4)) == "persistent://t/ns/x-partition-4"
    assert topic.partition(-1) is topic
    part = topic.partition(4)
    assert part.partition(4) is part


def test_namespace_names() -> None:
    assert str(NamespaceName.parse("t/ns")) == "t/ns"
    assert NamespaceName.parse("t/c/ns").cluster == "c"
    # Java's String.split drops trailing empty pieces.
    assert NamespaceName.parse("t/ns/") == NamespaceName.parse("t/ns")
    for bad in ("", "t", "/t/ns", "t//ns", "a/b/c/d", "t/n s"):
        with pytest.raises(InvalidNamespaceName):
            NamespaceName.parse(bad)


def test_system_service_namespaces() -> None:
    assert NamespaceName.parse("pulsar/system").is_system_service
    assert heartbeat_namespace("10.0.0.1:8080").is_system_service
    assert heartbeat_namespace("host:8080", cluster="c1").is_system_service
    assert not NamespaceName.parse("pulsar/ordinary").is_system_service
    assert not NamespaceName.parse("public/default").is_system_service
    # Pulsar's SLA_NAMESPACE_PATTERN, sla-monitor/<cluster>/<host:port>: they were shed
    assert NamespaceName.parse("sla-monitor/c1/10.0.0.1:8080").is_system_service
    assert not NamespaceName.parse("sla-monitor/c1/ordinary").is_system_service
    assert not NamespaceName.parse("sla-monitor/10.0.0.1:8080").is_system_service  # v2: no
    # Of these, only the brokers' own are heartbeat namespaces: pulsar/system is placed.
    assert heartbeat_namespace("10.0.0.1:8080").is_heartbeat
    assert heartbeat_namespace("host:8080", cluster="c1").is_heartbeat
    assert not NamespaceName.parse("pulsar/system").is_heartbeat
    assert not NamespaceName.parse("acme/host:8080").is_heartbeat


def test_encoding_matches_java_url_encoder() -> None:
    assert java_url_encode("a b*c~d/é") == "a+b*c%7Ed%2F%C3%A9"
    topic = TopicName.parse("persistent://t/ns/a b")
    assert topic.persistence_name == "t/ns/persistent/a+b"
    assert topic.lookup_name == "persistent/t/ns/a+b"


# "." and ".." are refused: they would name another path
names = st.text(alphabet="abcXYZ019-_=:.", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
locals_ = st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s)


@given(
    domain=st.sampled_from(["persistent", "non-persistent"]),
    tenant=names,
    namespace=names,
    local=locals_,
    cluster=st.none() | names,
)
def test_canonical_string_reparses_to_the_same_name(
    domain: str, tenant: str, namespace: str, local: str, cluster: str | None
) -> None:
    middle = f"{tenant}/{namespace}" if cluster is None else f"{tenant}/{cluster}/{namespace}"
    topic = TopicName.parse(f"{domain}://{middle}/{local}")
    assert TopicName.parse(str(topic)) == topic
    assert topic.cluster == cluster
    assert topic.local_name == local


def test_long_names_are_parsed_but_not_memoised() -> None:
    """The memo is bounded by entries: a client that asked about a few hundred distinct names
    of a megabyte each grew a broker by gigabytes that stayed."""
    long_text = "persistent://t/ns/" + "x" * (naming.MEMOISED_NAME_LENGTH + 1)
    naming._parse_topic.cache_clear()
    parsed = TopicName.parse(long_text)
    assert str(parsed) == long_text and parsed.local_name == "x" * (naming.MEMOISED_NAME_LENGTH + 1)
    assert naming._parse_topic.cache_info().currsize == 0
    assert TopicName.parse("persistent://t/ns/short") == TopicName.parse("t/ns/short")
    assert naming._parse_topic.cache_info().currsize == 2


@pytest.mark.parametrize(
    ("given", "broker"),
    [
        ("10.0.0.1:8080", "10.0.0.1:8080"),
        ("http://10.0.0.1:8080", "10.0.0.1:8080"),
        ("https://b-1.example.com:8443/", "b-1.example.com:8443"),  # the URL's root
        ("[::1]:8080", "[::1]:8080"),
        ("10.0.0.1:abc", None),
        ("10.0.0.1:\u0661", None),  # a digit of another script
        ("10.0.0.1", None),
        (":8080", None),
        ("10.0.0.1:0", None),
        ("10.0.0.1:65536", None),
        ("http://10.0.0.1:8080/admin", None),  # another path than the root
        ("http://10.0.0.1:8080/?x=1", None),
        ("ftp://10.0.0.1:8080", None),
        ("a b:8080", None),
    ],
)
def test_a_destination_broker_is_an_id_or_a_web_url(given: str, broker: str | None) -> None:
    assert destination_broker_id(given) == broker
