"""Intervals closed live by Airflow's own scheduler (the session's ``airflow_services``), in
real time, over a real broker and a Spark Connect server: a 30-second schedule, three busy
partitions written to all along, and a quiet one that receives, after each interval's run has
committed, a record stamped 3 seconds before that interval's end. A ledger of every record
the test produced (kept here, from the broker's delivery reports, apart from streamslice)
is judged against the published dataset with pyarrow: no record missing, none twice, each in
its own interval unless flagged late in a later one, and each quiet-partition record that
arrived after its interval's run flagged late."""
import functools
import json
import threading
import time
from datetime import datetime, timezone
from urllib.parse import quote

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from streamslice.timestamps import iso
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
            if run["state"] == "failed":
                path = f"/api/v2/dags/{name}/dagRuns/{quote(run['dag_run_id'], safe='')}"
                tis = airflow.api("GET", f"{path}/taskInstances")["task_instances"]
                raise AssertionError(f"{run['dag_run_id']} failed: " + ", ".join(
                    f"{ti['task_id']} {ti['state']} (try {ti['try_number']})" for ti in tis) +
                    f" ({airflow.home})")
            return run["state"] == "success"
    return False


def live_pipeline(airflow, broker, spark_connect, tmp_path, **settings):
    """A 4-partition topic and a 30-second interval pipeline over it, its first interval
    starting about two minutes from now (time for the DAG to be parsed first), its DAG
    parsed, still paused: (topic, name, start s, end s)."""
    topic, name = unique("live"), unique("live")
    create_topic(broker.bootstrap, topic, 4)
    start = (int(time.time()) // W + 4) * W
    end = start + INTERVALS * W
    kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                   mode="interval", schedule=f"{W}s", catchup=True,
                   start_date=iso(start * 1000), end_date=iso((end - W) * 1000),
                   max_active_runs=1, spark={"runner": "connect", "remote": spark_connect.remote},
                   output=tmp_path, **{"retries": 0, **settings})
    airflow.wait_for_dag(name)
    return topic, name, start, end


def run_live(airflow, broker, topic, name, start, end, after_commit=None):
    """Unpauses the DAG and, while the scheduler runs its intervals, writes the busy
    partitions and, once each interval's run has committed, the quiet partition's record
    stamped 3 s before that interval's end, then calls ``after_commit(k)``. Returns once the
    last interval's run has committed: (ledger, the late records' timestamps)."""
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
                wait_for(functools.partial(committed, airflow, name, close - W * 1000), 300,
                         f"the run of interval {k} to commit", interval=1)
                if time.time() <= end - 2:  # else the last interval's run would not read it
                    p.produce(topic, value=b"late", partition=QUIET, timestamp=close - 3000,
                              on_delivery=ledger.delivered)
                    p.flush(30)
                    late.append(close - 3000)
                if after_commit:
                    after_commit(k)
            wait_for(lambda: committed(airflow, name, (end - W) * 1000), 300,
                     "the last interval's run to commit", interval=1)
    finally:
        stop.set()
        writer.join()
    assert not ledger.errors and len(late) >= 2, (ledger.errors, late)
    return ledger, late


