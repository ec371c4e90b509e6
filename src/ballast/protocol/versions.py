"""Protocol versions (``ProtocolVersion`` in ``PulsarApi.proto``) and how a broker negotiates
one: the client's CONNECT names the newest version it speaks; the broker answers CONNECTED with
the smaller of that and its own (Pulsar's ``Commands.newConnected``: "if the broker supports a
newer version of the protocol, it will anyway advertise the max version that the client
supports, to avoid confusing the client"). Features a version introduced are used with a client
only when the negotiated version has them.
"""

from __future__ import annotations

# v20 added CommandTopicMigrated; Ballast never sends it, and every optional feature of the
# versions up to 20 it does not use (broker entry metadata, transactions) is opt-in.
BROKER_PROTOCOL_VERSION = 20

V_KEEP_ALIVE = 1  # PING / PONG
V_BATCHES = 4  # batched messages
V_CLOSE_WITHOUT_DISCONNECT = 5  # CLOSE_PRODUCER / CLOSE_CONSUMER from the broker
V_CHECKSUM = 6  # CRC32C in the payload section
V_BINARY_LOOKUP = 7  # LOOKUP over the binary protocol
V_ACTIVE_CONSUMER_CHANGE = 12  # also GET_TOPICS_OF_NAMESPACE
V_KEY_SHARED = 14

# Pulsar's defaults: maxMessageSize (5 MiB) and the frame's allowance on top of it for the
# command and metadata (Commands.MESSAGE_SIZE_FRAME_PADDING).
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
FRAME_PADDING = 10 * 1024


def negotiate(client_version: int) -> int:
    """The version both sides use: the smaller of the client's and the broker's (a client
    that names none, or a negative one, speaks v0)."""
    return max(0, min(BROKER_PROTOCOL_VERSION, client_version))


def max_frame_size(max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> int:
    """The largest frame accepted, size field included (Pulsar's frame decoder limit)."""
    return max_message_size + FRAME_PADDING
