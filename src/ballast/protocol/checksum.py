"""CRC32C (Castagnoli), the checksum of Pulsar's payload section: computed over everything after
the checksum field — the metadata size, the metadata and the payload.

:func:`crc32c` uses the ``google-crc32c`` C implementation; :func:`crc32c_reference` is the
bit-by-bit definition (reflected polynomial 0x82F63B78, initial and final XOR 0xFFFFFFFF), kept
as the executable specification the fast one is tested against.
"""

from __future__ import annotations

import google_crc32c

_POLYNOMIAL = 0x82F63B78


def crc32c(data: bytes) -> int:
    """The CRC32C of ``data`` as an unsigned 32-bit int (``crc32c(b"123456789") ==
    0xE3069283``, the standard check value)."""
    return int(google_crc32c.value(data))


def _table() -> tuple[int, ...]:
    entries = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLYNOMIAL if crc & 1 else crc >> 1
        entries.append(crc)
    return tuple(entries)


_TABLE = _table()


def crc32c_reference(data: bytes) -> int:
    """CRC32C computed in pure Python (slow; the specification)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
