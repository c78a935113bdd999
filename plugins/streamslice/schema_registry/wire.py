"""Schema-registry wire formats, detected per record from the first byte.

* Confluent, magic byte 0: a 4-byte big-endian schema id, then the payload;
* Confluent, magic byte 1: a 16-byte schema GUID, then the payload;
* the same Confluent schema id or GUID (and Protobuf message indexes) in a record header,
  ``__value_schema_id`` / ``__key_schema_id``, with the bare payload as the record's bytes:
  what confluent-kafka's serializers write with ``header_schema_id_serializer``. As its
  ``dual_schema_id_deserializer`` does, the first header of that name wins, and a record
  without one (or with a null one) is read by its payload prefix;
* AWS Glue, header version byte 3: a compression byte (0 none, 5 zlib), the writer schema
  version's 16-byte UUID, then the payload, zlib-compressed when the byte says so.

Protobuf payloads carry which message of the schema they hold: Confluent writes an array of
zig-zag varints (its length, then the index path; a single 0 byte means the first message),
Glue one unsigned varint (the message's position among all messages of the file sorted by
full name). Parsing never raises anything but ``FrameError``, whose text is the dead letter's
reason.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from uuid import UUID

CONFLUENT, CONFLUENT_GUID, GLUE = "confluent", "confluent-guid", "glue"
# confluent_kafka.schema_registry's _KEY_SCHEMA_ID / _VALUE_SCHEMA_ID
HEADERS = {"value": "__value_schema_id", "key": "__key_schema_id"}
GLUE_NONE, GLUE_ZLIB = 0, 5
MAX_INDEXES = 1024  # a message nested deeper than this is not a real schema
MAX_INFLATED = 64 * 1024 * 1024  # a zlib payload may not inflate past this


class FrameError(ValueError):
    """A record that is not a registry frame this reader understands."""


@dataclass(frozen=True)
class Frame:
    kind: str  # CONFLUENT | CONFLUENT_GUID | GLUE
    schema: int | str  # Confluent id, or the GUID / Glue version UUID as text
    payload: bytes
    indexes: tuple[int, ...] = ()  # Protobuf only: Confluent's path, or (Glue's index,)

    @property
    def key(self) -> tuple[str, int | str]:
        """What the writer schema is cached under."""
        return self.kind, self.schema


def describe_magic(first: int) -> str:
    hint = ""
    if first in b"{[\"":
        hint = " (it looks like JSON: is this topic written without a schema registry?)"
    elif 0x20 <= first < 0x7F:
        hint = " (it looks like text: is this topic written without a schema registry?)"
    return (f"unknown magic byte 0x{first:02x}: not a Confluent (0x00, 0x01) nor an AWS Glue "
            f"(0x03) schema-registry frame{hint}")


def parse(data: bytes | None, protobuf: bool = False) -> Frame:
    """One record's bytes → its frame."""
    if data is None:
        raise FrameError("value is null (a tombstone?), expected a schema-registry frame")
    n = len(data)
    if n == 0:
        raise FrameError("empty record, expected a schema-registry frame")
    first = data[0]
    if first == 3:
        return _glue(data, protobuf)
    if first not in (0, 1):
        raise FrameError(describe_magic(first))
    kind, schema, pos = _schema_id(data, "Confluent frame")
    indexes: tuple[int, ...] = ()
    if protobuf:
        indexes, pos = _confluent_indexes(data, pos)
    return Frame(kind, schema, bytes(data[pos:]), indexes)


def header_value(headers: list[tuple[str, bytes | None]] | None, role: str) -> bytes | None:
    """The schema id header of a record's ``role`` (``value``/``key``): the first of that
    name, as Confluent's deserializer takes it; None without one."""
    if headers:
        name = HEADERS[role]
        for key, value in headers:
            if key == name:
                return value
    return None


