"""A Kafka split: one topic-partition offset range ``[start, stop)`` (``splits.Split``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
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
    late: dict[str, Any] | None = None  # unresolved start/stop (kafka.late)

    lag_unit: ClassVar[LagUnit] = "records"

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    @property
    def end(self) -> int:
        return self.stop

    @property
    def size(self) -> int | None:
        """None while start/stop are unresolved (``kafka.late``): a task binds them."""
        return None if self.late else max(0, self.stop - self.start)

    @property
    def lag(self) -> int:
        """Records behind the high watermark at plan time (from where this split starts)."""
        return max(0, self.high_watermark - self.start)

    @property
    def offset_range(self) -> tuple[int, int]:
        return self.start, self.stop

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
