"""The files planner (FLIP-27's enumerator): the folder's files → one split per file with
lines not read yet, each from its checkpoint line (or the start policy's) to its last complete
line. A line still being written (no newline yet) waits for the next run."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from ..errors import ConfigError, DataLossError, PlanError, SourceError
from ..sources import Planner, ResetTarget, SourcePlan
from .split import FileSplit

if TYPE_CHECKING:
    from ..sources import PlanRequest, Properties
    from .source import FileSource

CHUNK = 4 << 20


def folder(uri: str) -> tuple[pafs.FileSystem, str]:
    try:
        found: tuple[pafs.FileSystem, str] = pafs.FileSystem.from_uri(uri)
        return found
    except (ValueError, OSError) as exc:
        raise SourceError(f"files.path {uri}: {exc}") from None


def list_files(source: FileSource) -> tuple[pafs.FileSystem, str, dict[str, pafs.FileInfo]]:
    """The files under the source's folder whose relative path matches its pattern (names
    starting with ``_`` or ``.`` are left out, as Spark and Hive leave them out)."""
    fs, root = folder(source.path)
    try:
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            raise PlanError(f"files.path {source.path} is not a folder")
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except OSError as exc:
        raise SourceError(f"cannot list {source.path}: {exc}") from None
    found = {}
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root.rstrip("/")) + 1:]
        if any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue
        if fnmatch.fnmatchcase(rel, source.pattern):
            found[rel] = info
    return fs, root, dict(sorted(found.items()))


def scan(fs: pafs.FileSystem, path: str, start: int | None) -> tuple[int, int, int, int]:
    """One pass over a file: (start line, its byte offset, complete lines, byte offset after
    the last complete line). ``start`` None means the end of the complete lines."""
    lines = offset = end_byte = 0
    start_byte = 0 if not start else None
    with fs.open_input_stream(path) as f:
        while chunk := f.read(CHUNK):
            n = chunk.count(b"\n")
            if start_byte is None and start is not None and lines + n >= start:
                at = -1
                for _ in range(start - lines):
                    at = chunk.index(b"\n", at + 1)
                start_byte = offset + at + 1
            if n:
                end_byte = offset + chunk.rindex(b"\n") + 1
            lines, offset = lines + n, offset + len(chunk)
    if start is None:
        return lines, end_byte, lines, end_byte
    if start_byte is None:
        raise DataLossError(f"{path}: the checkpoint is at line {start} but the file has "
                            f"{lines} complete lines: it was truncated or replaced")
    return start, start_byte, lines, end_byte


@dataclass(frozen=True)
class FilePlanner(Planner[FileSplit]):
    """Plans a configured ``FileSource``: its folder's files as they are now."""

    source: FileSource

    def split_keys(self, properties: Properties) -> list[str]:
        return list(list_files(self.source)[2])

    def plan(self, request: PlanRequest) -> SourcePlan[FileSplit]:
        return plan_files(self.source, request)

    def reset_positions(self, to: Any, properties: Properties) -> ResetTarget:
        """``to``: earliest | latest | {offsets: {"file": line}}. Lines carry no time."""
        fs, _, files = list_files(self.source)
        if to == "earliest":
            return ResetTarget(dict.fromkeys(files, 0))
        if to == "latest":
            return ResetTarget({rel: scan(fs, info.path, None)[2] for rel, info in files.items()})
        if isinstance(to, dict) and set(to) == {"offsets"} and isinstance(to["offsets"], dict):
            positions = {}
            for rel, line in to["offsets"].items():
                if rel not in files:
                    raise ConfigError(f"reset target: {rel!r} is not a file this pipeline "
                                      f"reads ({', '.join(files) or 'none'})")
                if isinstance(line, bool) or not isinstance(line, int) or line < 0:
                    raise ConfigError(f"reset target: {rel}: {line!r} is not a line number")
                positions[rel] = line
            return ResetTarget(positions)
        raise ConfigError(f"reset target {to!r}: give earliest, latest or line numbers "
                          '({"file": line}); lines carry no timestamp')


def plan_files(source: FileSource, request: PlanRequest) -> SourcePlan[FileSplit]:
    fs, _, files = list_files(source)
    done = request.checkpoint.positions if request.checkpoint else {}
    splits: list[FileSplit] = []
    next_positions: dict[str, Any] = {}
    for rel, info in files.items():
        known = done.get(rel)
        first: int | None = int(known) if known is not None else \
            (0 if source.start == "earliest" else None)
        try:
            start, start_byte, lines, end_byte = scan(fs, info.path, first)
        except OSError as exc:
            raise SourceError(f"cannot read {rel}: {exc}") from None
        next_positions[rel] = lines
        if lines > start:
            modified = info.mtime_ns // 1_000_000 if info.mtime_ns else request.now_ms
            splits.append(FileSplit(id=len(splits), path=rel, start=start, stop=lines,
                                    start_byte=start_byte, stop_byte=end_byte,
                                    modified_ms=modified))
    return SourcePlan(splits=splits, next_positions=next_positions,
                      info={"root": source.path})  # the readers' folder: no secrets
