"""A file split: the complete lines ``[start, stop)`` of one file (``splits.Split``), and its
serializer (``FileSplitSerializer``).

Positions are line numbers (the number of lines before a record). The planner also records the
byte range those lines span, so a reader seeks instead of counting, and checks it still holds
exactly that many lines (a file rewritten since the plan is an error, not another range)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..planning.plan import build
from ..sources import SplitSerializer
from ..splits import NO_POSITION, PositionText

if TYPE_CHECKING:
    from ..records import JsonObject
    from ..splits import LagUnit


@dataclass
class FileSplit:
    id: int
    path: str  # relative to the source's folder: the partition's key
    start: int  # first line read
    stop: int  # lines complete (newline-terminated) at plan time: the read ends before it
    start_byte: int
    stop_byte: int
    modified_ms: int  # the file's modification time at plan time: its records' timestamp

    lag_unit: ClassVar[LagUnit] = "records"

    @property
    def key(self) -> str:
        return self.path

    @property
    def end(self) -> int:
        return self.stop

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def lag(self) -> int:
        """Lines not yet read when the run was planned (all of them are read by this run)."""
        return self.stop - self.start

    @property
    def offset_range(self) -> tuple[int, int]:
        return self.start, self.stop

    def to_dict(self) -> JsonObject:
        return asdict(self)


class FileSplitSerializer(SplitSerializer[FileSplit]):
    def from_dict(self, data: JsonObject) -> FileSplit:
        split: FileSplit = build(FileSplit, data, "file split")
        return split

    def position_text(self, position: Any) -> PositionText:
        """Line numbers as they are."""
        if position is None:
            return NO_POSITION
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(f"not a line number: {position!r}")
        return PositionText(str(position), str(position))
