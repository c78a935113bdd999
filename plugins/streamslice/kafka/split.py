"""A Kafka split: one topic-partition offset range ``[start, stop)``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    late: dict[str, Any] | None = None  # unresolved start/stop, bound when read (kafka.late)

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    @property
    def size(self) -> int:
        return max(0, self.stop - self.start)

    @property
    def lag(self) -> int:
        """Records behind the high watermark at plan time (from where this split starts)."""
        return max(0, self.high_watermark - self.start)
