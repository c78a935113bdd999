"""Event time from a field, through Airflow's dag.test(), real Spark and a real broker: four
consecutive hourly runs read by broker time over their interval widened by the bounds
(``allowed_lateness: 10m``, ``allowed_earliness: 5m``) and publish exactly the records whose
``event_time`` falls in their hour; records outside the bounds (replayed old events, a clock
ahead) land with the run they arrived in, flagged; records without a usable time are dead
letters of that run. The union of the runs, and of a re-run of one hour, is exactly the
produced set, each record once."""
import json
import random
from collections import Counter

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from devtools.services import create_topic
from devtools.taxi import Trip, produce
from streamslice.commit.manifest import read_manifest
from tests.support.checks import present
from tests.support.connections import aws_connection
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc
from tests.support.wait import wait_until_clock

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
MIN = 60_000
HOUR = 60 * MIN

# (arrival minute, event minute or a bad value, hour expected, flag), in arrival order
CASES = [
    (5, 5, 0, None),
    (54, 60, 0, "early"),    # 1 minute beyond hour 1's earliness (it reads from 00:55)
    (59, 60, 1, None),       # on the boundary, arrived within the earliness
    (61, 59, 0, None),       # within hour 0's lateness
    (69, 59, 0, None),
    (70, 59, 1, "late"),     # at hour 0's lateness: too late, hour 1's
    (100, 10, 1, "late"),    # a producer replaying old events
    (130, 230, 2, "early"),  # a clock 100 minutes ahead
    (150, None, 2, "dead"),  # no event_time
    (160, "soon", 2, "dead"),  # not a number
    (179, 181, 3, None),     # arrived in hour 2, belongs to hour 3 (within earliness)
    (200, 200, 3, None),
]


def scenario(seed=3, bulk=300):
    """The cases above plus ``bulk`` records with event times up to 8 minutes either side of
    their arrival (skewed producer clocks, both ways), in arrival order."""
    rng = random.Random(seed)
    rows = [(a * MIN, None if t is None else t if isinstance(t, str) else t * MIN)
            for a, t, *_ in CASES]
    for _ in range(bulk):
        a = rng.randrange(4 * HOUR - 10 * MIN)
        rows.append((a, max(0, a + rng.randrange(-8 * MIN, 8 * MIN))))
    rows.sort(key=lambda r: r[0])
    return rows


def expected_hour(a, t):
    """Where the docs say a record lands (L = 10m, E = 5m, hourly)."""
    if t is None or isinstance(t, str):
        return a // HOUR, "dead"
    k = t // HOUR
    if k * HOUR - 5 * MIN <= a < (k + 1) * HOUR + 10 * MIN:  # the read range of its hour
        return k, None
    return a // HOUR, "late" if t < a // HOUR * HOUR else "early"


def test_consecutive_intervals_publish_each_record_once_by_its_field(broker, spark,
                                                                       airflow_db, tmp_path):
    topic = unique("evtime")
    create_topic(broker.bootstrap, topic, 1)
    rows = scenario()
    records = [Trip(b"k", json.dumps({"id": i, "event_time": t if t is None or isinstance(
        t, str) else T0 + t}).encode(), T0 + a) for i, (a, t) in enumerate(rows)]
    sent = produce(broker.bootstrap, topic, records)
    assert [ts for _, _, ts in sent] == [T0 + a for a, _ in rows]  # offset = index
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("evtime"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                         allowed_lateness="10m",
                         event_time={"field": "event_time", "allowed_earliness": "5m"},
                         kafka={"max_records_per_split": 40},  # sub-splits of one partition
                         format={"value": "json", "epoch_unit": "millis",
                                 "schema": {"id": "long", "event_time": "timestamp"}},
                         output=str(tmp_path))
    for hour in range(4):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    got = landed(cfg)
    assert Counter(o for o, _, _ in got) == Counter(range(len(rows))), "not exactly once"
    where = {o: (h, flag) for o, h, flag in got}
    for (a, t, hour, flag) in CASES:  # the named cases, as the docs describe them
        o = rows.index((a * MIN, None if t is None else t if isinstance(t, str) else t * MIN))
        assert where[o] == (hour, flag), (a, t)
    assert where == {o: expected_hour(a, t) for o, (a, t) in enumerate(rows)}
    for hour in range(4):
        m = present(read_manifest(cfg.output.dataset(cfg.name),
                                  f"interval=20240501T{hour:02d}0000Z"))
        mine = [f for h, f in where.values() if h == hour]
        assert (m["records"], m["late_records"], m["early_records"], m["dead_letters"]) == \
            (len(mine) - mine.count("dead"), mine.count("late"), mine.count("early"),
             mine.count("dead"))
    dead = pq.read_table(present(read_manifest(cfg.output.dataset(cfg.name),
                                               "interval=20240501T020000Z"))["dead_letter_uri"])
    assert sorted(dead.column("error").to_pylist()) == [
        "event_time: field 'event_time' is null or missing",
        'field \'event_time\': expected timestamp (ISO 8601 or epoch ms), got "soon"']

    # a re-run of hour 1 alone (a backfill of one interval) publishes the same records
    before = sorted(r for r in got if r[1] == 1)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 2))
    again = landed(cfg)
    assert sorted(r for r in again if r[1] == 1) == before
    assert Counter(o for o, _, _ in again) == Counter(range(len(rows)))


