"""A Kinesis split: one shard, from a start position until an arrival-time bound or shard end.

``start`` is stored as a plain dict so plans stay JSON; ``start_position`` is its strategy
object (``kinesis.positions``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .positions import Position, position_from_dict


@dataclass
class KinesisSplit:
    id: int
    stream: str
    shard_id: str
    start: dict[str, Any]
    stop_before: int  # epoch ms: stop at the first record that arrived at or after this
    closed: bool = False  # the shard was closed at plan time
    parents: list[str] = field(default_factory=list)
    stream_arn: str | None = None

    @property
    def key(self) -> str:
        return f"{self.stream}:{self.shard_id}"

    @property
    def start_position(self) -> Position:
        return position_from_dict(self.start)

    @property
    def size(self) -> int:
        return 0  # unknown until read

    @property
    def lag(self) -> None:
        return None
