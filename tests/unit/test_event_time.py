"""Event time from a field: the assignment rule (``planning.bounds.classify_event_time``) keeps
every record in exactly one run of consecutive intervals, on time in the interval of its field
where that interval's read range holds it, else flagged late or early in the interval it
arrived in; a record without a usable time is a dead letter of that one run. Checked over
simulated partitions (Kafka offsets, with producers' clocks skewed both ways and old events
replayed) and shards (Kinesis arrival times), on and around every boundary; then the field's
parsing and the pipeline file's settings."""
import random

import pyarrow as pa
import pytest

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.planning.bounds import IntervalBounds, classify_event_time
from streamslice.planning.plan import Interval
from streamslice.reading.decode import Decoder
from streamslice.reading.event_time import EventTime

W = 3_600_000  # an hour
T0 = 1_714_521_600_000
ET = EventTime("event_time")


def interval(k, lateness, earliness):
    return Interval(T0 + k * W, T0 + (k + 1) * W, lateness, ET, earliness)


def kafka_run(records, iv):
    """One run over a partition as the Kafka planner and reader do it: ``records`` are
    ``(arrival timestamp, event time or None)`` in offset order; b(T) is offsetsForTimes(T),
    the first offset whose timestamp is >= T."""
    def b(t):
        return next((i for i, (a, _) in enumerate(records) if a >= t), len(records))
    bounds = IntervalBounds(iv)
    lo, hi = b(bounds.time("data_interval_start")), b(bounds.time("data_interval_end"))
    at = {name: b(ms) for name, ms in bounds.ownership().items()}
    offsets = pa.array(range(lo, hi), pa.int64())
    event = pa.array([records[i][1] for i in range(lo, hi)], pa.int64())
    return list(range(lo, hi)), classify_event_time(event, offsets, iv, at)


def kinesis_run(records, iv):
    """One run over a shard as the Kinesis reader does it: from the first record that arrived
    at or after the read start until the first at or after its end; positions are the
    shard's progress (the highest arrival time so far) and ``at`` the times themselves."""
    bounds = IntervalBounds(iv)
    start, stop = bounds.time("data_interval_start"), bounds.time("data_interval_end")
    lo = next((i for i, (a, _) in enumerate(records) if a >= start), len(records))
    hi = next((i for i, (a, _) in enumerate(records) if i >= lo and a >= stop), len(records))
    progress, top = [], None
    for a, _ in records[lo:hi]:
        top = a if top is None else max(top, a)
        progress.append(top)
    at = {"home_from": iv.start, "owned_until": iv.end,
          "late_from": iv.start + iv.allowed_lateness,
          "early_until": iv.end - iv.allowed_earliness}
    event = pa.array([t for _, t in records[lo:hi]], pa.int64())
    return list(range(lo, hi)), classify_event_time(event, pa.array(progress, pa.int64()),
                                                     iv, at)


def assign(records, lateness, earliness, run, intervals):
    """{record index: [(interval, how)]} over the runs of ``intervals``."""
    got: dict[int, list[tuple[int, str]]] = {}
    for k in intervals:
        iv = interval(k, lateness, earliness)
        idx, marks = run(records, iv)
        for j, i in enumerate(idx):
            hows = [h for h in ("on_time", "late", "early", "dead") if marks[h][j].as_py()]
            assert len(hows) <= 1, (i, k, hows)
            if hows:
                got.setdefault(i, []).append((k, hows[0]))
    return got


def in_bounds(records, i, lateness, earliness, run):
    """Whether the run of the record's own interval reads it."""
    t = records[i][1]
    k = (t - T0) // W
    return i in run(records, interval(k, lateness, earliness))[0]