def parse_header(header: bytes, data: bytes | None, role: str = "value",
                 protobuf: bool = False) -> Frame:
    """A record whose schema id (and Protobuf message indexes) came in its ``role``'s header:
    the record's bytes are the bare payload."""
    what = f"header {HEADERS[role]}"
    if not header:
        raise FrameError(f"{what} is empty, expected a Confluent schema id")
    if header[0] not in (0, 1):
        raise FrameError(f"{what}: unknown magic byte 0x{header[0]:02x}, not a Confluent "
                         "schema id (0x00 and a 4-byte id, 0x01 and a 16-byte GUID)")
    kind, schema, pos = _schema_id(header, what)
    indexes: tuple[int, ...] = ()
    if protobuf:
        indexes, pos = _confluent_indexes(header, pos)
    if pos != len(header):
        raise FrameError(f"{what}: {len(header) - pos} bytes after the schema id"
                         + (" and message indexes" if protobuf else ""))
    if data is None:
        raise FrameError(f"{role} is null (a tombstone?), but {what} names its schema")
    return Frame(kind, schema, bytes(data), indexes)


def _schema_id(data: bytes, what: str) -> tuple[str, int | str, int]:
    """Confluent's magic byte and schema id or GUID → (kind, schema, next position)."""
    n, frame = len(data), what == "Confluent frame"
    if data[0] == 0:
        if n < 5:
            raise FrameError(f"truncated {what}: {n} bytes, "
                             + ("the header alone is 5" if frame else "a schema id takes 5"))
        return CONFLUENT, int.from_bytes(data[1:5], "big"), 5
    if n < 17:
        raise FrameError(f"truncated {what}: {n} bytes, "
                         + ("a GUID header is 17" if frame else "a GUID takes 17"))
    return CONFLUENT_GUID, str(UUID(bytes=bytes(data[1:17]))), 17


def _glue(data: bytes, protobuf: bool) -> Frame:
    n = len(data)
    if n < 18:
        raise FrameError(f"truncated AWS Glue frame: {n} bytes, the header alone is 18")
    compression = data[1]
    version = str(UUID(bytes=bytes(data[2:18])))
    payload = bytes(data[18:])
    if compression == GLUE_ZLIB:
        payload = _inflate(payload)
    elif compression != GLUE_NONE:
        raise FrameError(f"AWS Glue frame with unknown compression byte 0x{compression:02x} "
                         "(0x00 none, 0x05 zlib)")
    indexes: tuple[int, ...] = ()
    if protobuf:
        index, pos = varint(payload, 0, "AWS Glue Protobuf message index")
        indexes, payload = (index,), payload[pos:]
    return Frame(GLUE, version, payload, indexes)


def _inflate(payload: bytes) -> bytes:
    d = zlib.decompressobj()
    try:
        out = d.decompress(payload, MAX_INFLATED)
    except zlib.error as exc:
        raise FrameError(f"AWS Glue frame: zlib payload does not inflate: {exc}") from None
    if d.unconsumed_tail:
        raise FrameError(f"AWS Glue frame: zlib payload inflates past "
                         f"{MAX_INFLATED // (1024 * 1024)} MiB")
    if not d.eof:
        raise FrameError("AWS Glue frame: zlib payload is truncated")
    if d.unused_data:
        raise FrameError(f"AWS Glue frame: {len(d.unused_data)} bytes after the zlib stream")
    return out


def varint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """An unsigned base-128 varint at ``pos`` → (value, next position)."""
    value = shift = 0
    n = len(data)
    while True:
        if pos >= n:
            raise FrameError(f"truncated {what}")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise FrameError(f"{what}: varint longer than 10 bytes")


def _zigzag(data: bytes, pos: int, what: str) -> tuple[int, int]:
    value, pos = varint(data, pos, what)
    return (value >> 1) ^ -(value & 1), pos


def _confluent_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    count, pos = _zigzag(data, pos, "Confluent Protobuf message-index array")
    if count == 0:
        return (0,), pos
    if count < 0 or count > MAX_INDEXES:
        raise FrameError(f"Confluent Protobuf message-index array of length {count}")
    out = []
    for _ in range(count):
        index, pos = _zigzag(data, pos, "Confluent Protobuf message index")
        if index < 0:
            raise FrameError(f"negative Confluent Protobuf message index {index}")
        out.append(index)
    return tuple(out), pos
