"""The file split reader: the split's byte range → lines → decode → Arrow batches, on the
shared loop (``reading.loop``). The range must still hold exactly the lines the plan counted."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import DataLossError
from ..reading.decode import TS, Decoder
from ..reading.loop import SplitReader
from ..sources import ReaderFactory
from .planner import CHUNK, folder

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..monitoring.lineage import DatasetName
    from ..planning.plan import ReadPlan
    from ..reading.staging import Staging
    from ..sources import ReadRequest
    from .split import FileSplit

_META = [("file", pa.string()), ("line", pa.int64()), ("timestamp", TS)]
DEAD_LETTER_SCHEMA = pa.schema([("value", pa.binary()), *_META, ("error", pa.string())])


def record_schema(decoder: Decoder) -> pa.Schema:
    """The line's value (json values become top-level fields), its file and line number, and
    the file's modification time when the run was planned."""
    return pa.schema([*decoder.value_fields("value"), *_META])


class FileReaders(ReaderFactory["FileSplit"]):
    """The files' readers, for executors that have the plan: its ``source_info`` holds the
    folder."""

    verify_columns = (("file",), "line")

    def record_schema(self, decoder: Decoder, plan: ReadPlan[FileSplit]) -> pa.Schema:
        return record_schema(decoder)

    def open_reader(self, split: FileSplit, request: ReadRequest) -> FileSplitReader:
        return FileSplitReader(split, root=request.plan.source_info["root"],
                               decoder=request.decoder, staging=request.staging,
                               fault=request.fault)

    def lineage_dataset(self, plan: ReadPlan[FileSplit], split: FileSplit) -> DatasetName:
        from ..monitoring.lineage import location_dataset
        return location_dataset(plan.source_info["root"])  # the folder: one dataset


@dataclass
class Lines:
    first: int  # line number of values[0]
    values: list[bytes]


class FileSplitReader(SplitReader["FileSplit"]):
    dead_letter_schema = DEAD_LETTER_SCHEMA

    def __init__(self, split: FileSplit, *, root: str, decoder: Decoder | None = None,
                 staging: Staging | None = None, fault: str | None = None,
                 batch_lines: int = 10_000) -> None:
        super().__init__(split, decoder=decoder or Decoder(), staging=staging, fault=fault)
        self.root, self.batch_lines = root, batch_lines
        self.schema = record_schema(self.decoder)

    def fetch(self) -> Iterator[Lines]:
        split: FileSplit = self.split
        fs, base = folder(self.root)
        line, carry = split.start, b""
        remaining = split.stop_byte - split.start_byte
        with fs.open_input_file(f"{base.rstrip('/')}/{split.path}") as f:
            f.seek(split.start_byte)
            while remaining > 0:
                chunk = f.read(min(CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                carry, values = data[cut:], data[:cut].split(b"\n")[:-1]
                for i in range(0, len(values), self.batch_lines):
                    batch = [v[:-1] if v.endswith(b"\r") else v
                             for v in values[i:i + self.batch_lines]]
                    if line + len(batch) > split.stop:
                        break
                    yield Lines(line, batch)
                    line += len(batch)
        if remaining or carry or line != split.stop:
            raise DataLossError(f"{split.key}: lines {split.start} to {split.stop} are no longer "
                                f"where the plan found them (bytes {split.start_byte} to "
                                f"{split.stop_byte}): the file was truncated or rewritten "
                                "since the run was planned")

    def positions(self, raw: Lines) -> list[int]:
        return list(range(raw.first, raw.first + len(raw.values)))

    def to_arrow(self, raw: Lines) -> pa.RecordBatch:
        lines = pa.array(self.positions(raw), pa.int64())
        values, errors = self.decoder.decode_values(raw.values)
        if errors:
            bad, good = self.failed_rows(errors, len(raw.values),
                                         lambda row: f"line {raw.first + row}")
            bad_idx = pa.array(bad, pa.int64())
            self.dead_letters(pa.RecordBatch.from_arrays(
                [pa.array([raw.values[i] for i in bad], pa.binary()),
                 *self._meta(lines.take(bad_idx)),
                 pa.array([errors[i] for i in bad], pa.string())], schema=DEAD_LETTER_SCHEMA))
            good_idx = pa.array(good, pa.int64())
            values, lines = [c.take(good_idx) for c in values], lines.take(good_idx)
        n = len(lines)
        ts = pa.repeat(pa.scalar(self.split.modified_ms, pa.int64()), n)
        self.stats.kept(lines.to_pylist(), ts, None, sum(a.nbytes for a in values))
        return pa.RecordBatch.from_arrays([*values, *self._meta(lines)], schema=self.schema)

    def _meta(self, lines: pa.Array) -> list[pa.Array]:
        n = len(lines)
        when = pa.scalar(self.split.modified_ms, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        return [pa.repeat(pa.scalar(self.split.path, pa.string()), n), lines,
                pa.repeat(when, n).cast(TS)]
