"""JSON and JSON Schema keys (``format.key: json`` / ``json_schema``; Spark ``keyFormat`` with
``keySchema``): settings named by file, line and field, the key's fields as top-level columns
or one ``key`` struct column, a record without a key as null key columns (as Spark's
``from_json(key)`` gives it), a bad key as a dead letter whose reason says it is the key, and a
key field named like a value field refused when planned."""
import json
import re

import pyarrow as pa
import pytest

from streamslice.config.pipeline import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.kafka.fetch import RawBatch
from streamslice.kafka.reader import KafkaSplitReader
from streamslice.kafka.split import KafkaSplit
from streamslice.reading.decode import Decoder
from streamslice.spark.plan_options import decoding_from_options

HEAD = "mode: incremental\nkafka: {bootstrap_servers: '127.0.0.1:9', topics: [t]}\nformat:\n"
KEY_SCHEMA = json.dumps({"type": "object", "properties": {
    "id": {"type": "integer"}, "region": {"type": "string"}}})


def decoder(block, flatten=True):
    cfg = parse_pipeline(HEAD + block + f"  flatten: {str(flatten).lower()}\n",
                         default_name="p")
    return Decoder.from_dict(cfg.decode.prepared().to_dict())


def read(dec, keys, values):
    """One raw batch of records at offsets 0… through the Kafka split reader."""
    reader = KafkaSplitReader(KafkaSplit(0, "t", 0, 0, 99), properties={}, decoder=dec)
    n = len(keys)
    return reader, reader.to_arrow(RawBatch(list(range(n)), [0] * n, [0] * n, keys, values,
                                            [None] * n))


@pytest.mark.parametrize("key_block", [
    "  key: json\n  key_schema: 'id BIGINT, region STRING'\n",
    "  key: json\n  key_schema: {id: long, region: string}\n",
    f"  key: json_schema\n  key_schema: '{KEY_SCHEMA}'\n",
])
def test_a_json_key_lands_as_columns_or_as_one_key_struct(key_block):
    block = "  value: json\n  schema: 'amount DOUBLE'\n" + key_block
    keys = [b'{"id": 1, "region": "eu"}', None, b'{"id": "x"}', b"{nope", b'{"id": 4}']
    values = [b'{"amount": 1.5}'] * 5
    reader, batch = read(decoder(block), keys, values)
    assert reader.schema.names[:3] == ["id", "region", "amount"]
    assert all(reader.schema.field(n).nullable for n in ("id", "region"))
    assert batch.column("offset").to_pylist() == [0, 1, 4]
    assert batch.column("id").to_pylist() == [1, None, 4]  # offset 1 has no key: null
    assert batch.column("region").to_pylist() == ["eu", None, None]
    assert batch.column("amount").to_pylist() == [1.5] * 3
    dead = {o: e for o, e in zip(reader._dead[0].column("offset").to_pylist(),
                                 reader._dead[0].column("error").to_pylist())}
    assert dead[2] == "key: field 'id': expected long, got \"x\""
    assert dead[3].startswith("key: invalid JSON")
    assert reader._dead[0].column("key").to_pylist() == [b'{"id": "x"}', b"{nope"]

    reader, batch = read(decoder(block, flatten=False), keys, values)
    assert reader.schema.names[:3] == ["key", "value", "topic"]  # value: struct<amount>
    assert reader.schema.field("key").type == pa.struct([("id", pa.int64()),
                                                         ("region", pa.string())])
    assert batch.column("key").to_pylist() == [{"id": 1, "region": "eu"}, None,
                                               {"id": 4, "region": None}]


def test_a_not_null_key_field_holds_for_keys_and_leaves_keyless_records_null():
    block = ("  value: string\n  key: json\n  key_schema: 'id BIGINT NOT NULL, "
             "tags ARRAY<STRING>'\n")
    for flatten in (True, False):
        reader, batch = read(decoder(block, flatten), [b'{"id": 1, "tags": ["a"]}', None,
                                                      b'{"tags": []}'], [b"v"] * 3)
        assert batch.column("offset").to_pylist() == [0, 1]
        assert reader._dead[0].column("error").to_pylist() == [
            "key: field 'id': is NOT NULL, got nothing"]
        if flatten:
            assert batch.column("id").to_pylist() == [1, None]
            assert batch.column("tags").to_pylist() == [["a"], None]
        else:
            assert batch.column("key").to_pylist() == [{"id": 1, "tags": ["a"]}, None]
        pa.Table.from_batches([batch]).validate(full=True)


