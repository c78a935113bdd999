"""Intervals closed live by Airflow's own scheduler (the session's ``airflow_services``), in
real time, over a real broker and a Spark Connect server: a 30-second schedule, three busy
partitions written to all along, and a quiet one that receives, after each interval's run has
committed, a record stamped 3 seconds before that interval's end. A ledger of every record
the test produced (kept here, from the broker's delivery reports, apart from streamslice)
is judged against the published dataset with pyarrow: no record missing, none twice, each in
its own interval unless flagged late in a later one, and each quiet-partition record that
arrived after its interval's run flagged late."""
import threading
import time
from datetime import datetime, timezone

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from streamslice.timeutil import iso
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, unique
from tests.support.wait import wait_for, wait_until_clock

pytestmark = pytest.mark.integration
W = 30  # seconds an interval
INTERVALS = 5
QUIET = 3


class Ledger:
    """Every record produced: (partition, offset) → timestamp ms, from delivery reports."""

    def __init__(self):
        self.sent, self.errors, self.lock = {}, [], threading.Lock()

    def delivered(self, err, msg):
        with self.lock:
            if err is not None:
                self.errors.append(err)
            else:
                self.sent[(msg.partition(), msg.offset())] = msg.timestamp()[1]


def busy(bootstrap, topic, ledger, until_s, stop):
    """Records stamped now on partitions 0-2, about 15 a second, until ``until_s``."""
    with producer(bootstrap, **{"linger.ms": 5}) as p:
        i = 0
        while time.time() < until_s and not stop.is_set():
            p.produce(topic, value=b"x", partition=i % 3, on_delivery=ledger.delivered,
                      timestamp=int(time.time() * 1000))
            p.poll(0)
            i += 1
            time.sleep(0.2 / 3)


def committed(airflow, name, start_ms):
    """The run of the interval starting at ``start_ms`` once it succeeded; fails on a
    failed one."""
    runs = airflow.api("GET", f"/api/v2/dags/{name}/dagRuns?limit=100")["dag_runs"]
    for run in runs:
        if run["data_interval_start"][:19] == iso(start_ms)[:19]:
            assert run["state"] != "failed", run
            return run["state"] == "success"
    return False


@pytest.mark.timeout(1200)
def test_a_quiet_partition_loses_nothing_while_the_scheduler_closes_intervals_live(
        broker, airflow_services, spark_connect, tmp_path):
    airflow = airflow_services
    topic, name = unique("live"), unique("live")
    create_topic(broker.bootstrap, topic, 4)
    start = (int(time.time()) // W + 4) * W  # time for the DAG to be parsed first
    end = start + INTERVALS * W
    kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                   mode="interval", schedule=f"{W}s", catchup=True, retries=0,
                   start_date=iso(start * 1000), end_date=iso((end - W) * 1000),
                   max_active_runs=1, spark={"runner": "connect", "remote": spark_connect.remote},
                   output=tmp_path)
    airflow.wait_for_dag(name)
    airflow.airflow("dags", "unpause", name)
    ledger, stop = Ledger(), threading.Event()
    wait_until_clock(start)
    # the busy partitions stop in time for their last records to be delivered before the
    # last interval closes: a record of it arriving later would be late for a run never made
    writer = threading.Thread(target=busy, args=(broker.bootstrap, topic, ledger, end - 3, stop))
    writer.start()
    late = []
    try:
        with producer(broker.bootstrap) as p:
            p.produce(topic, value=b"first", partition=QUIET, on_delivery=ledger.delivered,
                      timestamp=(start + 1) * 1000)
            for k in range(INTERVALS - 1):
                close = (start + (k + 1) * W) * 1000
                wait_for(lambda c=close: committed(airflow, name, c - W * 1000), 300,
                         f"the run of interval {k} to commit", interval=1)
                if time.time() > end - 2:
                    break  # the last interval's run would not read it: none is planned after
                p.produce(topic, value=b"late", partition=QUIET, timestamp=close - 3000,
                          on_delivery=ledger.delivered)
                p.flush(30)
                late.append(close - 3000)
            wait_for(lambda: committed(airflow, name, (end - W) * 1000), 300,
                     "the last interval's run to commit", interval=1)
    finally:
        stop.set()
        writer.join()
    assert not ledger.errors and len(late) >= 2, (ledger.errors, late)

    table = ds.dataset(f"{tmp_path}/pipeline={name}", format="parquet",
                       partitioning="hive").to_table(
        columns=["partition", "offset", "is_late", "interval"])
    got = {}
    for p, o, is_late, interval in zip(*(table.column(c).to_pylist() for c in (
            "partition", "offset", "is_late", "interval"))):
        assert (p, o) not in got, f"record {p}:{o} published twice"
        start_ms = int(datetime.strptime(interval, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=timezone.utc).timestamp() * 1000)
        got[(p, o)] = (start_ms, is_late)
    missing = sorted(set(ledger.sent) - set(got))
    assert not missing, f"{len(missing)} records in no interval: {missing[:10]}"
    assert set(got) == set(ledger.sent)
    for key, ts in ledger.sent.items():
        own = start * 1000 + (ts - start * 1000) // (W * 1000) * W * 1000
        at, is_late = got[key]
        assert (at == own and not is_late) or (is_late and at > own), (key, ts, at, is_late)
    quiet_late = {k: got[k] for k, ts in ledger.sent.items() if k[0] == QUIET and ts in late}
    assert len(quiet_late) == len(late) and all(f for _, f in quiet_late.values()), quiet_late
    assert pc.sum(table.column("is_late")).as_py() >= len(late)
