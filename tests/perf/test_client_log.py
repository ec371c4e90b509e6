"""The Pulsar client's log read back: which lines are echoed, what facts are kept, and the
words a failure is explained in (claiming only what the log shows). The lines are the C++
client's (4.2.0), as it wrote them against Ballast."""

from __future__ import annotations

from pathlib import Path

from ballast.perf.client_log import (
    ClientFacts,
    ClientLog,
    Refusal,
    creation_failure,
    parse_line,
    stopped_connecting,
)

URL = "pulsar://127.0.0.1:19999"
WHAT = "a producer for non-persistent://public/default/x"
REFUSED = (
    "2026-11-24 17:53:15.541 ERROR [140669320427200] ClientConnection:485 | "
    "[<none> -> pulsar://127.0.0.1:19999] Failed to establish connection to 0.0.0.0:0: "
    "Connection refused"
)
CONNECTED = (
    "2026-11-24 17:57:05.669 INFO  [140350586873536] ClientConnection:420 | "
    "[127.0.0.1:50932 -> 127.0.0.1:19080] Connected to broker"
)
CLOSED = (
    "2026-11-24 17:57:06.266 INFO  [140350586873536] ClientConnection:1290 | "
    "[127.0.0.1:50932 -> 127.0.0.1:19080] Connection disconnected (refCnt: 3)"
)
NOT_ALLOWED = (
    "2026-11-24 17:56:56.291 WARN  [140289647638208] ClientConnection:1731 | "
    "[127.0.0.1:56388 -> 127.0.0.1:19650] Received error response from server: "
    "ResultNotAllowedError (persistent://t/n/x: persistent topics need a storage layer) "
    "-- req_id: 0"
)
CONSUMER_FAILED = (
    "2026-11-24 17:56:56.291 ERROR [140289647638208] ConsumerImpl:383 | "
    "[persistent://t/n/x, s, 0] Failed to create consumer: ResultNotAllowedError"
)


def facts_of(*lines: str) -> ClientFacts:
    facts = ClientFacts()
    for text in lines:
        line = parse_line(text)
        assert line is not None, text
        facts.update(line)
    return facts


def test_a_line_is_parsed_into_level_source_and_message() -> None:
    line = parse_line(REFUSED)
    assert line is not None
    assert (line.level, line.source) == ("ERROR", "ClientConnection:485")
    assert line.message.endswith("Failed to establish connection to 0.0.0.0:0: Connection refused")
    assert parse_line("  at a continuation") is None


def test_a_hexadecimal_thread_id_is_read_too() -> None:
    """libc++ (macOS) writes the thread id in hexadecimal: no line was parsed there."""
    line = parse_line(REFUSED.replace("[140669320427200]", "[0x70000e4f1000]"))
    assert line is not None and line.source == "ClientConnection:485"


def test_the_facts_a_log_gives() -> None:
    facts = facts_of(REFUSED, CONNECTED, CLOSED, CLOSED, NOT_ALLOWED, CONSUMER_FAILED)
    assert facts.reached_broker and facts.closed_connections == 2
    assert facts.last_connection_error == (  # the server it was for is named
        "pulsar://127.0.0.1:19999: Failed to establish connection to 0.0.0.0:0: Connection refused"
    )
    assert facts.last_refusal == Refusal(
        "NotAllowedError", "persistent://t/n/x: persistent topics need a storage layer"
    )


def test_a_timeout_without_a_connection_says_it_could_not_connect() -> None:
    assert creation_failure(URL, WHAT, "Timeout", facts_of(REFUSED, REFUSED), 30.2) == (
        f"could not connect to a broker via {URL} within 30 s (the client's last error: "
        f"{URL}: Failed to establish connection to 0.0.0.0:0: Connection refused)"
    )
    assert creation_failure(URL, WHAT, "Timeout", ClientFacts(), 30) == (
        f"could not connect to a broker via {URL} within 30 s"
    )


