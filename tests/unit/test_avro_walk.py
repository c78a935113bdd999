"""The one walk over an Avro schema (codecs/avro_walk.py) as each of its uses sees it: names
resolve in their namespace, a named type inside itself ends the walk where nothing else bounds
it, and a default's value walks a recursive type as deep as the value goes."""
import fastavro
import pyarrow as pa
import pytest

from streamslice.codecs import AvroSchemaError
from streamslice.codecs.avro import arrow_type, decimal_scales
from streamslice.codecs.avro_defaults import bytes_defaults
from streamslice.codecs.avro_walk import SchemaWalk

MONEY = {"type": "fixed", "name": "Money", "size": 8, "logicalType": "decimal",
         "precision": 12, "scale": 2}
# a list of payments: each node holds an amount and the next node (recursive through a name)
NODE = {"type": "record", "name": "Node", "namespace": "pay", "fields": [
    {"name": "amount", "aliases": ["sum"], "type": MONEY},
    {"name": "later", "type": {"type": "array", "items": "Money"}},
    {"name": "next", "type": ["null", "Node"], "default": None}]}


def test_names_resolve_in_their_namespace_and_decimals_are_found_where_they_sit():
    assert decimal_scales(NODE) == {("amount",): (12, 2), ("sum",): (12, 2),
                                    ("later", "[]"): (12, 2)}


def test_a_type_inside_itself_cannot_become_columns_and_says_where():
    with pytest.raises(AvroSchemaError, match=r"recursive type 'pay.Node' "
                                              r"\(pay.Node > pay.Node\)"):
        arrow_type(NODE)


def test_a_reference_to_a_type_not_defined_is_refused():
    with pytest.raises(AvroSchemaError, match="unknown type 'Missing'"):
        arrow_type({"type": "record", "name": "R", "fields": [{"name": "m", "type": "Missing"}]})


def test_a_default_walks_a_recursive_type_as_deep_as_its_value():
    schema = {"type": "record", "name": "Chain", "namespace": "c", "fields": [
        {"name": "tag", "type": "bytes"},
        {"name": "next", "type": ["null", "Chain"],
         "default": {"tag": "\u00ff", "next": {"tag": "\u0080", "next": None}}}]}
    named: dict = {}
    parsed = fastavro.parse_schema(schema, named_schemas=named, _write_hint=False)
    bytes_defaults(parsed, named)
    assert isinstance(parsed, dict)
    assert parsed["fields"][1]["default"] == {"tag": b"\xff",
                                              "next": {"tag": b"\x80", "next": None}}


def test_a_kind_no_use_overrides_says_so():
    class Counts(SchemaWalk[None, int]):
        def primitive(self, kind, arg):
            return 1

        def record(self, s, arg, inner):
            return sum(self.walk(f["type"], arg, inner) for f in s["fields"])

    assert Counts().walk({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": {"type": "string"}}]}, None) == 2
    with pytest.raises(NotImplementedError):
        Counts().walk({"type": "map", "values": "int"}, None)
    assert arrow_type({"type": "map", "values": "Money"}, {"Money": MONEY}) == \
        pa.map_(pa.string(), pa.decimal128(12, 2))
