"""Kinesis start and stop positions, one small class each (like Kafka's ``kafka.positions``).

A start resolves at plan time into a concrete per-shard position (``for_shard``); a concrete
position knows its GetShardIterator and SubscribeToShard arguments, so the polling and the
EFO readers build them the same way. Positions are stored in plans and checkpoints as plain
dicts (``to_dict`` / ``position_from_dict``).

Checkpoint values per shard: ``{"after": seq}``, ``{"at": seq}`` (after a reset),
``{"at_timestamp": ms}`` or ``{"finished": true}`` (the shard was read to SHARD_END).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import PlanError
from ..planning.bounds import resolve_time
from ..splits import PositionText
from ..timestamps import SYMBOLS, iso

if TYPE_CHECKING:
    from ..planning.bounds import IntervalBounds
    from ..records import JsonObject

NO_BOUND = 2 ** 62  # "read until caught up", for stop: shard_end


@dataclass(frozen=True)
class PlanTime:
    """What a position needs to resolve: the plan's clock and the run's interval."""

    now_ms: int
    bounds: IntervalBounds | None = None


# A position as Kinesis' API takes it (GetShardIterator's arguments, SubscribeToShard's
# StartingPosition): its type and sequence number as text, a timestamp in epoch seconds
ShardArgs = dict[str, str | float]


class Position:
    """A start position. Concrete ones (no symbols, no per-shard maps) go into splits."""

    type: ClassVar[str]

    def for_shard(self, shard_id: str, at: PlanTime) -> Position:
        return self.resolve(at)

    def resolve(self, at: PlanTime) -> Position:
        return self

    def iterator_args(self) -> ShardArgs:
        """GetShardIterator arguments besides StreamName and ShardId."""
        return {"ShardIteratorType": self.type}

    def starting_position(self) -> ShardArgs:
        """SubscribeToShard's StartingPosition."""
        return {"Type": self.type}

    def to_dict(self) -> JsonObject:
        return {"type": self.type}

    def describe(self) -> str:
        return self.type


@dataclass(frozen=True)
class TrimHorizon(Position):
    type = "TRIM_HORIZON"


@dataclass(frozen=True)
class Latest(Position):
    """Records arriving after the plan: resolved to AT_TIMESTAMP of the plan time, so the
    checkpoint can carry the same point to shards that appear later."""

    type = "LATEST"

    def resolve(self, at: PlanTime) -> Position:
        return AtTimestamp(at.now_ms)


@dataclass(frozen=True)
class AtTimestamp(Position):
    timestamp: int | str  # epoch ms, or data_interval_start

    type = "AT_TIMESTAMP"

    def resolve(self, at: PlanTime) -> Position:
        return AtTimestamp(resolve_time(self.timestamp, at.bounds))

    def iterator_args(self) -> ShardArgs:
        return {"ShardIteratorType": self.type, "Timestamp": self._seconds()}

    def starting_position(self) -> ShardArgs:
        return {"Type": self.type, "Timestamp": self._seconds()}

    def _seconds(self) -> float:
        if isinstance(self.timestamp, str):
            raise PlanError(f"AT_TIMESTAMP {self.timestamp} was not resolved")
        return self.timestamp / 1000

    def to_dict(self) -> JsonObject:
        return {"type": self.type, "timestamp": self.timestamp}

    def describe(self) -> str:
        ts = self.timestamp
        return f"AT_TIMESTAMP {ts if isinstance(ts, str) else iso(ts)}"


@dataclass(frozen=True)
class _Sequence(Position):
    seq: str

    def iterator_args(self) -> ShardArgs:
        return {"ShardIteratorType": self.type, "StartingSequenceNumber": self.seq}

    def starting_position(self) -> ShardArgs:
        return {"Type": self.type, "SequenceNumber": self.seq}

    def to_dict(self) -> JsonObject:
        return {"type": self.type, "seq": self.seq}

    def describe(self) -> str:
        return f"{self.type} {self.seq}"


@dataclass(frozen=True)
class AtSequenceNumber(_Sequence):
    type = "AT_SEQUENCE_NUMBER"


@dataclass(frozen=True)
class AfterSequenceNumber(_Sequence):
    type = "AFTER_SEQUENCE_NUMBER"


