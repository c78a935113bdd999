"""A quiet partition at an interval's close, through Airflow's dag.test(), real Spark and a
real broker: the run of an interval ends at the tip of a partition that has no record at or
after its end yet, and a record stamped inside that interval arrives afterwards. The interval
was closed by the partition's progress, so the record lands in the next run that reads the
partition, flagged late: every record exactly once, in order and out of order, by the
records' timestamps and by an event-time field."""
import json
from collections import Counter

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
MIN = 60_000
HOUR = 60 * MIN
BUSY, QUIET = 0, 1


def send(bootstrap, topic, partition, *stamps):
    """One record per timestamp to ``partition``; the payload names it (its ``id`` is the
    timestamp, its ``event_time`` too); returns the stamps."""
    with producer(bootstrap) as p:
        for ts in stamps:
            value = json.dumps({"id": ts, "event_time": ts}).encode()
            p.produce(topic, value=value, partition=partition, timestamp=ts)
    return list(stamps)


def pipeline(bootstrap, topic, tmp_path, event_time):
    extra = {"event_time": {"field": "event_time"}} if event_time else {}
    return kafka_pipeline(bootstrap, topic, name=unique("quiet"), mode="interval",
                          schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                          allowed_lateness="5m", output=str(tmp_path), **extra,
                          format={"value": "json", "epoch_unit": "millis",
                                  "schema": {"id": "long", "event_time": "timestamp"}})


def landed(cfg, hours):
    """{(partition, id): [(hour, late)]} over the published hours."""
    out: dict = {}
    for hour in hours:
        part = f"{cfg.output.dataset(cfg.name)}/interval=20240501T{hour:02d}0000Z"
        t = ds.dataset(part, format="parquet").to_table()
        for p, i, late in zip(t.column("partition").to_pylist(), t.column("id").to_pylist(),
                              t.column("is_late").to_pylist()):
            out.setdefault((p, i), []).append((hour, late))
    return out


def busy_hours(bootstrap, topic, hours):
    """A record in the middle of each hour on the busy partition: its boundaries are data."""
    return send(bootstrap, topic, BUSY, *(T0 + h * HOUR + 30 * MIN for h in range(hours)))


@pytest.mark.parametrize("event_time", [False, True], ids=["timestamp", "event_time"])
def test_record_after_close_on_quiet_partition_lands_late_in_next_run(
        broker, spark, airflow_db, tmp_path, event_time):
    topic = unique("quiet")
    create_topic(broker.bootstrap, topic, 2)
    busy = busy_hours(broker.bootstrap, topic, 4)
    first = send(broker.bootstrap, topic, QUIET, T0 + 10 * MIN)
    cfg = pipeline(broker.bootstrap, topic, tmp_path, event_time)
    late = []
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
        # 3 s before the end of the hour just run, after its run closed it
        late += send(broker.bootstrap, topic, QUIET, T0 + (hour + 1) * HOUR - 3000)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 4))
    got = landed(cfg, range(4))
    want = {(BUSY, ts): [((ts - T0) // HOUR, False)] for ts in busy}
    want[(QUIET, first[0])] = [(0, False)]
    want.update({(QUIET, ts): [((ts - T0) // HOUR + 1, True)] for ts in late})
    assert got == want
    # After a checkpoint reset, and a record more on the quiet partition stamped in hour 1, a
    # re-run of hour 1 publishes what it did: its boundaries are the ones frozen before.
    from streamslice.airflow.checkpoint_store import reset_checkpoint
    reset_checkpoint(cfg, "earliest")
    send(broker.bootstrap, topic, QUIET, T0 + HOUR + 60_000)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 2))
    assert landed(cfg, range(4)) == want


def test_out_of_order_runs_keep_records_after_a_later_interval_closed(
        broker, spark, airflow_db, tmp_path):
    """Hour 1 runs before hour 0 while the quiet partition has nothing past 00:10; then a
    record of hour 0 and one of hour 1 arrive. Hour 1 is closed (it ran), so both land
    flagged late in hour 2, the first run to read the partition past its closing point."""
    topic = unique("quiet")
    create_topic(broker.bootstrap, topic, 2)
    busy = busy_hours(broker.bootstrap, topic, 4)
    first = send(broker.bootstrap, topic, QUIET, T0 + 10 * MIN)
    cfg = pipeline(broker.bootstrap, topic, tmp_path, event_time=False)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 2))  # hour 1
    after = send(broker.bootstrap, topic, QUIET, T0 + 59 * MIN, T0 + 90 * MIN)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 1))  # hour 0
    run_dag(cfg, logical_date=utc(2024, 5, 1, 3))  # hour 2
    got = landed(cfg, range(3))
    want = {(BUSY, ts): [((ts - T0) // HOUR, False)] for ts in busy[:3]}
    want[(QUIET, first[0])] = [(0, False)]
    want.update({(QUIET, ts): [(2, True)] for ts in after})
    assert got == want
    assert Counter(h for v in got.values() for h, _ in v) == {0: 2, 1: 1, 2: 3}
