"""Start and stop positions, one small class each (cf. Flink's OffsetsInitializer).

Each ``resolve(tps, ctx)`` returns ``{tp: offset}``; ``ctx`` is a ``PlanContext`` holding the
admin client, the offsets fetched once per plan, the run's interval bounds and the checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PlanError
from ..planning.bounds import resolve_time
from ..timestamps import SYMBOLS, iso, parse_timestamp_ms

if TYPE_CHECKING:
    from ..planning.bounds import IntervalBounds
    from ..planning.progress import Progress
    from .admin import KafkaAdmin, TopicPartition

    Offsets = dict[TopicPartition, int]


class Position(Protocol):
    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets: ...

    def describe(self) -> str: ...


@dataclass
class PlanContext:
    admin: KafkaAdmin
    log_start: Offsets  # tp → log-start offset
    end: Offsets  # tp → high watermark
    bounds: IntervalBounds | None = None
    checkpoint: dict[str, Any] | None = None  # "topic:partition" → next offset
    now_ms: int = 0
    # An interval run's marks (``planning.progress``): a time no record has reached yet on
    # a partition is its tip, frozen for every run; None: the tip as it is now.
    progress: Progress | None = None

    def time(self, at: int | str) -> int:
        """A timestamp spec (epoch ms or a data-interval symbol) as epoch ms."""
        return resolve_time(at, self.bounds)

    def offsets_at(self, tps: list[TopicPartition], ms: int) -> Offsets:
        if self.progress is None:
            return self.admin.offsets_for_times({tp: ms for tp in tps}, ends=self.end)
        found = self.admin.first_offsets_at({tp: ms for tp in tps})
        return {tp: self.progress.bound(tp.key, ms, found[tp], self.end[tp], self.log_start[tp])
                for tp in tps}


@dataclass(frozen=True)
class Earliest:
    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        return {tp: ctx.log_start[tp] for tp in tps}

    def describe(self) -> str:
        return "earliest"


@dataclass(frozen=True)
class Latest:
    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        return {tp: ctx.end[tp] for tp in tps}

    def describe(self) -> str:
        return "latest"


@dataclass(frozen=True)
class Timestamp:
    at: int | str  # epoch ms, or "data_interval_start" / "data_interval_end"

    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        return ctx.offsets_at(tps, ctx.time(self.at))

    def describe(self) -> str:
        return f"timestamp {self.at if isinstance(self.at, str) else iso(self.at)}"


@dataclass(frozen=True)
class IntervalEnd:
    """The stop of an interval run: the interval's end plus its allowed lateness, so records
    that arrive late still land in the range (``planning.bounds`` says which are owned)."""

    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        if ctx.bounds is None:
            raise PlanError("data_interval_end needs a data interval (a scheduled DAG run, "
                            "or --at)")
        return ctx.offsets_at(tps, ctx.bounds.read_until)

    def describe(self) -> str:
        return "data_interval_end (+ allowed lateness)"


@dataclass(frozen=True)
class Specified:
    offsets: dict[str, int]  # "topic:partition" → offset
    default: Position = field(default_factory=Earliest)  # for partitions not listed

    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        listed = {tp: self.offsets[tp.key] for tp in tps if tp.key in self.offsets}
        rest = [tp for tp in tps if tp not in listed]
        return {**self.default.resolve(rest, ctx), **listed}

    def describe(self) -> str:
        return "offsets " + ", ".join(f"{k}@{v}" for k, v in sorted(self.offsets.items()))


@dataclass(frozen=True)
class Committed:
    """The pipeline's own checkpoint; partitions without one start from ``fallback``."""

    fallback: Position = field(default_factory=Earliest)

    def resolve(self, tps: list[TopicPartition], ctx: PlanContext) -> Offsets:
        saved = ctx.checkpoint or {}
        known = {tp: saved[tp.key] for tp in tps if tp.key in saved}
        rest = [tp for tp in tps if tp not in known]
        return {**self.fallback.resolve(rest, ctx), **known}

    def describe(self) -> str:
        return f"committed (else {self.fallback.describe()})"


def parse_position(value: Any, *, stop: bool = False) -> Position:
    """A start/stop spec as written in YAML → an initializer (ValueError with the reason)."""
    allowed = "latest, offsets, timestamp, data_interval_end" if stop else \
        "earliest, latest, committed, offsets, timestamp, data_interval_start"
    if isinstance(value, str):
        word = value.strip()
        if word == "earliest" and not stop:
            return Earliest()
        if word == "latest":
            return Latest()
        if word == "committed" and not stop:
            return Committed()
        if word in SYMBOLS:
            return Timestamp(word)
        raise ValueError(f"{value!r} is not one of: {allowed}")
    if isinstance(value, dict) and len(value) == 1:
        (kind, arg), = value.items()
        if kind == "timestamp":
            return Timestamp(arg if arg in SYMBOLS else parse_timestamp_ms(arg))
        if kind == "offsets":
            return Specified(_parse_offsets(arg))
        if kind == "committed" and not stop:
            fallback = parse_position(arg or "earliest")
            if isinstance(fallback, Committed):
                raise ValueError("the fallback of committed cannot be committed")
            return Committed(fallback)
    raise ValueError(f"{value!r} is not a position; use one of: {allowed} "
                     "(offsets and timestamp as {offsets: {topic:0: 42}} / {timestamp: ...})")


def _parse_offsets(arg: Any) -> dict[str, int]:
    from .admin import TopicPartition
    if not isinstance(arg, dict) or not arg:
        raise ValueError("offsets must map topic:partition to an offset, e.g. {orders:0: 42}")
    out: dict[str, int] = {}
    for key, offset in arg.items():
        tp = TopicPartition.parse(key)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset for {tp.key} must be a whole number >= 0, got {offset!r}")
        out[tp.key] = offset
    return out
