"""De-aggregation of KPL aggregated records (the format the Kinesis Producer Library writes):
magic ``F3 89 9A C2`` + protobuf ``AggregatedRecord`` + MD5 of the protobuf. A record that does
not carry the magic and a valid checksum is a plain record."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

MAGIC = b"\xf3\x89\x9a\xc2"


def deaggregate(data: bytes, partition_key: str) -> list[tuple[int | None, str, bytes]]:
    """``[(sub_sequence_number, partition_key, data)]``; a plain record gives one entry with
    sub-sequence number None."""
    if len(data) < len(MAGIC) + 16 or not data.startswith(MAGIC):
        return [(None, partition_key, data)]
    body, digest = data[len(MAGIC):-16], data[-16:]
    if hashlib.md5(body).digest() != digest:
        return [(None, partition_key, data)]
    try:
        keys: list[str] = []
        records: list[dict[int, Any]] = []
        for field, value in _fields(body):
            if field == 1:
                keys.append(value.decode("utf-8"))
            elif field == 3:
                records.append(dict(_fields(value)))
        return [(i, keys[r.get(1, 0)] if keys else partition_key, r.get(3, b""))
                for i, r in enumerate(records)]
    except (IndexError, ValueError, UnicodeDecodeError):
        return [(None, partition_key, data)]


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) pairs of a protobuf message: varints as int, bytes as bytes."""
    i = 0
    while i < len(buf):
        tag, i = _varint(buf, i)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value: Any
            value, i = _varint(buf, i)
        elif wire == 2:
            length, i = _varint(buf, i)
            value, i = bytes(buf[i:i + length]), i + length
            if i > len(buf):
                raise ValueError("truncated field")
        elif wire == 1:
            value, i = bytes(buf[i:i + 8]), i + 8
        elif wire == 5:
            value, i = bytes(buf[i:i + 4]), i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield field, value
