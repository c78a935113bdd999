"""Avro reader-schema defaults as the values they stand for.

A field the reader schema adds takes its default for records written without it. The spec
writes a ``bytes`` or ``fixed`` default (a decimal's too) as a JSON string whose code points
0–255 are the bytes, one each (ISO-8859-1: ``"\\u00ff"`` is the byte 0xFF), as Avro's JSON
encoding writes bytes. fastavro hands the default back as that string, and Arrow would
store a string's UTF-8, another value from code point 128 on (a decimal default of
``"\\u00ff"``, -0.01 at scale 2, became -154.25). ``bytes_defaults`` replaces, in a parsed
reader schema, each such default by its bytes, inside record, array, map and union defaults
too (a union's default is its first branch that holds it, as Avro 1.12 resolves it), and a
record default's missing fields by their own defaults, as Avro's Java resolver fills them.
A default that is not bytes (a code point above 255, a fixed default of another length) is
refused with the field's path: the schema is broken, and no record could be read right.
"""
from __future__ import annotations

from typing import Any

from . import AvroSchemaError

_NUMBERS = {"int", "long", "float", "double"}


def bytes_defaults(schema: Any, named: dict[str, Any]) -> None:  # noqa: C901 - a dispatch over the Avro spec's default rules
    """Every field default of a parsed reader ``schema`` (fastavro's ``parse_schema`` output:
    full names, ``named`` its named types) with bytes where the spec means bytes."""
    walked: set[int] = set()

    def types(s: Any, path: str) -> None:
        """Walk a type for the records whose fields carry defaults."""
        s = named.get(s, s) if isinstance(s, str) else s
        if isinstance(s, list):
            for branch in s:
                types(branch, path)
        elif isinstance(s, dict):
            kind = s.get("type")
            if kind in ("record", "error") and id(s) not in walked:
                walked.add(id(s))
                for f in s.get("fields", []):
                    where = f"{path}.{f['name']}" if path else f["name"]
                    if "default" in f:
                        f["default"] = value(f["default"], f["type"], where)
                    types(f["type"], where)
            elif kind == "array":
                types(s.get("items"), f"{path}[]")
            elif kind == "map":
                types(s.get("values"), f"{path}{{}}")

    def value(v: Any, s: Any, path: str) -> Any:
        """A JSON default ``v`` of type ``s`` as the value a decoded record would hold."""
        if isinstance(s, str) and s in named:
            s = named[s]
        if isinstance(s, list):
            branch = next((b for b in s if _holds(b, v, named)), None)
            return v if branch is None else value(v, branch, path)
        kind = s.get("type") if isinstance(s, dict) else s
        if kind == "bytes":
            return _bytes(v, None, path)
        if kind == "fixed":
            return _bytes(v, s.get("size"), path)
        if kind in ("record", "error") and isinstance(v, dict):
            out = {}
            for f in s.get("fields", []):
                if f["name"] in v:
                    out[f["name"]] = value(v[f["name"]], f["type"], f"{path}.{f['name']}")
                elif "default" in f:
                    out[f["name"]] = value(f["default"], f["type"], f"{path}.{f['name']}")
            return out
        if kind == "array" and isinstance(v, list):
            return [value(x, s["items"], f"{path}[{i}]") for i, x in enumerate(v)]
        if kind == "map" and isinstance(v, dict):
            return {k: value(x, s["values"], f"{path}[{k!r}]") for k, x in v.items()}
        if isinstance(kind, (dict, list)):  # {"type": {...}}
            return value(v, kind, path)
        return v

    types(schema, "")


def _bytes(v: Any, size: int | None, path: str) -> Any:
    if not isinstance(v, str):
        return v
    try:
        out = v.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise AvroSchemaError(
            f"field {path!r}: default {v[:40]!r} is not Avro bytes: code point "
            f"U+{ord(v[exc.start]):04X} is above 255 (a bytes or fixed default is a string of "
            "code points 0-255, one per byte)") from None
    if size is not None and len(out) != size:
        raise AvroSchemaError(f"field {path!r}: default {v[:40]!r} is {len(out)} bytes, but "
                              f"its fixed type holds {size}")
    return out


def _holds(s: Any, v: Any, named: dict[str, Any]) -> bool:
    """Whether a union branch ``s`` holds the JSON value ``v`` (Avro 1.12: a union's default
    is for the first branch that matches it)."""
    if isinstance(s, str) and s in named:
        s = named[s]
    kind = s.get("type") if isinstance(s, dict) else s
    if v is None:
        return kind == "null"
    if isinstance(v, bool):
        return kind == "boolean"
    if isinstance(v, int):
        return kind in _NUMBERS
    if isinstance(v, float):
        return kind in ("float", "double")
    if isinstance(v, str):
        return kind in ("string", "bytes", "fixed", "enum")
    if isinstance(v, list):
        return kind == "array"
    if isinstance(v, dict):
        return kind in ("record", "error", "map")
    return False
