"""Protobuf: message descriptors to Arrow types as Spark's ``from_protobuf`` maps them, and
records parsed by protobuf's C parser (upb) into Arrow arrays.

Types: int32/sint32/sfixed32 → int, int64/sint64/sfixed64 → long, uint32/fixed32 → long and
uint64/fixed64 → decimal(20, 0) (Spark's ``upcast.unsigned.ints``: no value wraps negative),
bool, float, double, string, bytes → binary, enum → string (the value's name), message →
struct, repeated → list, map → map, google.protobuf.Timestamp → timestamp[us, UTC]. A field
not set is null, a repeated field not set an empty list (Spark's defaults). A recursive
message cannot become columns (Spark refuses it by default) and fails naming the message.

The run reads one message type of one schema (a registry version, or a compiled descriptor
set with ``message``). A record written with another version of the schema is parsed as that
message by field number, Protobuf's own evolution rule; which message a record holds comes
from its frame (Confluent's message-index path, Glue's index into the file's messages sorted
by full name), read against the record's writer schema. A record holding another message,
an index out of range or bytes that do not parse is a dead letter with its reason.
"""
from __future__ import annotations

import base64
import re
import threading
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..schema_registry.wire import GLUE
from .framed import Codec, Refused

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..schema_registry.base import Registered
    from ..schema_registry.wire import Frame

TIMESTAMP = "google.protobuf.Timestamp"
# google/protobuf/*.proto, each after the files it imports
_WELL_KNOWN = ("any", "source_context", "type", "api", "descriptor", "duration", "empty",
               "field_mask", "struct", "timestamp", "wrappers")


class ProtobufSchemaError(ValueError):
    """A schema that is not valid Protobuf or cannot become Arrow columns."""


def new_pool() -> Any:
    """A descriptor pool holding the well-known types (google/protobuf/*.proto)."""
    import importlib

    from google.protobuf.descriptor_pool import DescriptorPool
    pool = DescriptorPool()
    for name in _WELL_KNOWN:
        module = importlib.import_module(f"google.protobuf.{name}_pb2")
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    return pool


def add_registered(pool: Any, registered: Registered, name: str = "main.proto") -> Any:
    """A registry's schema (base64 FileDescriptorProto, as Confluent serves it with
    ``format=serialized``) and its references into ``pool`` → the main file's descriptor."""
    from google.protobuf import descriptor_pb2, message
    for ref_name, ref in registered.references:
        try:
            pool.FindFileByName(ref_name)
        except KeyError:
            add_registered(pool, ref, ref_name)
    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(registered.text, validate=True))
    except (ValueError, TypeError, message.Error):  # not base64 (binascii.Error), DecodeError
        raise ProtobufSchemaError(
            f"{registered.name} is not a serialized descriptor (.proto text needs protoc: "
            "give the compiled descriptor set as format.descriptor_set)") from None
    proto.name = proto.name or name
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        try:
            pool.Add(proto)
        except Exception as exc:  # noqa: BLE001 - the pool's error varies by backend (upb, cpp, python)
            raise ProtobufSchemaError(f"{registered.name}: {exc}") from None
    return pool.FindFileByName(proto.name)


def add_descriptor_set(pool: Any, data: bytes) -> list[Any]:
    """A compiled descriptor set (``protoc --include_imports -o``) into ``pool``."""
    from google.protobuf import descriptor_pb2, message
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    except (TypeError, message.Error) as exc:  # DecodeError; TypeError: not bytes
        raise ProtobufSchemaError(f"not a compiled descriptor set: {exc}") from None
    out = []
    for proto in files:
        try:
            out.append(pool.FindFileByName(proto.name))
        except KeyError:
            try:
                pool.Add(proto)
            except Exception as exc:  # noqa: BLE001 - the pool's error varies by backend (upb, cpp, python)
                raise ProtobufSchemaError(f"descriptor set file {proto.name}: {exc}") from None
            out.append(pool.FindFileByName(proto.name))
    return out


def arrow_type(descriptor: Any) -> pa.StructType:
    return _struct(descriptor, ())


def _struct(d: Any, path: tuple[str, ...]) -> pa.StructType:
    if d.full_name in path:
        raise ProtobufSchemaError(f"recursive message {d.full_name!r} "
                                  f"({' > '.join((*path, d.full_name))}) cannot become columns")
    return pa.struct([pa.field(f.name, _field_type(f, (*path, d.full_name)))
                      for f in d.fields])


def _field_type(f: Any, path: tuple[str, ...]) -> pa.DataType:
    if _is_map(f):
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return pa.map_(_scalar_type(key, path), _scalar_type(value, path))
    t = _scalar_type(f, path)
    return pa.list_(t) if _repeated(f) else t


