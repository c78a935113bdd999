"""Batches of registry-framed (or plain) binary records → Arrow columns + dead-letter reasons.

Per record: the frame (``schema_registry.wire``: the schema id from the record's schema id header
when it has one, else from its payload prefix), the writer schema it names (fetched once per id
and process), the record decoded as the run's one reader schema. Everything a record can do
wrong becomes that record's reason; only the registry being unreachable (``SourceError``) or
refusing the pipeline's settings (``ConfigError``) stops the read, as the run cannot go on
without it.
"""
from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING, Any

from ..schema_registry.base import UnknownSchema
from ..schema_registry.wire import CONFLUENT, FrameError, parse, parse_header

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pyarrow as pa

    from ..schema_registry.base import Registered, Registry
    from ..schema_registry.wire import Frame

_CORRUPT = (EOFError, IndexError, struct.error, OverflowError, MemoryError)


class Refused(ValueError):
    """A codec's reason to refuse every record of a writer schema and frame, said as is."""


class Codec:
    """What a format gives this loop: readers per writer schema, and rows → columns."""

    schema_type: str  # AVRO | PROTOBUF | JSON, as the registry names it
    protobuf: bool = False  # frames carry a message index

    def reader_for_frame(self, writer: Registered | None,
                         frame: Frame | None) -> Callable[[bytes], Any]:
        """How to read a record's payload; ``writer`` and ``frame`` are None for plain
        records (the pipeline's own schema). Raise to make its records dead letters."""
        raise NotImplementedError

    def fields(self) -> list[pa.Field]:
        raise NotImplementedError

    def to_columns(self, values: list[Any], errors: dict[int, str]) -> list[pa.Array]:
        raise NotImplementedError

    def describe_error(self, exc: Exception) -> str:
        return f"cannot decode: {type(exc).__name__}: {str(exc)[:200]}"


class Framed:
    """Decodes registry-framed records (``registry`` given) or plain ones (None)."""

    def __init__(self, codec: Codec, registry: Registry | None, fmt: str | None = None):
        self.codec, self.registry, self.fmt = codec, registry, fmt
        self._lock = threading.Lock()
        self._readers: dict[Any, Callable[[bytes], Any] | str] = {}
        # schema id bytes → reader, for codecs whose readers take (data, start)
        self._fast: dict[bytes, Any] | None = {} if registry is not None and \
            getattr(codec, "reads_at_offset", False) else None

    def decode(self, values: list[bytes | None], ids: Sequence[bytes | None] | None = None,
               role: str = "value") -> tuple[list[pa.Array], dict[int, str]]:
        """``ids``: per record, its ``role``'s schema id header (``wire.header_value``), or
        None where it has none."""
        out: list[Any] = []
        errors: dict[int, str] = {}
        append = out.append
        fast = self._fast
        for row, data in enumerate(values):
            try:
                header = ids[row] if ids is not None else None
                if header is not None and self.registry is not None:
                    append(self._one(data, parse_header(header, data, role,
                                                        self.codec.protobuf)))
                    continue
                # Confluent's usual frame (magic 0, schema id) of a known schema: its reader
                # reads past the 5-byte header, no frame object, no copy of the payload.
                if fast is not None and data and data[0] == 0 and len(data) >= 5:
                    reader = fast.get(data[1:5])
                    if reader is not None:
                        append(reader(data, 5))
                        continue
                append(self._one(data))
            except (FrameError, UnknownSchema) as exc:
                errors[row] = str(exc)
                append(None)
            except UnicodeDecodeError as exc:
                errors[row] = f"a string is not valid UTF-8 (byte {exc.start})"
                append(None)
            except _CORRUPT as exc:
                errors[row] = f"truncated or corrupt record ({type(exc).__name__}" + \
                    (f": {exc})" if str(exc) else ")")
                append(None)
            except RecursionError:
                errors[row] = "record nested too deeply"
                append(None)
            except Exception as exc:  # the reason, never the reader's crash
                if _stops_the_read(exc):
                    raise
                errors[row] = self.codec.describe_error(exc)
                append(None)
        return self.codec.to_columns(out, errors), errors

    def _one(self, data: bytes | None, frame: Frame | None = None) -> Any:
        if self.registry is None:
            if data is None:
                raise FrameError("value is null")
            return self._reader(None)(data)
        framed = frame is None
        if frame is None:
            frame = parse(data, self.codec.protobuf)
        reader = self._reader(frame)
        if framed and self._fast is not None and frame.kind == CONFLUENT:
            assert data is not None
            self._fast[data[1:5]] = reader
        return reader(frame.payload)

    def _reader(self, frame: Frame | None) -> Callable[[bytes], Any]:
        cache_key = (frame.key, frame.indexes) if frame is not None else None
        got = self._readers.get(cache_key)
        if got is None:
            got = self._make(frame)
            with self._lock:
                self._readers[cache_key] = got
        if isinstance(got, str):
            raise UnknownSchema(got)
        return got

    def _make(self, frame: Frame | None) -> Callable[[bytes], Any] | str:
        writer = None
        if frame is not None:
            assert self.registry is not None
            try:
                writer = self.registry.by_frame(frame.kind, frame.schema, self.fmt)
            except UnknownSchema as exc:
                return str(exc)
            if writer.schema_type != self.codec.schema_type:
                return (f"{writer.name} is a {writer.schema_type} schema, but the format "
                        f"reads {self.codec.schema_type}")
        try:
            return self.codec.reader_for_frame(writer, frame)
        except Refused as exc:
            return str(exc)
        except Exception as exc:
            if _stops_the_read(exc):
                raise
            what = writer.name if writer is not None else "the schema"
            return f"{what} cannot be read as the reader schema: {str(exc)[:300]}"


def _stops_the_read(exc: Exception) -> bool:
    from ..errors import ConfigError, SourceError
    return isinstance(exc, (SourceError, ConfigError))
