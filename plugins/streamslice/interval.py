"""Which records of a read range belong to an interval, with allowed lateness.

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
"""
import pyarrow as pa
import pyarrow.compute as pc



def boundary_times(interval):
    """The timestamps whose offsets a plan needs: read from/to, late-from, owned-until."""
    s, e, lat = interval.start, interval.end, interval.allowed_lateness
    return {"start": s, "stop": e + lat, "late_from": s + lat, "owned_until": e}


def classify(timestamps, offsets, interval, late_from, owned_until):
    """Masks (on_time, late) over arrays of record timestamps (ms) and offsets."""
    ts = pa.array(timestamps, pa.int64()) if not isinstance(timestamps, pa.Array) else timestamps
    off = pa.array(offsets, pa.int64()) if not isinstance(offsets, pa.Array) else offsets
    s, e = interval.start, interval.end
    on_time = pc.and_(pc.greater_equal(ts, s), pc.less(ts, e))
    arrived_late = pc.or_(pc.greater_equal(off, late_from), pc.less(ts, s - interval.width))
    late = pc.and_(pc.and_(pc.less(ts, s), pc.less(off, owned_until)), arrived_late)
    return on_time, late
