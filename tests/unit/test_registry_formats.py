"""The registry formats' settings in pipeline files: errors that name file, line and field,
keys with their own schema, and a pinned reader schema that a retry does not re-resolve
(the registry here is a fake behind ``open_registry``: what is tested is our pinning)."""
import json
import re

import pyarrow as pa
import pytest

from streamslice.config.pipeline import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.reading.decode import Decoder
from streamslice.schema_registry.base import Registered

HEAD = """mode: incremental
kafka: {bootstrap_servers: "127.0.0.1:9", topics: [t]}
format:
"""
TRIP = json.dumps({"type": "record", "name": "Trip", "fields": [
    {"name": "id", "type": "long"}]})
KEY = json.dumps({"type": "record", "name": "K", "fields": [{"name": "k", "type": "string"}]})


@pytest.mark.parametrize("block, field, reason", [
    ("  value: avro\n", "format", "needs the Avro schema"),
    ("  value: avro\n  registry: {kind: confluent}\n  subject: s\n", "format.registry",
     "needs url or conn_id"),
    ("  value: avro\n  registry: {url: 'http://r', registry_name: x}\n  subject: s\n",
     "format.registry.registry_name", "only used with kind: glue"),
    ("  value: avro\n  registry: {url: 'http://r'}\n", "format.subject", "is required"),
    ("  value: avro\n  registry: {url: 'http://r'}\n  subject: s\n  version: 0\n",
     "format.version", "latest or a version number"),
    ("  value: avro\n  schema: '{\"type\": \"record\"}'\n", "format.schema",
     "not a valid Avro schema"),
    ("  value: avro\n  schema_file: nope.avsc\n", "format.schema_file", "cannot read"),
    ("  value: avro\n  schema: '" + TRIP + "'\n  subject: s\n", "format.subject",
     "only used with a registry"),
    ("  value: protobuf\n", "format.descriptor_set", "is required"),
    ("  value: json_schema\n", "format", "needs its JSON Schema"),
    ("  value: avro\n  registry: {kind: glue, url: 'http://r'}\n  subject: s\n",
     "format.registry.url", "not used with kind: glue"),
])
def test_bad_settings_name_the_field(block, field, reason):
    with pytest.raises(ConfigError) as err:
        parse_pipeline(HEAD + block, file="p.yaml")
    assert err.value.field == field and reason in err.value.reason
    assert str(err.value).startswith("p.yaml:")


def test_keys_and_values_with_their_own_avro_schemas():
    import io

    import fastavro
    cfg = parse_pipeline(HEAD + f"  value: avro\n  schema: '{TRIP}'\n  key: avro\n"
                         f"  key_schema: '{KEY}'\n")
    decoder = Decoder.from_dict(cfg.decode.prepared().to_dict())

    def avro(schema, record):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema)), record)
        return out.getvalue()
    keys, key_errors = decoder.decode_keys([avro(KEY, {"k": "a"}), b"\xff"])
    values, value_errors = decoder.decode_values([avro(TRIP, {"id": 3})])
    assert keys[0].to_pylist()[0] == "a" and list(key_errors) == [1]
    assert values[0].to_pylist() == [3] and value_errors == {}
    assert [f.name for f in decoder.key_fields()] == ["k"]
    nested = Decoder.from_dict({**cfg.decode.prepared().to_dict(), "flatten": False})
    assert nested.key_fields() == [pa.field("key", pa.struct([("k", pa.string())]))]
    assert nested.value_fields() == [pa.field("value", pa.struct([("id", pa.int64())]))]
    keys, key_errors = nested.decode_keys([avro(KEY, {"k": "a"}), b"\xff"])
    assert keys[0].to_pylist()[0] == {"k": "a"} and list(key_errors) == [1]


def test_the_reader_schema_is_pinned_once(monkeypatch):
    asked = []

    class Fake:
        def version(self, subject, version, fmt=None):
            asked.append((subject, version))
            return Registered("AVRO", TRIP, f"subject {subject!r} version 4", 9, subject, 4)
    monkeypatch.setattr("streamslice.formats.schema_based.open_registry", lambda *a: Fake())
    cfg = parse_pipeline(HEAD + "  value: avro\n  registry: {url: 'http://r'}\n  subject: s\n")
    pinned = cfg.decode.prepared({"schema.registry.basic.auth.user.info": "u:secret"})
    reader = pinned.value.options["reader"]
    assert (reader["subject"], reader["version"], reader["id"]) == ("s", 4, 9)
    assert pinned.value.schema == "id BIGINT" and "secret" not in json.dumps(pinned.to_dict())
    again = pinned.prepared({})  # a retry plans nothing anew from the recorded spec
    assert again.value.options["reader"] == reader and asked == [("s", None)]


