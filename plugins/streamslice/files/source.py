"""Newline-delimited files as a streamslice ``Source``: each file under a folder (local or an
object store pyarrow reaches, such as S3) is a partition and each complete line a record, at
the position of its line number. Runs replay the lines added since the last one, so archived
exports (JSON Lines, CSV-less logs, Firehose dumps) and files still being appended to land
exactly once, the same way a topic does. No client, no connection, no lifecycle tasks: the
configuration and the three roles (``planner.FilePlanner``, ``reader.FileReaders``,
``split.FileSplitSerializer``), the smallest complete source."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..sources import Source
from .split import FileSplit, FileSplitSerializer

if TYPE_CHECKING:
    from ..config.fields import Fields
    from ..sources import Properties
    from .planner import FilePlanner
    from .reader import FileReaders
    from .stream import FileStream


@dataclass(frozen=True)
class FileSource(Source[FileSplit]):
    path: str  # a folder: an absolute path or a URI
    pattern: str = "*"  # fnmatch over the path relative to the folder
    start: str = "earliest"  # where a file without a checkpoint starts: earliest | latest
    conn_id: str | None = None  # files take no connection

    kind = "files"
    option_prefix = "files."
    options = ("path", "pattern", "startingPosition", "maxFilesPerTrigger", "maxBytesPerTrigger")
    lag_unit = "records"

    # -- configuration ----------------------------------------------------------------------
    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> FileSource:
        from .config import parse_files
        return parse_files(f, mode, pipeline)

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

    @classmethod
    def stream(cls, options: dict[str, str]) -> FileStream:
        """A ``spark.readStream`` query's offsets and read limits (``files.stream``)."""
        from .stream import stream_from_options
        return stream_from_options(options, cls.from_options(options)[0])

    def client_properties(self, resolved: Properties | None = None) -> Properties:
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

    # -- roles ----------------------------------------------------------------------------
    def planner(self) -> FilePlanner:
        from .planner import FilePlanner
        return FilePlanner(self)

    @classmethod
    def readers(cls) -> FileReaders:
        from .reader import FileReaders
        return FileReaders()

    @classmethod
    def serializer(cls) -> FileSplitSerializer:
        return FileSplitSerializer()
