"""``spark.readStream.format("streamslice-files")``: a folder's files as a streaming source,
over the batch planner's listing and line counting (``planner.list_files``, ``planner.scan``)
and read by the batch readers (``FileSplit``). No PySpark imports: ``spark.stream`` is the
glue.

Offsets are ``{"file": lines}``, the complete lines of each file read so far (Spark keeps them
in the query's checkpoint). A file that appears while the query runs is read from its first
line, whatever ``startingPosition`` says (that is for the files there when the query first
starts); a file that grows is read on from where it was; a line still being written (no
newline yet) waits for a later batch. The read limits are Spark's file source's:
``maxFilesPerTrigger`` (files with new lines a batch) and ``maxBytesPerTrigger`` (a soft
limit: whole files' new lines until it is reached, at least one file), oldest file first, as
Spark orders by modification time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.data_source_options import positive
from ..errors import ConfigError, SourceError
from .planner import folder, list_files, scan
from .split import FileSplit

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from .source import FileSource

Offsets = dict[str, int]  # file (relative to the folder) → complete lines read


@dataclass(frozen=True)
class FileLimits:
    """``maxFilesPerTrigger`` and ``maxBytesPerTrigger``; the row limits a Kafka stream has do
    not apply (``spark.stream.default_limit``)."""

    max_files: int | None = None
    max_bytes: int | None = None
    max_offsets: None = None
    min_offsets: None = None


@dataclass(frozen=True)
class Pending:
    """One file's complete lines now, and the bytes after ``start`` they span."""

    lines: int
    bytes: int
    modified_ns: int


def limits_from_options(opts: dict[str, str]) -> FileLimits:
    """``opts`` has lower-cased keys."""
    limits = FileLimits(positive(opts, "maxFilesPerTrigger"),
                        positive(opts, "maxBytesPerTrigger"))
    if limits.max_files and limits.max_bytes:
        raise ConfigError("options maxFilesPerTrigger and maxBytesPerTrigger cannot be set "
                          "together; give one of them")
    return limits


def take(limits: FileLimits, start: Offsets, latest: Offsets, pending: dict[str, Pending],
         ) -> Offsets:
    """The end of a batch cut by the limits: files with new lines, oldest first (then by
    name), whole, until ``maxFilesPerTrigger`` of them or ``maxBytesPerTrigger`` of their
    bytes; the others stay where ``start`` has them."""
    waiting = sorted((p.modified_ns, key) for key, p in pending.items()
                     if latest.get(key, 0) > start.get(key, 0))
    chosen: list[str] = []
    size = 0
    for _, key in waiting:
        if limits.max_files and len(chosen) >= limits.max_files:
            break
        if limits.max_bytes and chosen and size + pending[key].bytes > limits.max_bytes:
            break
        chosen.append(key)
        size += pending[key].bytes
    out = dict(start)
    out.update({key: latest[key] for key in chosen})
    return out


def ordered(offsets: Offsets) -> Offsets:
    """Spark compares a batch's offsets as JSON text: files in order."""
    return {key: offsets[key] for key in sorted(offsets)}


