from datetime import datetime, timezone

from streamslice.reading.decode import Decoder


def test_json_fields_and_errors():
    d = Decoder("json", "raw", [("id", "long"), ("ok", "boolean"), ("at", "timestamp"),
                                ("n", "int")])
    cols, errors = d.decode_values([
        b'{"id": 1, "ok": true, "at": "2024-05-01T00:00:00Z", "n": 5}',
        b'{"id": 2, "at": 1714521600, "extra": "ignored"}',
        b'{"id": 3.5}', None, b'{"n": 3000000000}', b'\xff'])
    cols = [c.to_pylist() for c in cols]
    assert cols[0][:2] == [1, 2] and cols[1][:2] == [True, None]
    assert cols[2][0] == cols[2][1] == datetime(2024, 5, 1, tzinfo=timezone.utc)
    assert errors == {2: "field 'id': expected long, got 3.5",
                      3: "value is null, expected a JSON object",
                      4: "field 'n': expected int, got 3000000000",
                      5: errors[5]}
    assert "invalid" in errors[5] or "utf-8" in errors[5].lower()


def test_string_and_raw():
    (col,), errors = Decoder("string").decode_values([b"caf\xc3\xa9", None])
    assert (col.to_pylist(), errors) == (["café", None], {})
    out, errors = Decoder("string").decode_values([b"\xc3"])
    assert errors == {0: "value is not valid UTF-8 at byte 0"}
    (col,), errors = Decoder().decode_values([b"\x00"])
    assert (col.to_pylist(), errors) == ([b"\x00"], {})
