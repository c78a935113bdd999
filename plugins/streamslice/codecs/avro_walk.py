"""The one walk over an Avro schema (as plain data): names resolved in their namespaces, named
types remembered where they are defined, a named type met again inside itself told apart, and
each kind of type handed to its own method.

Each use of a schema is a subclass that overrides the kinds it cares about: the Arrow types
(``codecs.avro``), where decimals sit and at which scale, the rewriting of complex unions'
values, and reader-schema defaults as bytes (``codecs.avro_defaults``). ``arg`` is what the
use carries down (a field path, the Arrow type beside the schema, a default's value); the
methods recurse with ``self.walk``. A method not overridden falls back to the kind the type is
made of (a decimal to its bytes or fixed, a logical type to its primitive), else to ``leaf``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from . import AvroSchemaError

# An Avro type written as a JSON object ({"type": "record", "name": …}), as json.loads gives
# it: schemas stay plain data, as fastavro takes them.
Node = dict[str, Any]
Named = dict[str, Node]  # full name → the object that defines it
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
A = TypeVar("A")  # what a walk carries down
R = TypeVar("R")  # what it makes of a type


@dataclass(frozen=True)
class Scope:
    """Where a type sits: the namespace its names resolve in, and the named types (full
    names) it is inside, outermost first."""

    namespace: str | None = None
    above: tuple[str, ...] = ()

    def inside(self, name: str) -> Scope:
        return Scope(name.rpartition(".")[0] or None, (*self.above, name))


TOP = Scope()


def fullname(s: Node, namespace: str | None) -> str:
    name = str(s.get("name", ""))
    if "." in name:
        return name
    ns = s.get("namespace", namespace)
    return f"{ns}.{name}" if ns else name


class SchemaWalk(Generic[A, R]):
    """``walk(schema, arg)`` dispatches on the kind of type; override the methods below."""

    # True: a named type inside itself is walked again (something else bounds the walk, such
    # as a default's value); False: it goes to ``recursive``.
    follows_recursion = False

    def __init__(self, named: Named | None = None) -> None:
        self.named = dict(named or {})  # full name → definition, as met so far

    def walk(self, s: Any, arg: A, scope: Scope = TOP) -> R:  # noqa: C901 - the one flat dispatch over the Avro spec's types
        if isinstance(s, str):
            return self.primitive(s, arg) if s in PRIMITIVES else self._reference(s, arg, scope)
        if isinstance(s, list):
            return self.union(s, arg, scope)
        if not isinstance(s, dict):
            raise AvroSchemaError(f"not an Avro type: {json.dumps(s)[:60]}")
        kind, logical = s.get("type"), s.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            if kind == "fixed":
                self.define(s, scope)
            return self.decimal(s, arg, scope)
        if logical is not None and kind in PRIMITIVES:
            return self.logical(s, arg, scope)
        if kind in PRIMITIVES:
            return self.primitive(kind, arg)
        if kind in ("record", "error"):
            name = self.define(s, scope)
            if name in scope.above and not self.follows_recursion:
                return self.recursive(name, arg, scope)
            return self.record(s, arg, scope.inside(name))
        if kind == "enum":
            self.define(s, scope)
            return self.enum(s, arg)
        if kind == "fixed":
            self.define(s, scope)
            return self.fixed(s, arg)
        if kind == "array":
            return self.array(s, arg, scope)
        if kind == "map":
            return self.map(s, arg, scope)
        return self.walk(kind, arg, scope)  # {"type": "string"}, a named reference, a union

    def define(self, s: Node, scope: Scope) -> str:
        """A named type's full name, remembered for the references after it."""
        name = fullname(s, scope.namespace)
        self.named.setdefault(name, s)
        return name

    def _reference(self, s: str, arg: A, scope: Scope) -> R:
        full = s if "." in s or not scope.namespace else f"{scope.namespace}.{s}"
        target = self.named.get(full) or self.named.get(s)
        if target is None:
            raise AvroSchemaError(f"unknown type {s!r}")
        name = fullname(target, scope.namespace)
        if name in scope.above and not self.follows_recursion:
            return self.recursive(name, arg, scope)
        return self.walk(target, arg, scope)

    # -- the kinds: override what a use needs ---------------------------------------------
    def leaf(self, s: Any, arg: A) -> R:
        """Any kind not overridden."""
        raise NotImplementedError

    def primitive(self, kind: str, arg: A) -> R:
        return self.leaf(kind, arg)

    def logical(self, s: Node, arg: A, scope: Scope) -> R:
        """A logical type over a primitive (not a decimal): as its primitive by default."""
        return self.primitive(s["type"], arg)

    def decimal(self, s: Node, arg: A, scope: Scope) -> R:
        """A decimal: as the bytes or fixed it is stored in by default."""
        return self.fixed(s, arg) if s["type"] == "fixed" else self.primitive("bytes", arg)

    def record(self, s: Node, arg: A, inner: Scope) -> R:
        """``inner``: the scope of its fields (its namespace, and itself above them)."""
        return self.leaf(s, arg)

    def recursive(self, name: str, arg: A, scope: Scope) -> R:
        """The named type ``name`` met inside itself."""
        return self.leaf(name, arg)

    def enum(self, s: Node, arg: A) -> R:
        return self.leaf(s, arg)

    def fixed(self, s: Node, arg: A) -> R:
        return self.leaf(s, arg)

    def array(self, s: Node, arg: A, scope: Scope) -> R:
        return self.leaf(s, arg)

    def map(self, s: Node, arg: A, scope: Scope) -> R:
        return self.leaf(s, arg)

    def union(self, branches: list[Any], arg: A, scope: Scope) -> R:
        return self.leaf(branches, arg)