def test_a_registry_that_does_not_answer_fails_within_10_s_by_default():
    """*slow (10 s timeout by default)*: the client confluent-kafka builds has that timeout
    and a bounded retry, unless the connection's extra says otherwise."""
    from streamslice.schema_registry import open_registry
    from streamslice.schema_registry.confluent import ConfluentRegistry
    registry = open_registry({"kind": "confluent", "url": "http://127.0.0.1:9"}, {})
    assert isinstance(registry, ConfluentRegistry)
    rest = registry.client._rest_client
    assert (rest.timeout, rest.max_retries) == (10.0, 2)
    registry = open_registry({"kind": "confluent", "url": "http://127.0.0.1:9"},
                             {"timeout": "2.5", "max.retries": "0"})
    assert isinstance(registry, ConfluentRegistry)
    rest = registry.client._rest_client
    assert (rest.timeout, rest.max_retries) == (2.5, 0)
    with pytest.raises(ConfigError, match="schema registry property timeout: 'soon' is not a "
                                          "number"):
        open_registry({"kind": "confluent", "url": "http://127.0.0.1:9"}, {"timeout": "soon"})


def test_protobuf_without_message_reads_the_compiled_files_only_message(tmp_path):
    """``protoc --include_imports -o trip.desc trip.proto`` puts the imports first and
    trip.proto last: the run reads that file's message; with two there and no ``message``,
    the pipeline fails listing them (reading the first read the second's records as dead
    letters)."""
    from google.protobuf import descriptor_pb2 as d
    field = d.FieldDescriptorProto

    def message(name, type_):
        return d.DescriptorProto(name=name, field=[field(name=name.lower(), number=1,
                                                         type=type_, label=1)])
    imported = d.FileDescriptorProto(name="dep.proto", package="demo", syntax="proto3",
                                     message_type=[message("Dep", field.TYPE_STRING)])
    compiled = d.FileDescriptorProto(
        name="trip.proto", package="demo", syntax="proto3", dependency=["dep.proto"],
        message_type=[message("Trip", field.TYPE_INT64), message("Other", field.TYPE_INT32)])
    (tmp_path / "trip.desc").write_bytes(
        d.FileDescriptorSet(file=[imported, compiled]).SerializeToString())
    fields = {}
    for extra in ("  message: demo.Trip\n", "  message: demo.Other\n"):
        cfg = parse_pipeline(HEAD + "  value: protobuf\n  descriptor_set: trip.desc\n" + extra,
                             file=str(tmp_path / "p.yaml"))
        fields[extra] = Decoder.from_dict(cfg.decode.prepared().to_dict()).value_fields()
    assert fields["  message: demo.Trip\n"] == [pa.field("trip", pa.int64())]
    assert fields["  message: demo.Other\n"] == [pa.field("other", pa.int32())]
    with pytest.raises(ConfigError, match=re.escape(
            "format.descriptor_set: format protobuf: the descriptor set holds 2 messages "
            "(demo.Trip, demo.Other): name the one the records hold (format.message")):
        parse_pipeline(HEAD + "  value: protobuf\n  descriptor_set: trip.desc\n",
                       file=str(tmp_path / "p.yaml"))
    (tmp_path / "one.desc").write_bytes(d.FileDescriptorSet(file=[imported, d.FileDescriptorProto(
        name="trip.proto", package="demo", syntax="proto3", dependency=["dep.proto"],
        message_type=[message("Trip", field.TYPE_INT64)])]).SerializeToString())
    cfg = parse_pipeline(HEAD + "  value: protobuf\n  descriptor_set: one.desc\n",
                         file=str(tmp_path / "p.yaml"))
    assert Decoder.from_dict(cfg.decode.prepared().to_dict()).value_fields() == \
        [pa.field("trip", pa.int64())]
