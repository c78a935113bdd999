"""Schedules of unequal intervals (``@monthly``, a weekday cron): a run's neighbours are the
schedule's, not its own width away, so records late or early across a boundary are kept
exactly once over consecutive intervals, by timestamp and by an event-time field. Checked
over simulated partitions whose records arrive up to two intervals late, on the intervals
the pipeline's own schedule lays out."""
import bisect
import itertools
import random

import pyarrow as pa
import pytest

from streamslice.config.schedule import intervals_between
from streamslice.errors import ConfigError
from streamslice.planning.bounds import IntervalBounds, classify, classify_event_time
from streamslice.planning.plan import Interval
from tests.support.pipelines import parsed

DAY = 86_400_000
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z, a Monday
HOUR = 3_600_000
# kind → (schedule, span simulated, allowed lateness)
SCHEDULES = {"monthly": ("@monthly", 270 * DAY, 10 * DAY),
             "weekdays": ("0 9 * * 1-5", 30 * DAY, 6 * HOUR),
             "hours": ("0 8-17 * * *", 6 * DAY, HOUR // 2)}


def pipeline(schedule, lateness, event_time):
    extra = {"event_time": {"field": "t", "allowed_earliness": f"{lateness // 2000}s"}} \
        if event_time else {}
    return parsed("kafka", {"bootstrap_servers": "localhost:9092", "topics": ["t"]},
                  mode="interval", schedule=schedule, start_date="2024-01-01T00:00:00Z",
                  allowed_lateness=f"{lateness // 1000}s", **extra)


def log(seed, span, reach):
    """(Kafka timestamp, event time) in offset order: arrivals over ``span``, stamped up to
    ``reach`` before their arrival (a quarter of them), event times up to ``reach`` either
    side."""
    rng = random.Random(seed)
    out = []
    for a in sorted(T0 + rng.randrange(span) for _ in range(600)):
        ts = a - rng.randrange(reach) if rng.random() < 0.25 else a
        out.append((ts, a + rng.randrange(-reach, reach)))
    return out


def kept_by(records, intervals, event_time):
    """{offset: [interval index]} over one run of each interval, as the Kafka planner and
    reader run it over the whole log."""
    ts = [r[0] for r in records]
    top = list(itertools.accumulate(ts, max))  # the partition's progress at each offset

    def b(t):  # Kafka's offsetsForTimes: the first offset whose timestamp is >= t
        return bisect.bisect_left(top, t)
    got: dict[int, list[int]] = {}
    for i, iv in enumerate(intervals):
        bounds = IntervalBounds(iv)
        lo, hi = b(bounds.time("data_interval_start")), b(bounds.read_until)
        at = {name: b(ms) for name, ms in bounds.ownership().items()}
        offs = list(range(lo, max(lo, hi)))
        if event_time:
            m = classify_event_time(pa.array([records[o][1] for o in offs], pa.int64()),
                                    pa.array(offs, pa.int64()), iv, at)
            keep = [any(m[h][j].as_py() for h in m) for j in range(len(offs))]
        else:
            on, late = classify([ts[o] for o in offs], offs, iv, at["late_from"],
                                at["owned_until"])
            keep = [x or y for x, y in zip(on.to_pylist(), late.to_pylist())]
        for o, k in zip(offs, keep):
            if k:
                got.setdefault(o, []).append(i)
    return got


def check(kind, event_time, seed, equal_widths=False):
    schedule, span, lateness = SCHEDULES[kind]
    cfg = pipeline(schedule, lateness, event_time)
    ivs = intervals_between(cfg, T0, T0 + span)
    if equal_widths:  # the neighbours as before: one width away
        ivs = [Interval(iv.start, iv.end, iv.allowed_lateness, iv.event_time,
                        iv.allowed_earliness) for iv in ivs]
    shortest = min(iv.width for iv in ivs)
    records = log(seed, span - 2 * shortest, reach=2 * shortest)
    first = ivs[0].start  # records before the first interval belong to none of these
    want = {o for o, (ts, t) in enumerate(records) if min(ts, t) >= first + 2 * shortest}
    got = kept_by(records, ivs, event_time)
    return {o: len(got.get(o, [])) for o in want}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("event_time", [False, True], ids=["timestamp", "event_time"])
@pytest.mark.parametrize("kind", list(SCHEDULES))
def test_unequal_intervals_keep_every_record_once(kind, event_time, seed):
    counts = check(kind, event_time, seed)
    assert counts and set(counts.values()) == {1}


@pytest.mark.parametrize("kind", list(SCHEDULES))
def test_neighbours_one_width_away_lose_or_double_records(kind):
    """The rule before: the check above can fail."""
    bad = sum(n != 1 for s in range(6) for et in (False, True)
              for n in check(kind, et, s, equal_widths=True).values())
    assert bad > 0


def test_neighbours_come_from_the_schedule():
    cfg = pipeline("@monthly", HOUR, False)
    march = intervals_between(cfg, T0 + 60 * DAY, T0 + 61 * DAY)[0]  # 2024-03
    assert (march.previous_from, march.start, march.end, march.next_until) == (
        T0 + 31 * DAY, T0 + 60 * DAY, T0 + 91 * DAY, T0 + 121 * DAY)
    friday = intervals_between(pipeline("0 9 * * 1-5", 0, False),
                               T0 + 4 * DAY + 10 * HOUR, T0 + 5 * DAY)[0]
    assert friday.end - friday.start == 3 * DAY  # to Monday 09:00
    assert friday.previous_from == friday.start - DAY and friday.next_until == friday.end + DAY


def test_lateness_longer_than_the_shortest_interval_is_refused():
    with pytest.raises(ConfigError, match="shortest interval"):
        pipeline("@monthly", 29 * DAY, False)  # February 2025 has 28 days
    with pytest.raises(ConfigError, match="shortest interval"):
        pipeline("0 9 * * 1-5", 2 * DAY, False)  # Monday to Tuesday
    assert pipeline("@monthly", 28 * DAY, False).allowed_lateness == 28 * DAY
