"""Interval bounds: how a run's data interval becomes a read range, and which records of that
range the run owns, with allowed lateness. One strategy, used by every source's planner.

Kafka's ``offsetsForTimes(T)`` returns the first offset whose timestamp is ``>= T``, so
``offset >= b(T)`` exactly when the partition's running maximum timestamp at that record has
reached ``T``. That turns "how far the stream had progressed when this record arrived" into
offset comparisons a reader can make on any sub-range, with no state carried between records.

For an interval ``[s, e)`` whose schedule's previous interval starts at ``p`` and allowed
lateness ``L`` (at most the shortest interval) a run reads offsets ``[b(s), b(e+L))`` and
keeps:

* on time: ``s <= ts < e``;
* late:    ``ts < s`` and ``offset < b(e)`` and (``offset >= b(s+L)`` or ``ts < p``):
  older records that arrived after their own interval's lateness had run out and while the
  stream was inside this interval;

everything else in the range belongs to a neighbouring interval, which keeps it. Every record
lands in exactly one interval of a contiguous schedule, of equal widths or not (a month, a
weekday cron): ``p`` is the schedule's (``Interval.previous_from``), not ``s`` minus this
interval's width. ``b`` is one non-decreasing function per partition for every run: where a
partition had not reached a time yet, the tip a run found is frozen (``planning.progress``).

Sources ordered by arrival time (Kinesis' ``ApproximateArrivalTimestamp``) have no late
records: they read from ``s`` until the first record that arrived at or after ``e``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import PlanError
from ..timestamps import INTERVAL_START

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
    def read_from(self) -> int:
        """With an event-time field, reading starts early by the allowed earliness."""
        return self.interval.start - self.interval.allowed_earliness

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
        """``data_interval_start`` / ``data_interval_end`` as epoch ms: with an event-time
        field, the read range widened by its bounds."""
        if self.interval.event_time is not None:
            return self.read_from if symbol == INTERVAL_START else self.read_until
        return self.start if symbol == INTERVAL_START else self.end

    def ownership(self) -> dict[str, int]:
        """The timestamps whose positions an event-time plan needs."""
        owned = {"late_from": self.late_from, "owned_until": self.owned_until}
        if self.interval.event_time is not None:  # see classify_event_time
            owned.update(home_from=self.start,
                         early_until=self.end - self.interval.allowed_earliness)
        return owned


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
    arrived_late = pc.or_(pc.greater_equal(off, late_from), pc.less(ts, interval.previous_from))
    late = pc.and_(pc.and_(pc.less(ts, s), pc.less(off, owned_until)), arrived_late)
    return on_time, late



def classify_event_time(event_ms: pa.Array, positions: pa.Array, interval: Interval,
                        at: dict[str, int]) -> dict[str, pa.Array]:
    """Which records of a run's read range it publishes, by the event time in the record.

    ``positions`` are where records arrived, comparable with the positions in ``at``: Kafka
    offsets, with ``at`` the offsets b(T) of the times below (``offset >= b(T)`` exactly when
    the partition's progress had reached ``T``, see above); or arrival times themselves (a
    Kinesis shard), with ``at`` the times. For an interval ``[s, e)`` whose schedule's
    previous interval starts at ``p`` and next one ends at ``n``, lateness ``L`` and
    earliness ``E`` (each at most the shortest interval), a run reads ``[b(s-E), b(e+L))``
    and every record has one interval that *should* hold it, that of its event time ``t``,
    if that interval's read range holds the record, else its *home*: the interval it
    arrived in, ``[b(s), b(e))``, where it is published flagged late (``t`` before) or early
    (``t`` after). So a run keeps:

    * on time: ``s <= t < e`` (its read range holds the record: it read it);
    * late:    home and ``t < s`` and (``t < p`` or ``offset >= b(s+L)``): its own
      interval, the previous one at the nearest, stopped reading at ``b(s+L)``;
    * early:   home and ``t >= e`` and (``t >= n`` or ``offset < b(e-E)``): the next
      interval started reading at ``b(e-E)``;
    * dead:    home and no usable ``t`` (null ``event_ms``), a dead letter of this run only;

    everything else belongs to a neighbouring interval, which keeps it. Every record is kept
    by exactly one run of a contiguous schedule, of equal widths or not."""
    s, e = interval.start, interval.end
    previous_from, next_until = interval.previous_from, interval.next_until
    pos = positions
    home = pc.and_(pc.greater_equal(pos, at["home_from"]), pc.less(pos, at["owned_until"]))
    usable = pc.is_valid(event_ms)
    t = pc.fill_null(event_ms, 0)
    on_time = pc.and_(usable, pc.and_(pc.greater_equal(t, s), pc.less(t, e)))
    late = pc.and_(pc.and_(home, usable), pc.and_(
        pc.less(t, s), pc.or_(pc.less(t, previous_from),
                              pc.greater_equal(pos, at["late_from"]))))
    early = pc.and_(pc.and_(home, usable), pc.and_(
        pc.greater_equal(t, e), pc.or_(pc.greater_equal(t, next_until),
                                       pc.less(pos, at["early_until"]))))
    dead = pc.and_(home, pc.invert(usable))
    return {"on_time": on_time, "late": late, "early": early, "dead": dead}
