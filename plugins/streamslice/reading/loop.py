"""The split-reader loop every source shares (FLIP-27's SourceReader): fetch → decode → dead
letters → Arrow batches, then the split's summary and dead letters to the staging area.

A source's reader says how to fetch raw batches, which positions a raw batch holds and how it
becomes Arrow; this loop does the rest, the same way for every source.
"""
from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from ..errors import DecodeError, StreamsliceError, faults
from ..splits import SplitT
from .stats import SplitStats

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    import pyarrow as pa

    from ..records import JsonObject
    from .decode import Decoder
    from .sink import ParquetSink
    from .staging import Staging

_END = object()


class SplitReader(ABC, Generic[SplitT]):
    """Reads one split of a source whose split type is ``SplitT``."""

    dead_letter_schema: ClassVar[pa.Schema]
    # The direct write path sets it: batches go there, ``batches`` yields none, and the
    # split's file is in place before its summary is written.
    sink: ParquetSink | None = None

    def __init__(self, split: SplitT, *, decoder: Decoder, staging: Staging | None = None,
                 fault: str | None = None) -> None:
        self.split: SplitT = split
        self.decoder, self.staging, self.fault = decoder, staging, fault
        self.stats = SplitStats(split)
        self._dead: list[pa.RecordBatch] = []

    @abstractmethod
    def fetch(self) -> Iterable[Any]:
        """Raw batches from the split's start until its stop; never a short read."""

    @abstractmethod
    def positions(self, raw: Any) -> list[Any]:
        """The positions (offsets, sequence numbers) a raw batch holds, in order."""

    @abstractmethod
    def to_arrow(self, raw: Any) -> pa.RecordBatch | None:
        """Kept, decoded records of a raw batch (dead letters go to ``dead_letters``)."""

    def summary_extra(self) -> JsonObject:
        """Source-specific figures for the split's summary."""
        return {}

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            raws = iter(self.fetch())
            while True:
                with gc_paused():
                    raw = next(raws, _END)
                    if raw is _END:
                        break
                    self.stats.scanned(self.positions(raw))
                    batch = self.to_arrow(raw)
                if batch is not None and batch.num_rows:
                    if self.sink is None:
                        yield batch
                    else:
                        self.sink.write(batch)
                faults.check("read", self.split.id, self.stats.summary.scanned, self.fault)
            if self.sink is not None:
                self.sink.commit()
        except BaseException as exc:
            if self.sink is not None:
                self.sink.abort()
            if isinstance(exc, StreamsliceError) and exc.split is None:
                exc.split = self.split.id
            raise
        self.stats.reached_stop()
        self.stats.note(**self.summary_extra())
        if self.staging is not None:
            self.staging.finish_split(self.split.id, self._dead, self.dead_letter_schema,
                                      self.stats.summary)

    def failed_rows(self, errors: dict[int, str], rows: int,
                    describe: Callable[[int], str]) -> tuple[list[int], list[int]]:
        """Rows that did not decode and rows that did, or DecodeError when the pipeline says
        ``on_error: fail``. ``describe(row)`` names a row's position."""
        if errors and self.decoder.on_error == "fail":
            row = min(errors)
            raise DecodeError(f"{self.split.key} {describe(row)}: {errors[row]} "
                              "(format.on_error is fail)", split=self.split.id)
        bad = sorted(errors)
        return bad, [i for i in range(rows) if i not in errors]

    def dead_letters(self, batch: pa.RecordBatch) -> None:
        self.stats.dead_letters(batch.num_rows)
        self._dead.append(batch)

    def take_dead_letters(self) -> pa.RecordBatch:
        """The dead letters so far, no longer kept for the staging area (a DataFrame read
        without one takes them as they come: ``reading.malformed``)."""
        import pyarrow as pa
        dead, self._dead = self._dead, []
        if not dead:
            return pa.RecordBatch.from_pylist([], schema=self.dead_letter_schema)
        return pa.concat_batches(dead)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while one raw batch is fetched and converted.

    A batch allocates tens of thousands of short-lived container objects (a client's message
    objects, boto3's record dicts, decoded JSON) that reference counting frees; each 700 of
    them would otherwise start a collection that walks them all again (a third of the Kafka
    reader's CPU, measured with bench/read_cpu.py). Collection resumes between batches, so
    cycles are still collected, and a caller that had disabled it keeps it disabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
