"""Protobuf → Arrow: Spark's type mapping, message indexes as confluent-kafka's
ProtobufSerializer writes them (against the client's own in-memory ``mock://`` registry) and
as AWS's Java encoder writes them for Glue, and bad records as dead letters."""
import base64
import re
import uuid

import pyarrow as pa
import pytest
from aws_schema_registry import codec as glue_codec
from google.protobuf import descriptor_pb2, text_format
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.message_factory import GetMessageClass

from streamslice.codecs.framed import Framed
from streamslice.codecs.protobuf import (
    ProtobufCodec,
    ProtobufSchemaError,
    add_descriptor_set,
    new_pool,
)
from streamslice.schema_registry.base import Registered, Registry, UnknownSchema
from tests.support.fuzz import mutations

TRIP_PROTO = """
name: "trip.proto" package: "demo" syntax: "proto3"
dependency: "google/protobuf/timestamp.proto"
message_type {
  name: "Trip"
  field { name: "id" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
  field { name: "count" number: 2 type: TYPE_INT64 label: LABEL_OPTIONAL }
  field { name: "big" number: 3 type: TYPE_UINT64 label: LABEL_OPTIONAL }
  field { name: "tags" number: 4 type: TYPE_STRING label: LABEL_REPEATED }
  field { name: "m" number: 5 type: TYPE_MESSAGE label: LABEL_REPEATED
          type_name: ".demo.Trip.MEntry" }
  field { name: "kind" number: 6 type: TYPE_ENUM label: LABEL_OPTIONAL
          type_name: ".demo.Trip.Kind" }
  field { name: "inner" number: 7 type: TYPE_MESSAGE label: LABEL_OPTIONAL
          type_name: ".demo.Trip.Inner" }
  field { name: "at" number: 8 type: TYPE_MESSAGE label: LABEL_OPTIONAL
          type_name: ".google.protobuf.Timestamp" }
  nested_type { name: "Inner" field { name: "x" number: 1 type: TYPE_DOUBLE
                                      label: LABEL_OPTIONAL } }
  nested_type { name: "MEntry" options { map_entry: true }
    field { name: "key" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
    field { name: "value" number: 2 type: TYPE_INT32 label: LABEL_OPTIONAL } }
  enum_type { name: "Kind" value { name: "A" number: 0 } value { name: "B" number: 1 } }
}
message_type { name: "Other" field { name: "q" number: 1 type: TYPE_INT32
                                     label: LABEL_OPTIONAL } }
"""
LOOP_PROTO = """
name: "loop.proto" package: "demo" syntax: "proto3"
message_type { name: "Node" field { name: "next" number: 1 type: TYPE_MESSAGE
               label: LABEL_OPTIONAL type_name: ".demo.Node" } }
"""


def file_proto(text):
    return text_format.Parse(text, descriptor_pb2.FileDescriptorProto())


def classes(text=TRIP_PROTO):
    pool = new_pool()
    pool.Add(file_proto(text))
    return pool, {n: GetMessageClass(pool.FindMessageTypeByName(f"demo.{n}"))
                  for n in ("Trip", "Other", "Trip.Inner") if text is TRIP_PROTO}


class DictRegistry(Registry):
    where = "the test registry"

    def __init__(self, schemas):
        super().__init__()
        self.schemas = schemas

    def _fetch(self, kind, schema, fmt):
        if schema not in self.schemas:
            raise UnknownSchema(f"schema {schema} is not in {self.where}")
        return Registered("PROTOBUF", self.schemas[schema], f"schema {schema}", schema)

    def version(self, subject, version, fmt=None):
        raise NotImplementedError


def confluent_serialize(message, subject_topic="trips"):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient.new_client({"url": "mock://"})
    ser = ProtobufSerializer(type(message), client, {"use.deprecated.format": False})
    return ser(message, SerializationContext(subject_topic, MessageField.VALUE))


def serialized(text=TRIP_PROTO):
    return base64.b64encode(file_proto(text).SerializeToString()).decode()


def test_types_as_spark_maps_them():
    codec = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"), "demo.Trip")
    assert pa.schema(codec.fields()) == pa.schema([
        ("id", pa.string()), ("count", pa.int64()), ("big", pa.decimal128(20, 0)),
        ("tags", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int32())),
        ("kind", pa.string()), ("inner", pa.struct([("x", pa.float64())])),
        ("at", pa.timestamp("us", tz="UTC"))])
    with pytest.raises(ProtobufSchemaError, match="recursive message 'demo.Node'"):
        ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(LOOP_PROTO), "s"), None)
    with pytest.raises(ProtobufSchemaError, match="message 'demo.Nope' is not in"):
        ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"), "demo.Nope")


def test_a_schema_of_several_messages_needs_the_message_named():
    """Reading the first of two messages made every record of the second a dead letter
    (#28): with several top-level messages and none named, it fails listing them; nested
    messages do not count, and one message needs no name."""
    with pytest.raises(ProtobufSchemaError, match=re.escape(
            "s holds 2 messages (demo.Trip, demo.Other): name the one the records hold "
            "(format.message, key_message for a key; Spark option messageName, "
            "keyMessageName)")):
        ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"), None)
    solo = ('name: "solo.proto" package: "demo" syntax: "proto3"\n'
            'message_type { name: "Solo" field { name: "n" number: 1 type: TYPE_INT32\n'
            '  label: LABEL_OPTIONAL } nested_type { name: "Inner" field { name: "x"\n'
            '  number: 1 type: TYPE_DOUBLE label: LABEL_OPTIONAL } } }')
    one = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(solo), "s"), None)
    assert one.fields() == [pa.field("n", pa.int32())]


