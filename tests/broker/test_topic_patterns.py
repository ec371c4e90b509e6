"""GET_TOPICS_OF_NAMESPACE's pattern: matched by the broker with RE2, as Pulsar's default
regex implementation (RE2J) does, or left to the client."""

from __future__ import annotations

import pytest

from ballast.broker.binary.requests import filter_topics

TOPICS = [
    "persistent://t/ns/orders-1",
    "persistent://t/ns/orders-22",
    "non-persistent://t/ns/orders-3",
    "persistent://t/ns/payments",
]


def test_names_match_whole_without_their_scheme() -> None:
    assert filter_topics(TOPICS, "persistent://t/ns/orders-\\d", 50) == [
        "persistent://t/ns/orders-1",
        "non-persistent://t/ns/orders-3",
    ]
    assert filter_topics(TOPICS, "t/ns/.*s", 50) == ["persistent://t/ns/payments"]


@pytest.mark.timeout(60)
def test_a_pattern_that_backtracks_is_matched_in_linear_time() -> None:
    """Python's re took twice as long for each ``a`` more: 26 s for 30 (the broker's event
    loop held, every broker of the process stalled); 40 would take hours."""
    name = "persistent://t/ns/" + "a" * 40 + "!"
    assert filter_topics([name, "persistent://t/ns/aaa"], "t/ns/(a+)+", 50) == [
        "persistent://t/ns/aaa"
    ]


@pytest.mark.parametrize(
    "pattern",
    [
        "t/ns/(o)\\1.*",  # a backreference: RE2 cannot, Pulsar falls back to Java's engine
        "t/ns/(?=orders).*",  # lookaround
        "t/ns/orders-(",  # not a regular expression
        "t/ns/" + "o?" * 30 + ".*",  # longer than subscriptionPatternMaxLength
    ],
)
def test_the_client_filters_what_the_broker_does_not_match(pattern: str) -> None:
    assert filter_topics(TOPICS, pattern, 50) is None


def test_the_length_limit_is_a_setting() -> None:
    pattern = "t/ns/" + "o?" * 30 + "payments"
    assert filter_topics(TOPICS, pattern, 100) == ["persistent://t/ns/payments"]
