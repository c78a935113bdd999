"""Every registered format keeps the contract of ``streamslice.formats``: ``fields`` is stable,
``decode`` returns one array per field, of the batch's length and the field's exact type, and
never raises on hostile bytes: each record is a row or a reason."""
import base64

import pytest
from google.protobuf import descriptor_pb2

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.formats import FORMATS, FormatSpec, format_class, formats_for, make_format
from tests.support.pipelines import modules_loaded_parsing

HOSTILE = [b"", None, b"\xff\xfe", b"\x00" * 7, b"{", b'{"a": 1}', b"[" * 50_000,
           b'"\\ud800"', b"42", "é".encode(), b"\xed\xa0\x80", b" " * 1000]
# A spec each format can be built from without a registry or a file.
SPECS = {"json": FormatSpec("json", "a INT, b STRUCT<c: ARRAY<STRING>>"),
         "avro": FormatSpec("avro", "", {"schema": '{"type": "record", "name": "R", "fields": '
                                                   '[{"name": "a", "type": ["null", "int"]}]}'}),
         "json_schema": FormatSpec("json_schema", "", {"reader": {
             "schema_type": "JSON", "name": "s", "text": '{"type": "object", "properties": '
             '{"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}}}'}}),
         "protobuf": FormatSpec("protobuf", "", {"descriptor_set": base64.b64encode(
             descriptor_pb2.FileDescriptorSet(file=[descriptor_pb2.FileDescriptorProto(
                 name="t.proto", package="t", message_type=[descriptor_pb2.DescriptorProto(
                     name="M", field=[descriptor_pb2.FieldDescriptorProto(
                         name="a", number=1, type=9, label=1)])])]).SerializeToString()
         ).decode()})}


# Every registered format in each role it declares (a value-only format is not a key format).
ROLES = [(name, role) for name in sorted(FORMATS) for role in format_class(name).roles]


def test_every_format_declares_a_role():
    assert all(format_class(name).roles for name in FORMATS)


@pytest.mark.parametrize(("name", "role"), ROLES)
def test_every_format_keeps_the_contract(name, role):
    cls = format_class(name)
    spec = SPECS.get(name, FormatSpec(name))
    fmt = make_format(spec, role)
    fields = fmt.fields(role)
    assert fields and fields == make_format(spec, role).fields(role)
    arrays, errors = fmt.decode(HOSTILE)
    assert len(arrays) == len(fields)
    for array, field in zip(arrays, fields):
        assert len(array) == len(HOSTILE) and array.type == field.type
    assert set(errors) <= set(range(len(HOSTILE)))
    assert all(isinstance(reason, str) and reason and "\n" not in reason
               for reason in errors.values())
    assert cls.prepare(spec) == spec or cls.prepare(spec).name == name
    assert FormatSpec.from_dict(spec.to_dict()) == spec


def test_an_unknown_format_is_named():
    with pytest.raises(ValueError, match="unknown format 'avro2'.*raw, string, json"):
        format_class("avro2")


HEAD = "mode: incremental\nkafka: {bootstrap_servers: 'b:9092', topics: [t]}\n"


def test_a_pipeline_imports_only_the_formats_it_names():
    """Every task process parses its pipeline file: a JSON value with a string key imports
    those two formats, not the registry formats (Avro, Protobuf, JSON Schema), their schema
    registry clients or framing codecs."""
    loaded = modules_loaded_parsing(
        HEAD + "format: {value: json, key: string, schema: {a: int}}\noutput: {path: /x}\n",
        ("streamslice.formats.", "streamslice.schema_registry", "streamslice.codecs"))
    assert loaded == ["streamslice.formats.json", "streamslice.formats.json_columns",
                      "streamslice.formats.string", "streamslice.formats.types"]


@pytest.mark.parametrize("role", ["value", "key"])
def test_a_format_name_that_is_none_of_them_lists_them_all(role):
    """Only a name that is no format of the role imports them all: the error names each."""
    for name, why in (("avro2", f"'avro2' is not one of: {', '.join(formats_for(role))}"),
                      (7, "must be a non-empty string, got int 7")):
        with pytest.raises(ConfigError) as info:
            parse_pipeline(HEAD + f"format: {{{role}: {name}}}\noutput: {{path: /x}}\n")
        assert str(info.value) == f"<string>:3: format.{role}: {why}"


@pytest.mark.parametrize("name", [name for name, role in ROLES if role == "key"])
def test_a_record_without_a_key_has_null_key_columns_in_every_key_format(name):
    """A null key is no key, not a bad one (Spark's ``from_json(key)``, Kafka's deserializers):
    null in every key column, flattened or not; other keys' reasons say they are the key."""
    from streamslice.reading.decode import Decoder
    for flatten in (True, False):
        decoder = Decoder(key=SPECS.get(name, FormatSpec(name)), flatten=flatten)
        arrays, errors = decoder.decode_keys(HOSTILE)
        assert HOSTILE.index(None) not in errors
        assert all(array[HOSTILE.index(None)].as_py() is None for array in arrays)
        assert all(field.nullable for field in decoder.key_fields())
        assert all(reason.startswith("key") for reason in errors.values())
