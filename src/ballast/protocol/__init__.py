"""Pulsar's binary protocol: framing, the protobuf subset Ballast speaks, checksums, protocol
versions and limits. Pure: bytes in, values out — no sockets, no clock (the broker's listener in
``ballast.broker.binary`` is the shell that does I/O).

Written from the protocol's documentation with the field numbers of Pulsar's ``PulsarApi.proto``
(proto2, package ``pulsar.proto``); only the messages and fields Ballast needs are modelled, and
fields it does not know are skipped when decoding, as protobuf readers do.
"""