def _scalar_type(f: Any, path: tuple[str, ...]) -> pa.DataType:
    from google.protobuf.descriptor import FieldDescriptor as F
    if f.type == F.TYPE_MESSAGE or f.type == F.TYPE_GROUP:
        if f.message_type.full_name == TIMESTAMP:
            return pa.timestamp("us", tz="UTC")
        return _struct(f.message_type, path)
    return {F.TYPE_INT32: pa.int32(), F.TYPE_SINT32: pa.int32(), F.TYPE_SFIXED32: pa.int32(),
            F.TYPE_INT64: pa.int64(), F.TYPE_SINT64: pa.int64(), F.TYPE_SFIXED64: pa.int64(),
            F.TYPE_UINT32: pa.int64(), F.TYPE_FIXED32: pa.int64(),
            F.TYPE_UINT64: pa.decimal128(20, 0), F.TYPE_FIXED64: pa.decimal128(20, 0),
            F.TYPE_BOOL: pa.bool_(), F.TYPE_FLOAT: pa.float32(), F.TYPE_DOUBLE: pa.float64(),
            F.TYPE_STRING: pa.string(), F.TYPE_BYTES: pa.binary(),
            F.TYPE_ENUM: pa.string()}[f.type]


def _repeated(f: Any) -> bool:
    return bool(f.is_repeated)


def _is_map(f: Any) -> bool:
    return _repeated(f) and f.message_type is not None and \
        f.message_type.GetOptions().map_entry


def converter(d: Any) -> Callable[[Any], dict[str, Any]]:
    """A parsed message → a dict Arrow takes as ``arrow_type(d)``."""
    fields = []
    defaults: dict[str, Any] = {}
    for f in d.fields:
        conv: Callable[[Any], Any]
        if _is_map(f):
            conv = _map_converter(f)
            defaults[f.name] = []
        elif _repeated(f):
            conv = _list_converter(_value_converter(f))
            defaults[f.name] = []
        else:
            conv = _value_converter(f) or _same
        fields.append((f, f.name, conv))

    def run(msg: Any) -> dict[str, Any]:
        out = dict(defaults)
        for f, value in msg.ListFields():
            name, conv = by_number[f.number]
            out[name] = conv(value)
        return out
    by_number = {f.number: (name, conv) for f, name, conv in fields}
    return run


def _same(x: Any) -> Any:
    return x


def _map_converter(f: Any) -> Callable[[Any], Any]:
    key = _value_converter(f.message_type.fields_by_name["key"]) or _same
    value = _value_converter(f.message_type.fields_by_name["value"]) or _same
    return lambda m: [(key(a), value(b)) for a, b in m.items()]


def _list_converter(one: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if one is None:
        return list
    return lambda items: [one(x) for x in items]


def _value_converter(f: Any) -> Callable[[Any], Any] | None:
    from google.protobuf.descriptor import FieldDescriptor as F
    if f.type == F.TYPE_ENUM:
        names = {v.number: v.name for v in f.enum_type.values}
        return lambda n: names.get(n, str(n))
    if f.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return Decimal
    if f.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        if f.message_type.full_name == TIMESTAMP:
            return lambda ts: ts.seconds * 1_000_000 + ts.nanos // 1000
        return converter(f.message_type)
    return None


# A schema's messages in declaration order: (full name, nested messages).
Tree = list[tuple[str, "Tree"]]


def message_tree(schema: Any) -> Tree:
    """From a file descriptor, or from .proto text (names only: no compiler needed)."""
    if isinstance(schema, str):
        return _proto_text_tree(schema)

    def walk(messages: Any) -> Tree:
        return [(d.full_name, walk(d.nested_types)) for d in messages]
    return walk(schema.message_types_by_name.values())


def by_path(tree: Tree, indexes: tuple[int, ...], where: str) -> str:
    """Confluent's message-index path: a top-level message, then nested ones."""
    level, found = tree, ""
    for depth, i in enumerate(indexes):
        if not 0 <= i < len(level):
            raise Refused(f"message index {list(indexes)} is out of range: level {depth} "
                             f"of {where} has {len(level)} messages")
        found, level = level[i]
    return found


def by_sorted_index(tree: Tree, index: int, where: str) -> str:
    """Glue's message index: every message of the file, level by level, sorted by full name
    (AWS's MessageIndexFinder)."""
    names, queue = [], list(tree)
    while queue:
        name, nested = queue.pop(0)
        names.append(name)
        queue.extend(nested)
    names.sort()
    if not 0 <= index < len(names):
        raise Refused(f"message index {index} is out of range: {where} has {len(names)} "
                         "messages")
    return names[index]


_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|'
                     r"[A-Za-z_][\w.]*|[{};]", re.S)


