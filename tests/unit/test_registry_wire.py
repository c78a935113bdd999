"""Schema-registry wire formats, as the registries' own libraries write them: Confluent's
``SchemaId`` (magic 0 + id, magic 1 + GUID, Protobuf message-index arrays), the
aws-glue-schema-registry package's codec (0x03, compression, version UUID, zlib), and a
record taken byte for byte from AWS's Java library's tests. Then hostile bytes: every input
is a frame or a FrameError, never another exception."""
import io
import uuid
import zlib

import pytest
from aws_schema_registry import codec as glue_codec
from confluent_kafka.schema_registry.common.serde import SchemaId

from streamslice.schema_registry.wire import (
    CONFLUENT,
    CONFLUENT_GUID,
    GLUE,
    FrameError,
    header_value,
    parse,
    parse_header,
)
from tests.support.checks import present
from tests.support.fuzz import mutations

GUID = "b7b4a7f0-9c96-4e4a-a687-fb5de9ef0c63"
# AWS's Java library (kafkastreams-serde AWSKafkaAvroSerDeTest): the generic record
# {"name": "sansa", "favorite_number": 99, "favorite_color": "red"} of user.avsc, written
# with schema version b7b4a7f0-9c96-4e4a-a687-fb5de9ef0c63 and no compression.
AWS_JAVA_VECTOR = bytes(b & 0xFF for b in [
    3, 0, -73, -76, -89, -16, -100, -106, 78, 74, -90, -121, -5, 93, -23, -17, 12, 99, 10, 115,
    97, 110, 115, 97, 0, -58, 1, 0, 6, 114, 101, 100])
AWS_USER_SCHEMA = {"namespace": "com.amazonaws.services.schemaregistry.serializers.avro",
                   "type": "record", "name": "User", "fields": [
                       {"name": "name", "type": "string"},
                       {"name": "favorite_number", "type": ["int", "null"]},
                       {"name": "favorite_color", "type": ["string", "null"]}]}


def test_confluent_id_and_guid_as_the_client_writes_them():
    assert parse(SchemaId("AVRO", schema_id=70000).id_to_bytes() + b"body") == \
        parse(b"\x00\x00\x01\x11\x70body")
    f = parse(SchemaId("AVRO", schema_id=70000).id_to_bytes() + b"body")
    assert (f.kind, f.schema, f.payload, f.indexes) == (CONFLUENT, 70000, b"body", ())
    g = parse(SchemaId("AVRO", guid=GUID).guid_to_bytes() + b"body")
    assert (g.kind, g.schema, g.payload) == (CONFLUENT_GUID, GUID, b"body")


@pytest.mark.parametrize("indexes", [[0], [1], [2, 0, 5], [300, 1]])
def test_confluent_protobuf_message_indexes(indexes):
    for head in (SchemaId("PROTOBUF", schema_id=7, message_indexes=indexes).id_to_bytes(),
                 SchemaId("PROTOBUF", guid=GUID, message_indexes=indexes).guid_to_bytes()):
        f = parse(head + b"\x08\x01", protobuf=True)
        assert f.indexes == tuple(indexes) and f.payload == b"\x08\x01"
        # and the client reads back what we read
        back = SchemaId("PROTOBUF")
        rest = back.from_bytes(io.BytesIO(head + b"\x08\x01"))
        assert tuple(present(back.message_indexes)) == f.indexes and rest.read() == f.payload


@pytest.mark.parametrize("compression", [None, "zlib"])
def test_glue_frames_from_the_aws_python_library(compression):
    version = uuid.uuid4()
    data = glue_codec.encode(b"avro-bytes" * 50, version, compression=compression)
    f = parse(data)
    assert (f.kind, f.schema, f.payload) == (GLUE, str(version), b"avro-bytes" * 50)
    assert glue_codec.decode(data) == (f.payload, version)


def test_glue_frame_from_the_aws_java_library():
    import fastavro
    f = parse(AWS_JAVA_VECTOR)
    assert (f.kind, f.schema) == (GLUE, GUID)
    record = fastavro.schemaless_reader(io.BytesIO(f.payload),
                                        fastavro.parse_schema(AWS_USER_SCHEMA))
    assert record == {"name": "sansa", "favorite_number": 99, "favorite_color": "red"}


def test_glue_protobuf_index_is_one_unsigned_varint():
    head = bytes([3, 0]) + uuid.UUID(GUID).bytes
    assert parse(head + b"\x01\x0a\x03Foo", protobuf=True).indexes == (1,)
    assert parse(head + b"\x96\x01\x08\x01", protobuf=True).indexes == (150,)
    zipped = bytes([3, 5]) + uuid.UUID(GUID).bytes + zlib.compress(b"\x02\x08\x01")
    f = parse(zipped, protobuf=True)
    assert f.indexes == (2,) and f.payload == b"\x08\x01"


@pytest.mark.parametrize("data, reason", [
    (None, "null"), (b"", "empty record"),
    (b"\x00\x00\x01", "truncated Confluent frame: 3 bytes"),
    (b"\x01" + b"\x00" * 10, "truncated Confluent frame"),
    (b"\x03\x00" + b"\x00" * 10, "truncated AWS Glue frame"),
    (b'{"id": 1}', "unknown magic byte 0x7b"),
    (b"\x02abcdef", "unknown magic byte 0x02"),
    (bytes([3, 7]) + b"\x00" * 16 + b"x", "unknown compression byte 0x07"),
    (bytes([3, 5]) + b"\x00" * 16 + b"not zlib", "does not inflate"),
    (bytes([3, 5]) + b"\x00" * 16 + zlib.compress(b"abc" * 100)[:-5], "truncated"),
    (bytes([3, 5]) + b"\x00" * 16 + zlib.compress(b"abc") + b"junk", "after the zlib"),
])
def test_bad_frames_say_why(data, reason):
    with pytest.raises(FrameError, match=reason):
        parse(data)