def test_confluent_frames_from_the_libraries_serializer():
    _, cls = classes()
    trip = cls["Trip"](id="t1", count=3, big=2**64 - 1, tags=["a", "b"], kind=1,
                       inner=cls["Trip.Inner"](x=1.5))
    trip.m["k"] = 7
    trip.at.FromMilliseconds(1_714_521_600_123)
    data = [confluent_serialize(trip), confluent_serialize(cls["Trip"]()),
            confluent_serialize(cls["Other"](q=1)),
            confluent_serialize(cls["Trip.Inner"](x=2.0))]
    # the mock registry numbers schemas from 1: the serializer registered the file as id 1
    registry = DictRegistry({1: serialized()})
    codec = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"),
                                          "demo.Trip")
    columns, errors = Framed(codec, registry).decode(data)
    rows = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields())).to_pylist()
    assert rows[0]["id"] == "t1" and rows[0]["big"] == 2**64 - 1 and rows[0]["kind"] == "B"
    assert rows[0]["m"] == [("k", 7)] and rows[0]["inner"] == {"x": 1.5}
    assert rows[0]["at"].isoformat() == "2024-05-01T00:00:00.123000+00:00"
    assert rows[1] == {"id": None, "count": None, "big": None, "tags": [], "m": [],
                       "kind": None, "inner": None, "at": None}
    assert errors == {2: "the record holds demo.Other, the format reads demo.Trip",
                      3: "the record holds demo.Trip.Inner, the format reads demo.Trip"}


def test_glue_frames_as_aws_writes_them():
    """AWS's ProtobufWireFormatEncoder: one unsigned varint, the message's position among
    all the file's messages sorted by full name (demo.Other 0, demo.Trip 1,
    demo.Trip.Inner 2, demo.Trip.MEntry 3), then the message; the registry holds the
    .proto text (names are read from it without a compiler)."""
    _, cls = classes()
    version = uuid.uuid4()
    proto_text = ('syntax = "proto3";\npackage demo;\n// message Fake {\n'
                  'message Trip { string id = 1; message Inner { double x = 1; }\n'
                  '  map<string, int32> m = 5; }\nmessage Other { int32 q = 1; }\n')
    registry = DictRegistry({str(version): proto_text})

    def glue(index, msg, zlib=False):
        return glue_codec.encode(_VarintBytes(index) + msg.SerializeToString(), version,
                                 compression=zlib)
    codec = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"),
                                          "demo.Trip")
    data = [glue(1, cls["Trip"](id="g")), glue(1, cls["Trip"](id="z"), zlib=True),
            glue(0, cls["Other"](q=1)), glue(9, cls["Trip"]())]
    columns, errors = Framed(codec, registry).decode(data)
    assert columns[0].to_pylist()[:2] == ["g", "z"]
    assert errors[2] == "the record holds demo.Other, the format reads demo.Trip"
    assert "message index 9 is out of range" in errors[3] and "has 4 messages" in errors[3]


def test_a_compiled_descriptor_set_and_plain_records():
    pool, cls = classes()
    fds = descriptor_pb2.FileDescriptorSet(file=[file_proto(TRIP_PROTO)])
    codec = ProtobufCodec.from_descriptor_set(fds.SerializeToString(), "demo.Trip")
    columns, errors = Framed(codec, None).decode(
        [cls["Trip"](id="p").SerializeToString(), b"\xff\xff\xff", None])
    assert columns[0].to_pylist()[0] == "p" and sorted(errors) == [1, 2]
    assert "not a valid Protobuf demo.Trip" in errors[1]
    with pytest.raises(ProtobufSchemaError, match="not a compiled descriptor set"):
        add_descriptor_set(new_pool(), b"\xff\xff")


def test_bad_frames_and_indexes_are_dead_letters():
    _, cls = classes()
    good = confluent_serialize(cls["Trip"](id="ok"))
    registry = DictRegistry({1: serialized(), 2: "not base64 at all!"})
    codec = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"), "demo.Trip")
    out_of_range = good[:5] + b"\x02\x0a" + good[6:]  # path [5]: two top-level messages
    unknown = b"\x00\x00\x00\x00\x09" + good[5:]
    bad_schema = b"\x00\x00\x00\x00\x02" + good[5:]
    columns, errors = Framed(codec, registry).decode(
        [good, out_of_range, unknown, bad_schema, good[:5], good[:-1] + b"\xff", b"{}"])
    assert sorted(errors) == [1, 2, 3, 4, 5, 6]
    assert "message index [5] is out of range: level 0 of schema 1 has 2 messages" in errors[1]
    assert errors[2] == "schema 9 is not in the test registry"
    assert "schema 2 cannot be read" in errors[3] and "not a serialized descriptor" in errors[3]
    assert "truncated Confluent Protobuf message-index array" in errors[4]
    assert "not a valid Protobuf demo.Trip" in errors[5]
    assert "unknown magic byte 0x7b" in errors[6]


def test_fuzz_every_record_is_a_row_or_a_dead_letter():
    _, cls = classes()
    trip = cls["Trip"](id="f", count=-5, big=7, tags=["x"] * 3, kind=1)
    trip.m["a"] = 1
    values: list[bytes | None] = list(mutations([confluent_serialize(trip)], 3000, seed=3))
    codec = ProtobufCodec.from_registered(Registered("PROTOBUF", serialized(), "s"), "demo.Trip")
    columns, errors = Framed(codec, DictRegistry({1: serialized()})).decode(values)
    assert all(len(c) == len(values) for c in columns) and errors
    good = [i for i in range(len(values)) if i not in errors]
    pa.RecordBatch.from_arrays([c.take(pa.array(good, pa.int64())) for c in columns],
                               schema=pa.schema(codec.fields()))