def judge(dataset, ledger, late, start):
    """Every record of the ledger published once: in its own interval, or flagged late in a
    later one; each late quiet-partition record flagged. Returns the published table."""
    table = ds.dataset(dataset, format="parquet", partitioning="hive").to_table(
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
    return table


@pytest.mark.timeout(1200)
def test_a_quiet_partition_loses_nothing_while_the_scheduler_closes_intervals_live(
        broker, airflow_services, spark_connect, tmp_path):
    topic, name, start, end = live_pipeline(airflow_services, broker, spark_connect, tmp_path)
    ledger, late = run_live(airflow_services, broker, topic, name, start, end)
    judge(f"{tmp_path}/pipeline={name}", ledger, late, start)


def run_of(airflow, name, start_ms, manual=False):
    """The scheduler's run of the interval starting at ``start_ms`` (``manual``: the manual
    one); its path in the REST API."""
    runs = airflow.api("GET", f"/api/v2/dags/{name}/dagRuns?limit=100")["dag_runs"]
    run = next(r for r in runs if r["data_interval_start"][:19] == iso(start_ms)[:19]
               and (r["run_type"] == "manual") == manual)
    return f"/api/v2/dags/{name}/dagRuns/{quote(run['dag_run_id'], safe='')}"


def tries(airflow, path, task_id):
    found = airflow.api("GET", f"{path}/taskInstances/{task_id}/tries")["task_instances"]
    return [t["state"] for t in sorted(found, key=lambda t: t["try_number"])]


def succeeded_after(airflow, path, since):
    """The run once it ended in success after ``since`` (its end date before a clear)."""
    run = airflow.api("GET", path, timeout=180)
    assert run["state"] != "failed", run
    return run["state"] == "success" and run["end_date"] != since and run


@pytest.mark.chaos
@pytest.mark.timeout(1200)
def test_a_clear_a_manual_re_run_and_killed_tasks_during_live_intervals_lose_nothing(
        broker, airflow_services, spark_connect, tmp_path):
    """The soak above, with what operators and crashes add while the scheduler runs the
    intervals: the first run's task (plan, read and commit in one, as on a Spark Connect
    server by default) is SIGKILLed once its plan is saved, then its read crashes in the
    middle (retries: 2, Airflow retries it each time); once the second interval has
    committed, the first interval's succeeded run is cleared through the REST API as the UI
    clears it, and the scheduler runs it again; once the third has, a manual run of the
    second interval is triggered with that exact data interval, as the page's backfill
    button triggers one. Each re-run publishes its interval again, the same records: the
    ledger is exact and every interval's manifest counts its rows."""
    airflow = airflow_services
    topic, name, start, end = live_pipeline(airflow, broker, spark_connect, tmp_path,
                                            retries=2, retry_delay="1s")
    airflow.faults.write_text("plan:action=kill_task\nread:after=1\n")
    reruns = {}

    def operator(k):
        if k == 1:  # clear the first interval's run, as the UI's Clear button does
            first = run_of(airflow, name, start * 1000)
            assert tries(airflow, first, "plan_read_commit") == ["failed", "failed", "success"]
            before = airflow.api("GET", first)["end_date"]
            airflow.api("POST", f"{first}/clear", {"dry_run": False}, timeout=180)
            reruns["clear"] = (first, before)
        if k == 2:  # a manual run of exactly the second interval
            s, e = iso((start + W) * 1000), iso((start + 2 * W) * 1000)
            run = airflow.api("POST", f"/api/v2/dags/{name}/dagRuns", {
                "logical_date": iso((start + W) * 1000 + 1), "data_interval_start": s,
                "data_interval_end": e}, timeout=180)
            reruns["manual"] = (f"/api/v2/dags/{name}/dagRuns/"
                                f"{quote(run['dag_run_id'], safe='')}", None)

    try:
        ledger, late = run_live(airflow, broker, topic, name, start, end, operator)
        assert set(reruns) == {"clear", "manual"}, reruns
        for what, (path, since) in reruns.items():
            wait_for(functools.partial(succeeded_after, airflow, path, since), 300,
                     f"the {what} run {path} to succeed", interval=1)
        assert airflow.faults.read_text() == ""  # both faults fired
    finally:
        airflow.faults.write_text("")
    dataset = f"{tmp_path}/pipeline={name}"
    table = judge(dataset, ledger, late, start)
    intervals = table.column("interval").to_pylist()
    assert len(set(intervals)) == INTERVALS
    for interval in sorted(set(intervals)):
        rows = table.filter(pc.equal(table.column("interval"), interval))
        with open(f"{dataset}/interval={interval}/_manifest.json") as f:
            manifest = json.load(f)
        assert manifest["records"] == rows.num_rows, (interval, manifest)
        flagged = pc.sum(rows.column("is_late")).as_py() or 0
        assert manifest["late_records"] == flagged, (interval, manifest)
