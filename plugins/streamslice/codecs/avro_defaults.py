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
from .avro_walk import Named, Node, SchemaWalk, Scope

_NUMBERS = {"int", "long", "float", "double"}


def bytes_defaults(schema: Any, named: Named) -> None:
    """Every field default of a parsed reader ``schema`` (fastavro's ``parse_schema`` output:
    full names, ``named`` its named types) with bytes where the spec means bytes."""
    _Fields(named).walk(schema, "")


class _Fields(SchemaWalk[str, None]):
    """Walks the types for the records whose fields carry defaults (``arg``: the path)."""

    def __init__(self, named: Named) -> None:
        super().__init__(named)
        self.walked: set[int] = set()
        self.value = _Value(named)

    def leaf(self, s: Any, path: str) -> None:
        return None

    def record(self, s: Node, path: str, inner: Scope) -> None:
        if id(s) in self.walked:
            return
        self.walked.add(id(s))
        for f in s.get("fields", []):
            where = f"{path}.{f['name']}" if path else f["name"]
            if "default" in f:
                f["default"] = self.value.walk(f["type"], (f["default"], where), inner)
            self.walk(f["type"], where, inner)

    def array(self, s: Node, path: str, scope: Scope) -> None:
        self.walk(s.get("items"), f"{path}[]", scope)

    def map(self, s: Node, path: str, scope: Scope) -> None:
        self.walk(s.get("values"), f"{path}{{}}", scope)

    def union(self, branches: list[Any], path: str, scope: Scope) -> None:
        for branch in branches:
            self.walk(branch, path, scope)


class _Value(SchemaWalk[tuple[Any, str], Any]):
    """A JSON default (``arg``: it and its path) as the value a decoded record would hold."""

    follows_recursion = True  # the default's value bounds the walk

    def leaf(self, s: Any, arg: tuple[Any, str]) -> Any:
        return arg[0]

    def primitive(self, kind: str, arg: tuple[Any, str]) -> Any:
        return _bytes(*arg, None) if kind == "bytes" else arg[0]

    def fixed(self, s: Node, arg: tuple[Any, str]) -> Any:
        return _bytes(*arg, s.get("size"))

    def union(self, branches: list[Any], arg: tuple[Any, str], scope: Scope) -> Any:
        branch = next((b for b in branches if _holds(b, arg[0], self.named)), None)
        return arg[0] if branch is None else self.walk(branch, arg, scope)

    def record(self, s: Node, arg: tuple[Any, str], inner: Scope) -> Any:
        v, path = arg
        if not isinstance(v, dict):
            return v
        out = {}
        for f in s.get("fields", []):
            if f["name"] in v:
                out[f["name"]] = self.walk(f["type"], (v[f["name"]], f"{path}.{f['name']}"),
                                           inner)
            elif "default" in f:
                out[f["name"]] = self.walk(f["type"], (f["default"], f"{path}.{f['name']}"),
                                           inner)
        return out

    def array(self, s: Node, arg: tuple[Any, str], scope: Scope) -> Any:
        v, path = arg
        if not isinstance(v, list):
            return v
        return [self.walk(s["items"], (x, f"{path}[{i}]"), scope) for i, x in enumerate(v)]

    def map(self, s: Node, arg: tuple[Any, str], scope: Scope) -> Any:
        v, path = arg
        if not isinstance(v, dict):
            return v
        return {k: self.walk(s["values"], (x, f"{path}[{k!r}]"), scope) for k, x in v.items()}


def _bytes(v: Any, path: str, size: int | None) -> Any:
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


def _holds(s: Any, v: Any, named: Named) -> bool:
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