@pytest.mark.parametrize("block, field, reason", [
    ("  key: json\n", "format.key_schema", "is required with key: json"),
    ("  key: json\n  key_schema: 'a INTEGR'\n", "format.key_schema", "unknown type 'INTEGR'"),
    ("  key: string\n  key_schema: 'a INT'\n", "format.key_schema",
     "is not used with key: string (it is the fields of key: json)"),
    ("  key: json_schema\n", "format", "key: json_schema needs its JSON Schema: key_schema"),
    ("  key: json_schema\n  key_schema: '{\"type\": \"string\"}'\n", "format.key_schema",
     "the top level must be an object"),
    ("  key: json_schema\n  key_schema_file: nope.json\n", "format.key_schema_file",
     "cannot read"),
    (f"  key: json_schema\n  key_schema: '{KEY_SCHEMA}'\n  key_subject: k\n",
     "format.key_subject", "only used with a registry"),
    ("  key: json_schema\n  registry: {url: 'http://r'}\n", "format.key_subject",
     "is required with key: json_schema"),
    (f"  key: json_schema\n  registry: {{url: 'http://r'}}\n  key_subject: k\n"
     f"  key_schema: '{KEY_SCHEMA}'\n", "format.key_schema", "is not used with a registry"),
])
def test_bad_key_settings_name_file_line_and_field(block, field, reason):
    with pytest.raises(ConfigError) as err:
        parse_pipeline(HEAD + "  value: raw\n" + block, file="p.yaml")
    assert (err.value.field, err.value.file) == (field, "p.yaml") and err.value.line
    assert reason in err.value.reason
    assert str(err.value).startswith(f"p.yaml:{err.value.line}: {field}: ")


def test_a_json_schema_key_through_a_registry_is_pinned_as_a_value_is(monkeypatch):
    from streamslice.schema_registry.base import Registered

    class Fake:
        def version(self, subject, version, fmt=None):
            return Registered("JSON", KEY_SCHEMA, f"subject {subject!r} version 2", 7,
                              subject, 2)
    monkeypatch.setattr("streamslice.formats.schema_based.open_registry", lambda *a: Fake())
    cfg = parse_pipeline(HEAD + "  value: raw\n  key: json_schema\n  registry: {url: 'http://r'}"
                         "\n  key_subject: orders-key\n  key_version: 2\n")
    pinned = cfg.decode.prepared({})
    assert pinned.key.options["reader"]["subject"] == "orders-key"
    assert pinned.key.schema == "id BIGINT, region STRING"


def test_spark_options_keyformat_json_and_keyschema():
    decode = decoding_from_options({"keyformat": "json", "keyschema": "id BIGINT"})
    assert (decode.key.name, decode.key.schema, decode.value.name) == ("json", "id BIGINT", "raw")
    implied = decoding_from_options({"keyschema": '{"id": "long"}', "schema": "a INT"})
    assert (implied.key.name, implied.key.schema) == ("json", "id BIGINT")
    assert (implied.value.name, implied.value.schema) == ("json", "a INT")


@pytest.mark.parametrize("opts, message", [
    ({"keyformat": "json"}, "option keyFormat json needs option keySchema"),
    ({"keyformat": "string", "keyschema": "a INT"},
     "option keySchema is not used with keyFormat string"),
    ({"keyschema": "a INTEGR"}, "option keySchema: unknown type 'INTEGR'"),
    ({"keyschema": '{"a": '}, "option keySchema is not a JSON object"),
    ({"keyformat": "json_schema"},
     "keyFormat json_schema needs a schema registry (schema.registry.url and keySubject)"),
])
def test_bad_spark_key_options_are_one_line(opts, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        decoding_from_options(opts)


def test_a_key_field_named_like_a_value_field_is_refused_when_planned():
    from streamslice.planning.plan import ReadPlan
    from streamslice.planning.planner import check_columns

    def plan(flatten):
        return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=0,
                        splits=[KafkaSplit(0, "t", 0, 0, 3)], partition="batch=00000001",
                        decode={"value": {"name": "json", "schema": "ID BIGINT, n STRING"},
                                "key": {"name": "json", "schema": "id BIGINT"},
                                "flatten": flatten})
    with pytest.raises(ConfigError, match=re.escape(
            "format: the key's field 'id' and the value's field 'ID' would both be top-level "
            "columns; set format.flatten: false to keep each record in its own struct column "
            "(key.id and value.ID")):
        check_columns(plan(True))
    check_columns(plan(False))  # key.id and value.ID