def _proto_text_tree(text: str) -> Tree:
    tokens = [t for t in _TOKENS.findall(text) if not t.startswith(("//", "/*"))]
    package, root = "", []  # type: tuple[str, Tree]
    # open blocks: (the message's name and its nested list) or None for other blocks
    stack: list[tuple[str, Tree] | None] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "package" and i + 1 < len(tokens) and not stack:
            package = tokens[i + 1]
        elif t == "message" and i + 2 < len(tokens) and tokens[i + 2] == "{":
            scope = [s[0] for s in stack if s is not None]
            full = ".".join(p for p in (package, *scope, tokens[i + 1]) if p)
            nested: Tree = []
            parent = next((s[1] for s in reversed(stack) if s is not None), root)
            parent.append((full, nested))
            stack.append((tokens[i + 1], nested))
            i += 3
            continue
        elif t == "map" and i + 3 < len(tokens) and stack and stack[-1] is not None:
            # map<K, V> name = n; is a nested message <Name>Entry (protoc's naming)
            entry = "".join(p[:1].upper() + p[1:] for p in tokens[i + 3].split("_")) + "Entry"
            scope = [s[0] for s in stack if s is not None]
            stack[-1][1].append((".".join(p for p in (package, *scope, entry) if p), []))
            i += 4
            continue
        elif t == "{":
            stack.append(None)
        elif t == "}" and stack:
            stack.pop()
        i += 1
    return root


class ProtobufCodec(Codec):
    """One run's message type: readers per writer schema and message index, rows → Arrow."""

    schema_type = "PROTOBUF"
    protobuf = True

    def __init__(self, descriptor: Any) -> None:
        from google.protobuf.message_factory import GetMessageClass
        self.descriptor = descriptor
        self.type = arrow_type(descriptor)
        self.parse = GetMessageClass(descriptor).FromString
        self.convert = converter(descriptor)
        self._lock = threading.Lock()
        self._trees: dict[Any, Tree] = {}

    @classmethod
    def from_registered(cls, registered: Registered, message: str | None) -> ProtobufCodec:
        file = add_registered(new_pool(), registered)
        return cls(_pick(file.pool, [file], message, registered.name))

    @classmethod
    def from_descriptor_set(cls, data: bytes, message: str | None) -> ProtobufCodec:
        pool = new_pool()
        files = add_descriptor_set(pool, data)
        return cls(_pick(pool, files[-1:], message, "the descriptor set"))

    def fields(self) -> list[pa.Field]:
        return list(self.type)

    def reader_for_frame(self, writer: Registered | None,
                         frame: Frame | None) -> Callable[[bytes], Any]:
        if writer is not None and frame is not None:
            held = self._message_name(writer, frame)
            if held != self.descriptor.full_name:
                raise Refused(f"the record holds {held}, the format reads "
                                 f"{self.descriptor.full_name}")
        parse, convert = self.parse, self.convert
        return lambda payload: convert(parse(payload))

    def _message_name(self, writer: Registered, frame: Frame) -> str:
        key = (writer.name, writer.id)
        with self._lock:
            tree = self._trees.get(key)
        if tree is None:
            tree = message_tree(writer.text if _is_text(writer.text)
                                else add_registered(new_pool(), writer))
            with self._lock:
                self._trees[key] = tree
        if frame.kind == GLUE:
            return by_sorted_index(tree, frame.indexes[0], writer.name)
        return by_path(tree, frame.indexes, writer.name)

    def to_columns(self, values: list[Any], errors: dict[int, str]) -> list[pa.Array]:
        try:
            arr = pa.array(values, self.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            out = []
            for row, v in enumerate(values):
                if v is not None:
                    try:
                        pa.array([v], self.type)
                    except Exception as exc:  # noqa: BLE001 - pyarrow's errors vary by type: the row's own reason
                        errors[row] = f"value does not fit {self.type}: {str(exc)[:200]}"
                        v = None
                out.append(v)
            arr = pa.array(out, self.type)
        columns: list[pa.Array] = arr.flatten()
        return columns

    def describe_error(self, exc: Exception) -> str:
        if type(exc).__name__ == "DecodeError":
            return f"not a valid Protobuf {self.descriptor.full_name}: {str(exc)[:200]}"
        if isinstance(exc, (ValueError, IndexError)):
            return str(exc)[:300]
        return f"cannot decode: {type(exc).__name__}: {str(exc)[:200]}"


def _is_text(text: str) -> bool:
    return bool(re.search(r"\b(syntax|message|package)\b", text))


def _pick(pool: Any, files: list[Any], message: str | None, where: str) -> Any:
    """The message the run reads: the one named, else the schema's only top-level message.
    With several and none named there is no right guess (the first one read every record of
    another message as a dead letter), so it fails listing them, as Spark's from_protobuf
    always wants its messageName."""
    if message:
        try:
            return pool.FindMessageTypeByName(message)
        except KeyError:
            raise ProtobufSchemaError(f"message {message!r} is not in {where}") from None
    found = [d for file in files for d in file.message_types_by_name.values()]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ProtobufSchemaError(f"{where} has no message")
    raise ProtobufSchemaError(
        f"{where} holds {len(found)} messages ({', '.join(d.full_name for d in found)}): "
        "name the one the records hold (format.message, key_message for a key; Spark option "
        "messageName, keyMessageName)")
