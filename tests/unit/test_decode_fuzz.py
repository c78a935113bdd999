"""Hostile record values for every format and field type: each record is either a row or a
dead letter with its reason, never a crash of the reader, and the rows always convert to the
declared Arrow types."""
import json

import pytest

from streamslice.reading.decode import ARROW_TYPES, Decoder

HOSTILE = [
    b'{"x": 99999999999999999999999}', b'{"x": -99999999999999999999999}',
    b'{"x": 1e20}', b'{"x": -1e20}', b'{"x": 1e400}', b'{"x": NaN}', b'{"x": Infinity}',
    b'{"x": -Infinity}', b'{"x": "\\ud800"}', b'{"x": "\\udfff tail"}', b'{"x": true}',
    b'{"x": null}', b'{"x": []}', b'{"x": {}}', b'{"x": "2024-05-01T00:00:00Z"}',
    b'{"x": "0001-01-01T00:00:00Z"}', b'{"x": "9999-12-31T23:59:59.999Z"}',
    b'{"x": 253402300800000}', b'{"x": -62135596800001}', b'{"x": 1.5}', b'{"x": "12"}',
    b'{"x": 2147483648}', b'{"x": 9223372036854775807}', b'{"x": 9223372036854775808}',
    b'{"x": 3.5e38}', b'{"x": "' + b"a" * 100_000 + b'"}', b"[" * 100_000 + b"]" * 100_000,
    b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", b"\xff\xfe", b"", None, b"[]", b"42",
    b'{"x": 1', b'{"x": 1}{"x": 2}',
]


@pytest.mark.parametrize("typ", sorted(ARROW_TYPES))
def test_every_hostile_value_is_a_row_or_a_dead_letter(typ):
    decoder = Decoder(value="json", schema=[("x", typ)])
    columns, errors = decoder.decode_values(HOSTILE)
    assert all(len(c) == len(HOSTILE) for c in columns)
    good = [i for i in range(len(HOSTILE)) if i not in errors]
    assert all(isinstance(reason, str) and reason for reason in errors.values())
    assert columns[0].type == ARROW_TYPES[typ]  # the rows are Arrow of the declared type
    assert len(good) + len(errors) == len(HOSTILE)


def test_what_lands_where():
    decoder = Decoder(value="json", schema=[("id", "long"), ("ts", "timestamp"),
                                            ("name", "string"), ("f", "float")])
    values = [json.dumps({"id": 1, "ts": 0, "name": "ok", "f": 1.5}).encode(),
              b'{"id": 99999999999999999999999}', b'{"ts": 1e20}', b'{"name": "\\ud800"}',
              b"[" * 100_000, b'{"f": 1e39}', b'{"f": NaN}']
    columns, errors = decoder.decode_values(values)
    assert sorted(errors) == [1, 2, 3, 4, 5]
    assert "field 'id': expected long" in errors[1] and "field 'ts'" in errors[2]
    assert "field 'name': expected string" in errors[3]
    assert errors[4] in ("invalid JSON: nested too deeply",) or "JSON" in errors[4]
    f = columns[3].to_pylist()[6]
    assert f != f  # NaN is a float value, kept


@pytest.mark.parametrize("fmt", ["raw", "string"])
def test_raw_and_string_values(fmt):
    decoder = Decoder(value=fmt, key="string")
    (col,), errors = decoder.decode_values([b"\xff", b"ok", None, b"\xed\xa0\x80"])
    assert (sorted(errors) == [0, 3]) if fmt == "string" else errors == {}
    keys, key_errors = decoder.decode_keys([b"\xff", b"k", None])
    assert sorted(key_errors) == [0]
