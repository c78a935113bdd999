"""Newline-delimited files as a streamslice ``Source``: each file under a folder (local or an
object store pyarrow reaches, such as S3) is a partition and each complete line a record, at
the position of its line number. Runs replay the lines added since the last one, so archived
exports (JSON Lines, CSV-less logs, Firehose dumps) and files still being appended to land
exactly once, the same way a topic does. No client, no connection, no lifecycle tasks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..sources import ResetTarget, Source
from ..splits import NO_POSITION, PositionText

if TYPE_CHECKING:
    import pyarrow as pa

    from ..config.fields import Fields
    from ..lineage import DatasetName
    from ..planning.plan import ReadPlan
    from ..reading.decode import Decoder
    from ..sources import PlanRequest, ReadRequest, SourcePlan
    from .reader import FileSplitReader
    from .split import FileSplit


@dataclass(frozen=True)
class FileSource(Source["FileSplit"]):
    path: str  # a folder: an absolute path or a URI
    pattern: str = "*"  # fnmatch over the path relative to the folder
    start: str = "earliest"  # where a file without a checkpoint starts: earliest | latest
    conn_id: str | None = None  # files take no connection

    kind = "files"
    option_prefix = "files."
    options = ("path", "pattern", "startingPosition")
    lag_unit = "records"
    verify_columns = (("file",), "line")

    # -- configuration ----------------------------------------------------------------------
    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> FileSource:
        from .config import parse_files
        return cls(**parse_files(f, mode, pipeline))

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[FileSource, dict[str, Any]]:
        """``spark.read.format("streamslice-files").load(folder)``: ``path`` (what ``load``
        passes), ``pattern``, ``startingPosition`` (earliest | latest)."""
        if not options.get("path"):
            raise ConfigError("option path is required (a folder: load('/data/events'))")
        start = options.get("startingposition", "earliest").strip().lower()
        if start not in ("earliest", "latest"):
            raise ConfigError(f"option startingPosition: {start!r} is not earliest or latest")
        return cls(path=options["path"].rstrip("/") or "/",
                   pattern=options.get("pattern", "*"), start=start), {}

    def client_properties(self, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        return dict(resolved or {})

    def describe(self) -> str:
        return f"files `{self.pattern}`"

    def describe_where(self) -> str:
        return f"folder `{self.path}`"

    def describe_bounds(self, mode: str) -> str:
        return (f"checkpoint (new files: {self.start}) → the last complete line at plan "
                "time")

    def describe_start(self) -> str:
        return f"{self.start} (line 0)" if self.start == "earliest" else "the end of each file"

    # -- planning ---------------------------------------------------------------------------
    def split_keys(self, properties: dict[str, Any]) -> list[str]:
        from .planner import list_files
        return list(list_files(self)[2])

    def plan(self, request: PlanRequest) -> SourcePlan:
        from .planner import plan_files
        return plan_files(self, request)

    def reset_positions(self, to: Any, properties: dict[str, Any]) -> ResetTarget:
        """``to``: earliest | latest | {offsets: {"file": line}}. Lines carry no time."""
        from .planner import list_files, scan
        fs, _, files = list_files(self)
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

    # -- reading ----------------------------------------------------------------------------
    @classmethod
    def split_from_dict(cls, data: dict[str, Any]) -> FileSplit:
        from ..planning.plan import build
        from .split import FileSplit
        split: FileSplit = build(FileSplit, data, "file split")
        return split

    @classmethod
    def record_schema(cls, decoder: Decoder, plan: ReadPlan[FileSplit]) -> pa.Schema:
        from .reader import record_schema
        return record_schema(decoder)

    @classmethod
    def open_reader(cls, split: FileSplit, request: ReadRequest) -> FileSplitReader:
        from .reader import FileSplitReader
        return FileSplitReader(split, root=request.plan.source_info["root"],
                               decoder=request.decoder, staging=request.staging,
                               fault=request.fault)

    @classmethod
    def lineage_dataset(cls, plan: ReadPlan[FileSplit], split: FileSplit) -> DatasetName:
        from ..lineage import location_dataset
        return location_dataset(plan.source_info["root"])  # the folder: one dataset

    @classmethod
    def position_text(cls, position: Any) -> PositionText:
        """Line numbers as they are."""
        if position is None:
            return NO_POSITION
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(f"not a line number: {position!r}")
        return PositionText(str(position), str(position))