def test_a_timeout_after_connecting_does_not_claim_a_cause() -> None:
    url = "pulsar://127.0.0.1:19080"
    assert creation_failure(url, WHAT, "Timeout", facts_of(CONNECTED, CLOSED, CLOSED), 39) == (
        f"could not create {WHAT} within 39 s: the client connected via {url}, but the "
        "connection was closed 2 times with no error said: is that a broker's binary port, "
        "not its web port?"
    )  # a question: a web port hangs up on Pulsar's handshake so, but other servers may too


def test_after_a_first_broker_the_unreachable_one_is_named() -> None:
    """A lookup answered, then the owner's address refused: the message said only that the
    connection was closed (and counted the refused attempt as a closed connection)."""
    owner = "pulsar://10.0.0.9:6650"
    refused = REFUSED.replace("pulsar://127.0.0.1:19999", owner)
    attempt = CLOSED.replace("127.0.0.1:50932 -> 127.0.0.1:19080", f"<none> -> {owner}")
    facts = facts_of(CONNECTED, refused, attempt)
    assert facts.closed_connections == 0
    assert creation_failure(URL, WHAT, "Timeout", facts, 30) == (
        f"could not create {WHAT} within 30 s: the client connected via {URL} (the client's "
        f"last error: {owner}: Failed to establish connection to 0.0.0.0:0: Connection refused)"
    )


def test_a_refusal_gives_the_brokers_reason() -> None:
    what = "a consumer on persistent://t/n/x (subscription 'sub')"
    facts = facts_of(CONNECTED, NOT_ALLOWED, CONSUMER_FAILED)
    assert creation_failure(URL, what, "NotAllowedError", facts, 0.1) == (
        f"the cluster refused {what}: NotAllowedError: "
        "persistent://t/n/x: persistent topics need a storage layer"
    )


def test_another_error_names_the_error_and_what_the_log_showed() -> None:
    assert creation_failure(URL, WHAT, "LookupError", facts_of(REFUSED), 0.1) == (
        f"could not create {WHAT}: LookupError; no connection to a broker via {URL} "
        f"(the client's last error: {URL}: Failed to establish connection to 0.0.0.0:0: "
        "Connection refused)"
    )


def test_a_stop_while_connecting_says_how_far_it_got() -> None:
    assert stopped_connecting(URL, WHAT, "interrupted after 1.2 s", facts_of(REFUSED)) == (
        f"interrupted after 1.2 s before {WHAT} was created: no connection to a broker via "
        f"{URL} yet (the client's last error: {URL}: Failed to establish connection to "
        "0.0.0.0:0: Connection refused)"
    )
    assert stopped_connecting(URL, WHAT, "--duration 2 s passed", facts_of(CONNECTED)) == (
        f"--duration 2 s passed before {WHAT} was created: the client connected via {URL}"
    )


def test_the_log_echoes_warnings_and_errors_as_they_come_and_is_removed() -> None:
    echoed: list[str] = []
    log = ClientLog(echoed.append)
    path = Path(log.path)
    with path.open("a", encoding="utf-8") as file:
        # The client has the file open: its name goes at once, so that no way of ending the
        # process leaves it behind (a SIGKILL left it in /tmp); writes still reach the log.
        log.opened()
        assert not path.exists()
        file.write(f"{CONNECTED}\n{NOT_ALLOWED}\n  its continuation\n{CLOSED}\n{REFUSED[:40]}")
        file.flush()
        log.poll()
        assert echoed == [NOT_ALLOWED, "  its continuation"]  # the partial line waits
        file.write(f"{REFUSED[40:]}\n{CONSUMER_FAILED}")
        file.flush()
        log.poll()
        assert echoed[2:] == [REFUSED]
        log.close()  # what the client logs while it closes is read, not echoed
    assert echoed[3:] == []
    assert log.facts.last_refusal is not None and log.facts.closed_connections == 1
    assert not path.exists()