def landed(cfg):
    """[(offset, hour, flag)] over the published hours and their dead letters."""
    out = []
    dataset = cfg.output.dataset(cfg.name)
    for hour in range(4):
        partition = f"interval=20240501T{hour:02d}0000Z"
        t = ds.dataset(f"{dataset}/{partition}", format="parquet").to_table()
        for o, late, early in zip(t.column("offset").to_pylist(),
                                  t.column("is_late").to_pylist(),
                                  t.column("is_early").to_pylist()):
            assert not (late and early)
            out.append((o, hour, "late" if late else "early" if early else None))
        uri = present(read_manifest(dataset, partition))["dead_letter_uri"]
        if uri:
            out += [(o, hour, "dead") for o in pq.read_table(uri).column("offset").to_pylist()]
    return out


def test_kinesis_intervals_by_event_time(kinesis, spark, airflow_db, monkeypatch, tmp_path):  # noqa: C901 - a test: produce, derive the truth, run, compare
    """The same over a real Kinesis-compatible server, whose arrival times are its own: runs of
    4-second intervals read by arrival time widened by the bounds (1s each way); records whose
    ``event_time`` is up to 6s either side of their arrival. Every record whose interval ran
    lands where the rule says, once (its shard's progress, the highest arrival time so far,
    is the record's position)."""
    from datetime import datetime, timezone

    from tests.support.kinesis import all_records, create_stream, put
    aws_connection(monkeypatch, "test_aws", kinesis.endpoint)
    import time
    client = kinesis.client()
    stream = unique("evtime")
    create_stream(client, stream, 2)
    w, L, E = 4000, 1000, 1000
    start = (int(time.time()) // 4 + 1) * 4  # the next boundary (s)
    wait_until_clock(start)
    rng = random.Random(5)
    times: dict[int, int | None] = {}  # payload id → event time (ms) or None
    for second in range(3 * 4 + 2):  # past the last run's lateness
        payloads = []
        for _ in range(30):
            i = len(times)
            now = int(time.time() * 1000)
            skew = rng.choice([0, 0, 300, -300, 900, -900, 2500, -2500, 6000, -6000, None])
            times[i] = None if skew is None else now + skew
            payloads.append(json.dumps({"id": i, "event_time": times[i]}).encode())
        put(client, stream, payloads, key=lambda j: f"k-{second}-{j}")  # used at once
        wait_until_clock(start + second + 1)  # one wave of records a second
    truth = all_records(client, stream)  # (shard, seq) → arrival ms
    ids = {}
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        it = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                       ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            resp = client.get_records(ShardIterator=it)
            for r in resp["Records"]:
                ids[(shard["ShardId"], r["SequenceNumber"])] = json.loads(r["Data"])["id"]
            it = resp.get("NextShardIterator") if resp["Records"] else None
    assert len(ids) == len(times) == len(truth)

    def expected(key, progress):
        t, s0 = times[ids[key]], start * 1000
        home = (progress - s0) // w
        if t is None:
            return home, "dead"
        k = (t - s0) // w
        if s0 + k * w - E <= progress < s0 + (k + 1) * w + L:
            return k, None
        return home, "late" if t < s0 + home * w else "early"

    want = {}
    for shard in {s for s, _ in truth}:
        top = None
        for key in sorted((k for k in truth if k[0] == shard), key=lambda k: int(k[1])):
            top = truth[key] if top is None else max(top, truth[key])
            where = expected(key, top)
            if where[0] in (0, 1, 2):
                want[key] = where
    cfg = kinesis_pipeline_evt(stream, start, tmp_path)
    for k in range(3):
        run_dag(cfg, logical_date=datetime.fromtimestamp(start + (k + 1) * 4, tz=timezone.utc))
    got = landed_kinesis(cfg, start)
    assert Counter(key for key, _, _ in got) == Counter(list(want)), "not exactly once"
    where = {key: (k, flag) for key, k, flag in got}
    wrong = [(key, truth[key] - start * 1000, times[ids[key]], where[key], want[key])
             for key in want if where[key] != want[key]]
    assert not wrong, wrong[:10]
    assert {flag for _, flag in want.values()} >= {None, "late", "early", "dead"}
    run_dag(cfg, logical_date=datetime.fromtimestamp(start + 2 * 4, tz=timezone.utc))  # again
    assert sorted(landed_kinesis(cfg, start)) == sorted(got)


def kinesis_pipeline_evt(stream, start, tmp_path):
    from datetime import datetime, timezone

    from tests.support.pipelines import kinesis_pipeline
    return kinesis_pipeline(
        stream, name=unique("kin_evtime"), mode="interval", schedule="4s",
        start_date=datetime.fromtimestamp(start, tz=timezone.utc).isoformat(), retries=0,
        allowed_lateness="1s", event_time={"field": "event_time", "allowed_earliness": "1s"},
        kinesis={"conn_id": "test_aws", "polling": {"interval": "50ms"}},
        format={"value": "json", "schema": {"id": "long", "event_time": "long"}},
        output=str(tmp_path))


def landed_kinesis(cfg, start):
    from datetime import datetime, timezone
    out = []
    dataset = cfg.output.dataset(cfg.name)
    for k in range(3):
        begins = datetime.fromtimestamp(start + k * 4, tz=timezone.utc)
        partition = f"interval={begins.strftime('%Y%m%dT%H%M%SZ')}"
        t = ds.dataset(f"{dataset}/{partition}", format="parquet").to_table()
        for shard, seq, late, early in zip(*(t.column(c).to_pylist() for c in (
                "shardId", "sequenceNumber", "is_late", "is_early"))):
            out.append(((shard, seq), k, "late" if late else "early" if early else None))
        uri = present(read_manifest(dataset, partition))["dead_letter_uri"]
        if uri:
            dead = pq.read_table(uri)
            out += [((s, q), k, "dead") for s, q in zip(dead.column("shardId").to_pylist(),
                                                         dead.column("sequenceNumber")
                                                         .to_pylist())]
    return out
