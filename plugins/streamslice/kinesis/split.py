"""A Kinesis split: one shard, from a start position until an arrival-time bound or shard end
(``splits.Split``), and its serializer (``KinesisSplitSerializer``).

``start`` is stored as a plain dict so plans stay JSON; ``start_position`` is its strategy
object (``kinesis.positions``). How far behind a shard is only its reader learns
(``MillisBehindLatest``), so ``lag`` is None here and the summary carries the reader's figure."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..planning.plan import build
from ..sources import SplitSerializer
from ..splits import NO_POSITION
from .positions import NO_BOUND, Position, position_from_dict, position_text

if TYPE_CHECKING:
    from ..records import JsonObject
    from ..splits import LagUnit, PositionText


@dataclass
class KinesisSplit:
    id: int
    stream: str
    shard_id: str
    start: JsonObject  # its Position (``positions.position_from_dict``)
    stop_before: int  # epoch ms: stop at the first record that arrived at or after this
    closed: bool = False  # the shard was closed at plan time
    parents: list[str] = field(default_factory=list)
    stream_arn: str | None = None

    lag_unit: ClassVar[LagUnit] = "ms"

    @property
    def key(self) -> str:
        return f"{self.stream}:{self.shard_id}"

    @property
    def start_position(self) -> Position:
        return position_from_dict(self.start)

    @property
    def end(self) -> JsonObject:
        """``{"arrived_before": ms}``, or ``{"shard_end": true}`` (read until the shard ends
        or the reader has caught up)."""
        if self.stop_before >= NO_BOUND:
            return {"shard_end": True}
        return {"arrived_before": self.stop_before}

    @property
    def size(self) -> None:
        return None  # unknown until read

    @property
    def lag(self) -> None:
        return None

    @property
    def offset_range(self) -> None:
        return None  # sequence numbers are not range-checked against the staged rows

    def to_dict(self) -> JsonObject:
        return asdict(self)


class KinesisSplitSerializer(SplitSerializer[KinesisSplit]):
    def from_dict(self, data: JsonObject) -> KinesisSplit:
        split: KinesisSplit = build(KinesisSplit, data, "Kinesis split")
        return split

    def position_text(self, position: Any) -> PositionText:
        """Sequence numbers elided in the middle, with what kind of position they are."""
        return NO_POSITION if position is None else position_text(position)
