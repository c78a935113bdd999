"""Interval bounds: how a run's data interval becomes a read range, and which records of that
range the run owns, with allowed lateness. One strategy, used by every source's planner.

Kafka's ``offsetsForTimes(T)`` returns the first offset whose timestamp is ``>= T``, so
``offset >= b(T)`` exactly when the partition's running maximum timestamp at that record has
reached ``T``. That turns "how far the stream had progressed when this record arrived" into
offset comparisons a reader can make on any sub-range, with no state carried between records.

For an interval ``[s, e)`` of width ``w`` and allowed lateness ``L`` (``L <= w``) a run reads
offsets ``[b(s), b(e+L))`` and keeps:

* on time: ``s <= ts < e``;
* late:    ``ts < s`` and ``offset < b(e)`` and (``offset >= b(s+L)`` or ``ts < s - w``):
  older records that arrived after their own interval's lateness had run out and while the
  stream was inside this interval;

everything else in the range belongs to a neighbouring interval, which keeps it. Every record
lands in exactly one interval of a contiguous, equal-width schedule.

Sources ordered by arrival time (Kinesis' ``ApproximateArrivalTimestamp``) have no late
records: they read from ``s`` until the first record that arrived at or after ``e``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import PlanError
from ..timeutil import INTERVAL_START

if TYPE_CHECKING:
    from .plan import Interval


@dataclass(frozen=True)
class IntervalBounds:
    interval: Interval

    @property
    def start(self) -> int:
        return self.interval.start

    @property
    def end(self) -> int:
        return self.interval.end

    @property
    def read_until(self) -> int:
        """Event-time sources read past the end by the lateness."""
        return self.interval.end + self.interval.allowed_lateness

    @property
    def late_from(self) -> int:
        return self.interval.start + self.interval.allowed_lateness

    @property
    def owned_until(self) -> int:
        return self.interval.end

    def time(self, symbol: str) -> int:
        """``data_interval_start`` / ``data_interval_end`` as epoch ms."""
        return self.start if symbol == INTERVAL_START else self.end

    def ownership(self) -> dict[str, int]:
        """The timestamps whose positions an event-time plan needs."""
        return {"late_from": self.late_from, "owned_until": self.owned_until}


def bounds_for(interval: Interval | None) -> IntervalBounds | None:
    return IntervalBounds(interval) if interval is not None else None


def resolve_time(at: int | str, bounds: IntervalBounds | None) -> int:
    """A timestamp spec (epoch ms or a data-interval symbol) as epoch ms."""
    if isinstance(at, str):
        if bounds is None:
            raise PlanError(f"{at} needs a data interval (a scheduled DAG run, or --at)")
        return bounds.time(at)
    return at


def classify(timestamps: pa.Array | list[int], offsets: pa.Array | list[int],
             interval: Interval, late_from: int, owned_until: int
             ) -> tuple[pa.Array, pa.Array]:
    """Masks (on_time, late) over arrays of record timestamps (ms) and offsets."""
    ts = timestamps if isinstance(timestamps, pa.Array) else pa.array(timestamps, pa.int64())
    off = offsets if isinstance(offsets, pa.Array) else pa.array(offsets, pa.int64())
    s, e = interval.start, interval.end
    on_time = pc.and_(pc.greater_equal(ts, s), pc.less(ts, e))
    arrived_late = pc.or_(pc.greater_equal(off, late_from), pc.less(ts, s - interval.width))
    late = pc.and_(pc.and_(pc.less(ts, s), pc.less(off, owned_until)), arrived_late)
    return on_time, late

