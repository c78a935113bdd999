"""Avro values as stored → their column types, a batch at a time in C: decimals arrive as their
two's-complement big-endian bytes and timestamps as their integers (the codec strips those
logical types from the schemas it gives fastavro, which would otherwise build a Python
``Decimal`` or ``datetime`` per value, the larger part of a record's decoding).

``finish(array, final)`` walks structs, lists and maps down to the leaves whose stored type is
not the final one: integers become timestamps by Arrow's cast, bytes become ``decimal128``
by numpy (sign-extended to 16 bytes, little-endian) and Arrow's full validation, which
refuses a value beyond the column's precision. A value it cannot take raises ``ValueError``
(or an Arrow error): the codec then finds the row and says why."""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa


def finish(arr: pa.Array, final: pa.DataType) -> pa.Array:
    """``arr`` (as ``pa.array`` made it from the stored values: offset 0) as ``final``."""
    if arr.type == final:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_timestamp(final):
        return arr.cast(final)
    if pa.types.is_decimal(final):
        return decimals(arr, final)
    if pa.types.is_struct(final):
        children = [finish(child, f.type) for child, f in zip(arr.flatten(), final)]
        return pa.StructArray.from_arrays(children, fields=list(final), mask=mask)
    if pa.types.is_map(final):
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, finish(arr.items, final.item_type),
                                       type=final, mask=mask)
    if pa.types.is_list(final):
        return pa.ListArray.from_arrays(arr.offsets, finish(arr.values, final.value_type),
                                        type=final, mask=mask)
    return arr.cast(final)


def decimals(arr: pa.BinaryArray, typ: pa.Decimal128Type) -> pa.Array:
    """Avro decimals (big-endian two's complement of the unscaled value, any length) → a
    ``decimal128`` array; ValueError for a value of more than 16 bytes or digits beyond the
    type's precision."""
    n = len(arr)
    if arr.offset:
        arr = pa.concat_arrays([arr])  # its own buffers, from offset 0
    validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[:n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else \
        np.zeros(0, dtype=np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    if n and lengths.max() > 16:
        raise ValueError("a decimal of more than 16 bytes")
    out = np.zeros((n, 16), dtype=np.uint8)
    if len(data):
        first = data[np.minimum(starts, len(data) - 1)]
        out[(lengths > 0) & (first >= 0x80)] = 0xFF  # negative: sign-extend
    at = np.arange(offsets[0], offsets[-1])
    rows = np.repeat(np.arange(n), lengths)
    ends = np.repeat(starts + lengths, lengths)
    out[rows, ends - 1 - at] = data[at]  # byte k from the end → little-endian byte k
    result = pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(out.tobytes())])
    try:
        result.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ValueError(str(exc)) from None
    return result


def decimal_text(data: bytes, scale: int) -> str:
    """An Avro decimal's bytes as its number, for a reason (``123456.78``)."""
    return str(Decimal(f"{int.from_bytes(data, 'big', signed=True)}e-{scale}"))