def test_a_zlib_bomb_is_refused(monkeypatch):
    monkeypatch.setattr("streamslice.schema_registry.wire.MAX_INFLATED", 1024 * 1024)
    bomb = zlib.compress(b"\x00" * (2 * 1024 * 1024), 9)
    with pytest.raises(FrameError, match="inflates past"):
        parse(bytes([3, 5]) + b"\x00" * 16 + bomb)


@pytest.mark.parametrize("data, reason", [
    (b"\x00\x00\x00\x00\x07", "truncated Confluent Protobuf message-index array"),
    (b"\x00\x00\x00\x00\x07\x03", "message-index array of length -2"),
    (b"\x00\x00\x00\x00\x07\x04\x02", "truncated Confluent Protobuf message index"),
    (b"\x00\x00\x00\x00\x07\x02\x01", "negative Confluent Protobuf message index"),
    (b"\x00\x00\x00\x00\x07" + b"\xff" * 12, "longer than 10 bytes"),
    (b"\x00\x00\x00\x00\x07\xfe\xff\x03", "array of length"),
])
def test_bad_protobuf_indexes_say_why(data, reason):
    with pytest.raises(FrameError, match=reason):
        parse(data, protobuf=True)


def header_serialized(field, schema_id, payload):
    """What confluent-kafka's header_schema_id_serializer makes of a payload: (the record's
    bytes, its headers)."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    headers: list = [("trace", b"x")]
    ctx = SerializationContext("t", MessageField.KEY if field == "key" else MessageField.VALUE,
                               headers)
    return header_schema_id_serializer(payload, ctx, schema_id), headers


@pytest.mark.parametrize("role", ["value", "key"])
@pytest.mark.parametrize("indexes", [None, [0], [2, 0, 5]])
def test_schema_id_headers_as_the_client_writes_and_reads_them(role, indexes):
    from confluent_kafka.schema_registry import dual_schema_id_deserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    protobuf = indexes is not None
    sid = SchemaId("PROTOBUF" if protobuf else "AVRO", guid=GUID, message_indexes=indexes)
    # a bare payload that starts with 0x00 (the old misreading: "schema id 174613618")
    payload = b"\x00\x0a\x68\x72\x32body"
    data, headers = header_serialized(role, sid, payload)
    assert data == payload and [h[0] for h in headers][1] == f"__{role}_schema_id"
    header = present(header_value(headers, role))
    f = parse_header(header, data, role, protobuf)
    assert (f.kind, f.schema, f.payload) == (CONFLUENT_GUID, GUID, payload)
    assert f.indexes == (tuple(indexes) if protobuf else ())
    # and the client's own deserializer reads the same id, indexes and payload
    back = SchemaId(sid.schema_type)
    rest = dual_schema_id_deserializer(data, SerializationContext(
        "t", MessageField.KEY if role == "key" else MessageField.VALUE, headers), back)
    assert (str(back.guid), rest.read()) == (GUID, f.payload)
    assert tuple(back.message_indexes or ()) == f.indexes
    other = "key" if role == "value" else "value"
    assert header_value(headers, other) is None  # a key's header is not the value's


def test_schema_id_header_lookup_follows_confluent():
    first, second = SchemaId("AVRO", schema_id=7).id_to_bytes(), b"\x00\x00\x00\x00\x08"
    assert header_value([("__value_schema_id", first), ("__value_schema_id", second)],
                        "value") == first  # the first of that name, as the client
    assert header_value([("__value_schema_id", None)], "value") is None  # → payload prefix
    assert header_value(None, "value") is None and header_value([], "key") is None
    f = parse_header(first, b"body")
    assert (f.kind, f.schema, f.payload) == (CONFLUENT, 7, b"body")


@pytest.mark.parametrize("header, data, reason", [
    (b"", b"x", "header __value_schema_id is empty"),
    (b"\x02abc", b"x", "header __value_schema_id: unknown magic byte 0x02"),
    (b"\x00\x00\x01", b"x", "truncated header __value_schema_id: 3 bytes, a schema id takes 5"),
    (b"\x01" + b"\x00" * 10, b"x", "truncated header __value_schema_id: 11 bytes, a GUID"),
    (b"\x00\x00\x00\x00\x07junk", b"x", "header __value_schema_id: 4 bytes after the schema id"),
    (b"\x00\x00\x00\x00\x07", None, "value is null .* but header __value_schema_id names"),
])
def test_bad_schema_id_headers_say_why(header, data, reason):
    with pytest.raises(FrameError, match=reason):
        parse_header(header, data)


def test_fuzz_every_input_is_a_frame_or_a_frame_error():
    seeds = [AWS_JAVA_VECTOR, SchemaId("PROTOBUF", schema_id=3, message_indexes=[1, 2])
             .id_to_bytes() + b"\x08\x01", bytes([3, 5]) + b"\x00" * 16 + zlib.compress(b"x")]
    for data in mutations(seeds, 20_000, seed=19, most=4):
        for protobuf in (False, True):
            try:
                f = parse(data, protobuf)
            except FrameError as exc:
                assert str(exc)
            else:
                assert f.kind in (CONFLUENT, CONFLUENT_GUID, GLUE)
