"""A Kafka split: one topic-partition offset range ``[start, stop)`` (``splits.Split``), and
its serializer (``KafkaSplitSerializer``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..planning.plan import build
from ..sources import SplitSerializer
from ..splits import NO_POSITION, PositionText
from .spark_options import EARLIEST, LATEST

if TYPE_CHECKING:
    from ..records import JsonObject
    from ..splits import LagUnit


@dataclass
class KafkaSplit:
    """``late_from`` / ``owned_until`` are set in interval mode (see ``planning.bounds``):
    records older than the interval are kept, flagged late, only between them."""

    id: int
    topic: str
    partition: int
    start: int
    stop: int
    log_start: int = 0
    high_watermark: int = 0
    late_from: int | None = None
    owned_until: int | None = None
    home_from: int | None = None  # with an event-time field: b(s) and b(e-E)
    early_until: int | None = None
    # sides still to resolve, of a read given as Spark options (``kafka.binding``)
    unresolved: dict[str, Any] | None = None

    lag_unit: ClassVar[LagUnit] = "records"

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    @property
    def end(self) -> int:
        return self.stop

    @property
    def size(self) -> int | None:
        """None while start/stop are unresolved (``kafka.binding``): a task binds them."""
        return None if self.unresolved else max(0, self.stop - self.start)

    @property
    def lag(self) -> int:
        """Records behind the high watermark at plan time (from where this split starts)."""
        return max(0, self.high_watermark - self.start)

    @property
    def offset_range(self) -> tuple[int, int]:
        return self.start, self.stop

    def interval_offsets(self, *names: str) -> dict[str, int]:
        """The interval run's offsets ``names`` (``late_from``, ``owned_until``, …), which
        the planner sets on every split of an interval plan; a PlanError if one is missing."""
        found = {name: getattr(self, name) for name in names}
        missing = [name for name, value in found.items() if value is None]
        if missing:
            from ..errors import PlanError
            raise PlanError(f"{self.key}: an interval read's split has no {missing[0]} "
                            "(the plan was not made for an interval)")
        return found

    def to_dict(self) -> JsonObject:
        return asdict(self)


class KafkaSplitSerializer(SplitSerializer[KafkaSplit]):
    def from_dict(self, data: JsonObject) -> KafkaSplit:
        split: KafkaSplit = build(KafkaSplit, data, "Kafka split")
        return split

    def position_text(self, position: Any) -> PositionText:
        """Offsets as they are (people compare them digit by digit); Spark-option splits
        not bound yet start at ``earliest`` and stop at ``latest``."""
        if position is None:
            return NO_POSITION
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(f"not a Kafka offset: {position!r}")
        text = {EARLIEST: "earliest", LATEST: "latest"}.get(position, str(position))
        return PositionText(text, text)
