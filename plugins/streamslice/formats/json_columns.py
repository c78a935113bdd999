"""The JSON decoder's columnar path: a batch of records straight into columns, with no Python
object per value that Arrow would have to convert one by one.

msgspec decodes each record into a ``Struct`` made from the schema (slots instead of a dict,
not tracked by the garbage collector), checking every type in C as the row decoder does. A
``DECIMAL``, and a ``TIMESTAMP``/``TIMESTAMP_NTZ`` written as RFC 3339 text, are kept as that
text: building a Python ``Decimal`` or ``datetime`` per value and having Arrow convert it back
cost more than the rest of the record. The batch's columns are then gathered field by field
(``attrgetter`` over the batch, lists and maps flattened with ``itertools.chain``), and Arrow's
C++ casts turn the text into decimals (exactly, refusing a value that would need rounding or
more digits) and timestamps. Arrow's ISO 8601 parser reads a subset of what the reference
decoder reads (``datetime.fromisoformat`` after msgspec's RFC 3339), to the same instant; what
it refuses (a seventh fractional digit, a leap second, ``20240501T100000Z``, no offset for a
``TIMESTAMP``) is left to the row decoder.

It answers for a whole batch or not at all: a record that does not decode, a value Arrow
refuses, a timestamp in another form (an epoch number, no offset) gives ``None``, and the row
decoder (``formats.json``) reads the batch instead, deciding each record as it always did. The
two are fuzzed against each other and against the reference decoder.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from itertools import chain, count, repeat
from operator import attrgetter, is_
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from .types import TypeFold, holds

Build = Callable[[list[Any]], pa.Array]
_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError)
_names = count()


class Columnar:
    """``decode(items)`` → the batch as one struct array, or None (the row decoder decides).

    ``leaf(typ)`` is the row decoder's msgspec type for a scalar Arrow type (its checks:
    integer ranges, float32's range…), so both paths accept the same values. A schema with
    decimals gets a second variant that reads them from JSON numbers too (as ``Decimal``s);
    after a batch only it could read, it goes first for a while."""

    def __init__(self, schema: pa.Schema, leaf: Callable[[pa.DataType], Any]) -> None:
        self.struct = pa.struct(list(schema))
        texts = (True, False) if holds(self.struct, pa.types.is_decimal) else (True,)
        self.variants = [_Variant(self.struct, leaf, text) for text in texts]
        self._skip = self._numbers_first = 0

    @property
    def batches(self) -> int:
        """Batches this path decoded (the tests check that it is taken)."""
        return sum(v.batches for v in self.variants)

    def decode(self, items: Sequence[bytes | None]) -> pa.StructArray | None:
        if self._skip:  # it missed lately (e.g. epoch-ms timestamps): let the row decoder go
            self._skip -= 1
            return None
        numbers_first = self._numbers_first > 0
        if numbers_first:
            self._numbers_first -= 1
        for variant in self.variants[::-1] if numbers_first else self.variants:
            try:
                rows = list(map(variant.decoder.decode, items))  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - msgspec's error, or None for a record
                continue
            try:
                out = variant.build(rows)
            except _ERRORS:
                break
            variant.batches += 1
            if variant is not self.variants[0] and not numbers_first:
                self._numbers_first = 16  # decimals came as numbers: read them so for a while
            return out
        self._skip = 16
        return None


class _Variant(TypeFold[tuple[Any, Build]]):
    """Each type's msgspec type for its values, and how a list of them becomes its array."""

    def __init__(self, struct: pa.StructType, leaf: Callable[[pa.DataType], Any],
                 decimal_text: bool) -> None:
        self.leaf_type, self.decimal_text = leaf, decimal_text
        self.batches = 0
        record, self.build = self._struct(struct, self.fields(struct), top=True)
        self.decoder = msgspec.json.Decoder(record)

    def struct(self, typ: pa.StructType, fields: list[tuple[Any, Build]]) -> tuple[Any, Build]:
        return self._struct(typ, fields)

    def array(self, typ: pa.ListType, item: tuple[Any, Build]) -> tuple[Any, Build]:
        values, build = item
        return list[values | None], _list(typ, build)  # type: ignore[valid-type]

    def map(self, typ: pa.MapType, item: tuple[Any, Build]) -> tuple[Any, Build]:
        values, build = item
        return dict[str, values | None], _map(typ, build)  # type: ignore[valid-type]

    def leaf(self, typ: pa.DataType) -> tuple[Any, Build]:
        if pa.types.is_decimal(typ):
            if self.decimal_text:
                return str, _cast(typ)
            return Decimal, _direct(typ)
        if pa.types.is_timestamp(typ):
            return str, _cast(typ)
        return self.leaf_type(typ), _direct(typ)

    def _struct(self, typ: pa.StructType, types: list[tuple[Any, Build]],
                top: bool = False) -> tuple[Any, Build]:
        fields: list[tuple[Any, ...]] = []
        rename: dict[str, str] = {}
        children: list[tuple[Callable[[Any], Any], Build]] = []
        for i, (f, (item, child)) in enumerate(zip(typ, types)):
            attr = f"f{i}"  # JSON names need not be identifiers: msgspec renames
            fields.append((attr, item) if not f.nullable else (attr, item | None, None))
            rename[attr] = f.name
            children.append((attrgetter(attr), child))
        cls = msgspec.defstruct(f"Record{next(_names)}", fields, rename=rename, kw_only=True,
                                gc=False, omit_defaults=False)
        empty = cls(**dict.fromkeys(rename))  # stands in for a null struct's children
        struct_fields = list(typ)

        def build(values: list[Any]) -> pa.Array:
            mask = None if top else _nulls(values)
            if mask is not None:
                values = [empty if v is None else v for v in values]
            return pa.StructArray.from_arrays(
                [make(list(map(get, values))) for get, make in children],
                fields=struct_fields, mask=mask)
        return cls, build


def _direct(typ: pa.DataType) -> Build:
    return lambda values: pa.array(values, typ)


def _cast(typ: pa.DataType) -> Build:
    """Text → decimals (exact: Arrow refuses rounding and more digits) or timestamps."""
    return lambda values: pa.array(values, pa.string()).cast(typ)


def _list(typ: pa.ListType, item: Build) -> Build:
    def build(values: list[Any]) -> pa.Array:
        mask = _nulls(values)
        if mask is not None:
            values = [() if v is None else v for v in values]
        return pa.ListArray.from_arrays(_offsets(values), item(list(chain.from_iterable(values))),
                                        type=typ, mask=mask)
    return build


def _map(typ: pa.MapType, item: Build) -> Build:
    def build(values: list[Any]) -> pa.Array:
        mask = _nulls(values)
        if mask is not None:
            values = [{} if v is None else v for v in values]
        keys = pa.array(list(chain.from_iterable(values)), pa.string())
        items = item(list(chain.from_iterable(map(dict.values, values))))
        return pa.MapArray.from_arrays(_offsets(values), keys, items, type=typ, mask=mask)
    return build


def _nulls(values: list[Any]) -> pa.Array | None:
    """The null mask of a column's values, or None when it has no nulls."""
    flags = list(map(is_, values, repeat(None)))
    return pa.array(flags, pa.bool_()) if True in flags else None


def _offsets(values: list[Any]) -> pa.Array:
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int32, count=len(values)),
              out=offsets[1:])
    return pa.array(offsets)