def check_exactly_once(records, lateness, earliness, run):
    times = [x for a, t in records for x in (a, t) if x is not None]
    ks = range((min(times) - T0) // W - 2, (max(times) - T0) // W + 3)
    got = assign(records, lateness, earliness, run, ks)
    for i, (a, t) in enumerate(records):
        assert len(got.get(i, [])) == 1, (i, a - T0, t and t - T0, got.get(i))
        (k, how), = got[i]
        iv = interval(k, lateness, earliness)
        if t is None:
            assert how == "dead"
        elif iv.start <= t < iv.end:
            assert how == "on_time"
        else:  # flagged only when its own interval's run could not read it
            assert how == ("late" if t < iv.start else "early")
            assert not in_bounds(records, i, lateness, earliness, run)
        if t is not None and in_bounds(records, i, lateness, earliness, run):
            assert how == "on_time" and iv.start <= t < iv.end
    return got


EDGES = [T0 + k * W + d for k in range(-1, 4) for d in (-1, 0, 1)]


def simulated(seed, n=400, arrival_disorder=0):
    """Arrivals over 3 hours (in offset order; with CreateTime, ``arrival_disorder`` ms of
    producer clock skew), event times around them: on time, lagging (batched, replayed old
    events: up to 3 hours), ahead (a fast clock: up to 2 hours), exactly on boundaries, and
    missing."""
    rng = random.Random(seed)
    arrivals = sorted(T0 + rng.randrange(3 * W) for _ in range(n))
    arrivals[::25] = [rng.choice(EDGES) for _ in arrivals[::25]]
    arrivals.sort()
    out = []
    for a in arrivals:
        a += rng.randrange(-arrival_disorder, arrival_disorder + 1) if arrival_disorder else 0
        kind = rng.random()
        if kind < 0.45:
            t = a + rng.randrange(-60_000, 60_000)
        elif kind < 0.65:
            t = a - rng.randrange(3 * W)  # late: batched or replayed
        elif kind < 0.8:
            t = a + rng.randrange(2 * W)  # early: a clock ahead
        elif kind < 0.95:
            t = rng.choice(EDGES)
        else:
            t = None
        out.append((a, t))
    return out


@pytest.mark.parametrize("run", [kafka_run, kinesis_run], ids=["kafka", "kinesis"])
@pytest.mark.parametrize("lateness, earliness", [(0, 0), (600_000, 0), (0, 300_000),
                                                 (600_000, 300_000), (W, W)])
@pytest.mark.parametrize("seed", range(4))
def test_every_record_lands_exactly_once(run, lateness, earliness, seed):
    got = check_exactly_once(simulated(seed), lateness, earliness, run)
    hows = {how for (_, how), in got.values()}
    assert {"on_time", "dead"} <= hows


@pytest.mark.parametrize("lateness, earliness", [(0, 0), (600_000, 300_000)])
@pytest.mark.parametrize("seed", range(4))
def test_kafka_create_time_out_of_order_still_lands_exactly_once(lateness, earliness, seed):
    """CreateTime from producers whose clocks disagree: the partition's timestamps are out of
    order, which offsetsForTimes and the ownership by offsets take in their stride."""
    check_exactly_once(simulated(seed, arrival_disorder=900_000), lateness, earliness,
                       kafka_run)


def test_boundaries():
    """Arrival and event time on, just before and just after each bound (L = 10m, E = 5m)."""
    L, E = 600_000, 300_000
    s, e = T0 + W, T0 + 2 * W
    records = [
        (s - 1, s),          # arrived just before, time at the start: interval 1
        (s, s - 1),          # arrived at the start, time just before: interval 0 (lateness)
        (s + L - 1, s - 1),  # within interval 0's lateness: interval 0
        (s + L, s - 1),      # just past it: interval 1, flagged late
        (e - E - 1, e),      # before interval 2's early bound: interval 1, flagged early
        (e - E, e),          # at it: interval 2, on time
        (e - 1, e - 1),      # last ms: interval 1
        (e, e - W - W),      # two intervals old: interval 2, flagged late
        (e + 1, None),       # no time: dead letter of interval 2
    ]
    got = {i: v[0] for i, v in check_exactly_once(records, L, E, kafka_run).items()}
    assert got == {0: (1, "on_time"), 1: (0, "on_time"), 2: (0, "on_time"), 3: (1, "late"),
                   4: (1, "early"), 5: (2, "on_time"), 6: (1, "on_time"), 7: (2, "late"),
                   8: (2, "dead")}
    assert {i: v[0] for i, v in check_exactly_once(records, L, E, kinesis_run).items()} == got


def test_without_bounds_out_of_interval_records_stay_where_they_arrived():
    records = [(T0 + 10, T0 - 5), (T0 + 20, T0 + 30), (T0 + 30, T0 + W + 1)]
    got = {i: v[0] for i, v in check_exactly_once(records, 0, 0, kafka_run).items()}
    assert got == {0: (0, "late"), 1: (0, "on_time"), 2: (0, "early")}


def test_the_read_range_is_widened_by_the_bounds():
    iv = interval(1, 600_000, 300_000)
    b = IntervalBounds(iv)
    assert (b.time("data_interval_start"), b.time("data_interval_end")) == \
        (iv.start - 300_000, iv.end + 600_000)
    plain = IntervalBounds(Interval(iv.start, iv.end, 600_000))  # arrival time: as before
    assert (plain.time("data_interval_start"), plain.time("data_interval_end")) == \
        (iv.start, iv.end)
    assert plain.ownership() == {"late_from": iv.start + 600_000, "owned_until": iv.end}


# -- the field ------------------------------------------------------------------------------

SCHEMA = [("id", "string"), ("ms", "long"), ("secs", "double"), ("iso", "string"),
          ("ts", "timestamp"), ("day", "date"), ("meta", "struct<ns: long>"), ("n", "int")]


def extract(spec, *values, flatten=True):
    d = Decoder("json", schema=SCHEMA, flatten=flatten)
    cols, errors = d.decode_values(values)
    assert not errors
    ms, reasons = spec.extract(d, cols)
    return ms.to_pylist(), reasons


def test_a_field_of_each_kind_becomes_epoch_ms():
    row = (b'{"ms": 1714521600123, "secs": 1714521600.5, "iso": "2024-05-01T01:00:00.25+01:00",'
           b' "ts": "2024-05-01T00:00:01Z", "day": "2024-05-01", "meta": {"ns": -1}}')
    assert extract(EventTime("ms"), row)[0] == [1714521600123]
    assert extract(EventTime("secs", unit="s"), row)[0] == [1714521600500]
    assert extract(EventTime("iso"), row)[0] == [1714521600250]
    assert extract(EventTime("ts"), row)[0] == [1714521601000]
    assert extract(EventTime("day"), row)[0] == [1714521600000]
    assert extract(EventTime("meta.ns", unit="ns"), row)[0] == [-1]  # floored
    assert extract(EventTime("meta.ns", unit="ns"), row, flatten=False)[0] == [-1]
    fmt = EventTime("iso", format="dd/MM/yyyy HH:mm")
    assert extract(fmt, b'{"iso": "01/05/2024 00:30"}')[0] == [T0 + 1_800_000]


def test_a_record_without_a_usable_time_says_why():
    ms, reasons = extract(EventTime("ms", unit="s"), b'{"id": "a"}', b'{"ms": null}',
                          b'{"ms": 99999999999999}', b'{"ms": 1714521600}')
    assert ms == [None, None, None, T0]
    assert reasons == {0: "event_time: field 'ms' is null or missing",
                       1: "event_time: field 'ms' is null or missing",
                       2: "event_time: field 'ms' is 99999999999999 s, beyond the years 1 "
                          "to 9999"}
    ms, reasons = extract(EventTime("iso"), b'{"iso": "yesterday"}')
    assert ms == [None] and reasons == {0: "event_time: field 'iso' is 'yesterday', not "
                                           "ISO-8601"}


@pytest.mark.parametrize("spec, message", [
    (EventTime("nope"), "event_time.field: 'nope': the record has no field 'nope'"),
    (EventTime("meta.x"), "event_time.field: 'meta.x': meta has no field 'x'"),
    (EventTime("meta"), "event_time.field: 'meta' is struct<ns: int64>; an event time is a "
                        "timestamp, a date, a number (with its unit) or a string"),
    (EventTime("ms", format="yyyy"), "event_time.format: 'ms' is int64, not a string"),
])
def test_a_field_that_cannot_hold_a_time_is_refused_at_plan_time(spec, message):
    with pytest.raises(ConfigError) as info:
        spec.field_type(Decoder("json", schema=SCHEMA))
    assert str(info.value) == message


def test_a_format_without_fields_is_refused():
    with pytest.raises(ConfigError, match="needs a record format with fields .*format.value "
                                          "is raw"):
        EventTime("ts").field_type(Decoder("raw"))


# -- the pipeline file ----------------------------------------------------------------------

FILE = """\
mode: interval
schedule: '@hourly'
start_date: '2024-05-01T00:00:00Z'
allowed_lateness: 10m
event_time:
  field: event_time
  allowed_earliness: 5m
kafka:
  bootstrap_servers: 127.0.0.1:9092
  topics: [orders]
format: {value: json, schema: {event_time: long}}
"""


def parse(text):
    return parse_pipeline(text, file="p.yaml", default_name="p")


def test_the_setting_reaches_each_run_interval():
    cfg = parse(FILE)
    assert cfg.event_time == EventTime("event_time") and cfg.allowed_earliness == 300_000
    iv = cfg.interval(T0, T0 + W)
    assert (iv.event_time, iv.allowed_lateness, iv.allowed_earliness) == (ET, 600_000, 300_000)
    plain = parse(FILE.replace("event_time:\n  field: event_time\n  allowed_earliness: 5m\n",
                               ""))
    assert plain.event_time is None and plain.interval(T0, T0 + W) == \
        Interval(T0, T0 + W, 600_000, previous_start=T0 - W, next_end=T0 + 2 * W)


@pytest.mark.parametrize("change, message", [
    (("allowed_earliness: 5m", "allowed_earliness: 2h"),
     "p.yaml:7: event_time.allowed_earliness: 7200s is longer than the schedule's shortest "
     "interval (3600s); earliness may be at most one interval"),
    (("field: event_time", "field: 'a..b'"),
     "p.yaml:6: event_time.field: 'a..b' is not a field path"),
    (("field: event_time", "field: event_time\n  unit: hours"),
     "p.yaml:7: event_time.unit: 'hours' is not one of: s, ms, us, ns"),
    (("field: event_time", "field: event_time\n  format: 'yyyy-MM-dd q'"),
     "event_time.format: 'yyyy-MM-dd q' is not a Java date pattern"),
    (("field: event_time", "field: event_time\n  colour: red"),
     "p.yaml:7: event_time.colour: unknown key 'colour'"),
    (("mode: interval", "mode: incremental"), "event_time: only applies to mode interval"),
])
def test_bad_settings_are_refused_by_name(change, message):
    text = FILE.replace(*change)
    if "incremental" in text:
        text = text.replace("allowed_lateness: 10m\n", "").replace("schedule: '@hourly'\n", "")
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert message in str(info.value)


def test_a_version_5_plan_owns_by_arrival_as_it_did():
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import OutputTarget, ReadPlan
    from streamslice.sources import read_plan
    plan = ReadPlan(pipeline="p", source="kafka", mode="interval", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 9, late_from=3, owned_until=7)],
                    partition="interval=20240501T000000Z", output=OutputTarget("/d"),
                    interval=Interval(T0, T0 + W, 600_000))
    data = plan.to_dict()
    data["version"] = 5
    interval, splits = data["interval"], data["splits"]
    assert isinstance(interval, dict) and isinstance(splits, list)
    assert isinstance(splits[0], dict)
    for key in ("event_time", "allowed_earliness"):
        del interval[key]
    for key in ("home_from", "early_until"):
        del splits[0][key]
    assert read_plan(data) == plan