@dataclass(frozen=True)
class SequenceNumbers(Position):
    """A start given per shard (``{AT_SEQUENCE_NUMBER: {shardId-…: seq}}``); shards not listed
    start at the trim horizon."""

    kind: str  # AT_SEQUENCE_NUMBER | AFTER_SEQUENCE_NUMBER
    seqs: dict[str, str] = field(default_factory=dict)

    @property
    def type(self) -> str:  # type: ignore[override]
        return self.kind

    def for_shard(self, shard_id: str, at: PlanTime) -> Position:
        seq = self.seqs.get(shard_id)
        if not seq:
            return TrimHorizon()
        return AtSequenceNumber(seq) if self.kind == AtSequenceNumber.type \
            else AfterSequenceNumber(seq)

    def to_dict(self) -> JsonObject:
        return {"type": self.kind, "seq": dict(self.seqs)}

    def describe(self) -> str:
        return f"{self.kind} " + ", ".join(f"{k}@{v}" for k, v in sorted(self.seqs.items()))


def position_from_dict(data: dict[str, Any]) -> Position:
    kind = data["type"]
    if kind == TrimHorizon.type:
        return TrimHorizon()
    if kind == Latest.type:
        return Latest()
    if kind == AtTimestamp.type:
        return AtTimestamp(data["timestamp"])
    if kind in (AtSequenceNumber.type, AfterSequenceNumber.type):
        seq = data["seq"]
        if isinstance(seq, dict):
            return SequenceNumbers(kind, dict(seq))
        return AtSequenceNumber(seq) if kind == AtSequenceNumber.type \
            else AfterSequenceNumber(seq)
    raise ValueError(f"unknown Kinesis position {data!r}")


def from_checkpoint(value: dict[str, Any]) -> Position | None:
    """A shard's checkpoint value → the position to continue from (None when finished)."""
    if value.get("finished"):
        return None
    if "after" in value:
        return AfterSequenceNumber(str(value["after"]))
    if "at" in value:
        return AtSequenceNumber(str(value["at"]))
    return AtTimestamp(int(value["at_timestamp"]))


# -- stops ------------------------------------------------------------------------------------

class Stop:
    """Where an open shard's read ends: at the first record that arrived at or after
    ``stop_before`` (a closed shard also ends at SHARD_END)."""

    def stop_before(self, at: PlanTime) -> int:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Tip(Stop):
    """``latest``: the records that arrived before the plan."""

    def stop_before(self, at: PlanTime) -> int:
        return at.now_ms

    def describe(self) -> str:
        return "latest"


@dataclass(frozen=True)
class ShardEnd(Stop):
    """``shard_end``: closed shards to their end, open ones until caught up."""

    def stop_before(self, at: PlanTime) -> int:
        return NO_BOUND

    def describe(self) -> str:
        return "shard_end"


@dataclass(frozen=True)
class ArrivedBefore(Stop):
    """``{timestamp: …}`` or the run's ``data_interval_end``."""

    timestamp: int | str

    def stop_before(self, at: PlanTime) -> int:
        return resolve_time(self.timestamp, at.bounds)

    def describe(self) -> str:
        ts = self.timestamp
        return f"arrived before {ts if ts in SYMBOLS else iso(int(ts))}"


def position_text(value: Any) -> PositionText:
    """Any Kinesis position for people (``splits.PositionText``): a split's start strategy, a
    split's end, a checkpoint value or a reader's sequence number."""
    if isinstance(value, str):
        return PositionText.plain(value)
    if not isinstance(value, dict):
        raise ValueError(f"not a Kinesis position: {value!r}")
    if "type" in value:
        position = position_from_dict(value)
        if isinstance(position, _Sequence):
            word = "at" if isinstance(position, AtSequenceNumber) else "after"
            return PositionText.labelled(word, position.seq)
        text = position.describe()
        return PositionText(text, text)
    for word in ("after", "at"):
        if word in value:
            return PositionText.labelled(word, str(value[word]))
    if "at_timestamp" in value:
        text = f"at {iso(int(value['at_timestamp']))}"
    elif "arrived_before" in value:
        text = f"arrived before {iso(int(value['arrived_before']))}"
    elif value.get("finished") or value.get("shard_end"):
        text = "SHARD_END"
    else:
        raise ValueError(f"not a Kinesis position: {value!r}")
    return PositionText(text, text)