class FileStream:
    """One streaming query's offsets over a folder, made anew in every Python worker that
    needs it. It remembers each file's size and line count, so a file that has not changed is
    not read again to count its lines."""

    def __init__(self, source: FileSource, limits: FileLimits) -> None:
        self.source, self.limits = source, limits
        self.properties: dict[str, Any] = {}
        self.info = {"root": source.path}  # what the batches' plan says: the readers' folder
        self.available_now: Offsets | None = None  # the end, fixed by Trigger.AvailableNow
        self.triggered_now = False
        self.latest: Offsets | None = None
        self._seen: dict[str, tuple[int, int, int]] = {}  # file → (size, mtime_ns, lines)

    # -- Spark's DataSourceStreamReader ------------------------------------------------------
    def initial_offset(self) -> dict[str, Any]:
        """``startingPosition`` earliest: nothing read yet; latest: the files there now, at
        their last complete line."""
        if self.source.start == "earliest":
            return {}
        return ordered({key: p.lines for key, p in self._pending({}).items()})

    def prepare_available_now(self) -> None:
        self.triggered_now = True

    def latest_offset(self, start: dict[str, Any], all_available: bool) -> dict[str, Any]:
        begin = {key: int(lines) for key, lines in start.items()}
        pending = self._pending(begin)
        now = {**begin, **{key: p.lines for key, p in pending.items()}}
        if self.triggered_now and self.available_now is None:
            self.available_now = now
        if self.available_now is not None:  # nothing that came after the query started
            target = self.available_now
            now = {key: max(begin.get(key, 0), min(lines, target[key])) if key in target
                   else begin[key] for key, lines in now.items() if key in target or key in begin}
        self.latest = ordered(now)
        if all_available or not (self.limits.max_files or self.limits.max_bytes):
            return self.latest
        return ordered(take(self.limits, begin, now, pending))

    def report_latest(self) -> dict[str, Any] | None:
        return self.latest

    def batch_splits(self, start: dict[str, Any], end: dict[str, Any]) -> list[FileSplit]:
        """The batch's lines as file splits, with the bytes they span now (lines are only ever
        appended, so a batch planned again after a crash spans the same lines)."""
        fs, root, files = list_files(self.source)
        splits: list[FileSplit] = []
        for key in sorted(end):
            first, last = int(start.get(key, 0)), int(end[key])
            if last <= first:
                continue
            info = files.get(key)
            if info is None:
                raise SourceError(f"{key}: lines {first} to {last} were to be read, but the "
                                  f"file is no longer in {self.source.path}")
            path = f"{root.rstrip('/')}/{key}"
            try:
                _, start_byte, lines, end_byte = scan(fs, path, first)
                stop_byte = end_byte if lines == last else scan(fs, path, last)[1]
            except OSError as exc:
                raise SourceError(f"cannot read {key}: {exc}") from None
            modified = info.mtime_ns // 1_000_000 if info.mtime_ns else 0
            splits.append(FileSplit(id=len(splits), path=key, start=first, stop=last,
                                    start_byte=start_byte, stop_byte=stop_byte,
                                    modified_ms=modified))
        return splits

    def close(self) -> None:
        """No client to close."""

    # -- the folder ---------------------------------------------------------------------------
    def _pending(self, start: Offsets) -> dict[str, Pending]:
        """Every file of the folder with its complete lines now; a file whose size and time
        have not changed since it was last counted keeps its count."""
        fs, _, files = list_files(self.source)
        out = {}
        for key, info in files.items():
            stamp = (info.size or 0, info.mtime_ns or 0)
            seen = self._seen.get(key)
            begin = start.get(key, 0)
            if seen is not None and seen[:2] == stamp and seen[2] == begin:
                out[key] = Pending(begin, 0, stamp[1])
                continue
            out[key] = self._count(fs, info, key, begin)
            self._seen[key] = (*stamp, out[key].lines)
        return out

    @staticmethod
    def _count(fs: pafs.FileSystem, info: pafs.FileInfo, key: str, begin: int) -> Pending:
        try:
            _, start_byte, lines, end_byte = scan(fs, info.path, begin)
        except OSError as exc:
            raise SourceError(f"cannot read {key}: {exc}") from None
        return Pending(lines, end_byte - start_byte, info.mtime_ns or 0)


def stream_from_options(opts: dict[str, str], source: FileSource) -> FileStream:
    """``opts`` has lower-cased keys; ``source`` is the batch read's ``FileSource`` of them."""
    folder(source.path)  # a bad URI fails when the query starts, with the batch read's text
    return FileStream(source, limits_from_options(opts))


__all__ = ["FileLimits", "FileStream", "limits_from_options", "stream_from_options", "take"]
