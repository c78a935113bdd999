"""Chaos: a run is SIGKILLed (its whole process group) at each phase — after planning, in the
middle of a read, before the publish, between setting the old partition aside and renaming
the new one in, right after renaming it in (the old one still in the trash), after the
publish, after the checkpoint — then recovered the two ways Airflow would: a retry of the same
run (same saved plan) or a new run. Afterwards the output read by pyarrow and by DuckDB's
``<output>/**/*.parquet`` glob of the whole output folder (the work area included) is the
source range exactly once, nothing but data is under the dataset, nothing a crash left is in
the work area, and the checkpoint is what was published.

Real broker over TCP, real process kills; the runs go through streamslice's planner, split
readers, commit protocol and files publisher (tests/chaos/run.py), without Airflow and Spark
around them."""
import json
import os
import signal
import subprocess
import sys

import duckdb
import pyarrow.dataset as ds
import pytest

from devtools.duck import connect
from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.conftest import ROOT
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
POINTS = ["plan", "read:split=1:after=1", "before_publish", "publish_swap", "publish_renamed",
          "after_publish", "after_checkpoint"]


class Pipeline:
    def __init__(self, broker, tmp_path, mode, fmt="parquet", output=None, env=None):
        self.mode, self.tmp, self.env = mode, tmp_path, env or {}
        self.output = output or str(tmp_path / "lake")
        self.topic = unique("chaos")
        create_topic(broker.bootstrap, self.topic, 2)
        self.sent = produce(broker.bootstrap, self.topic,
                            trips(T0, 1, 120, seed=5, late_share=0), partitions=2)
        schedule = {"schedule": "@hourly", "start_date": "2024-05-01T00:00:00Z"} \
            if mode == "interval" else {}
        self.file = kafka_pipeline(
            broker.bootstrap, self.topic, name="chaos", folder=tmp_path, mode=mode, **schedule,
            kafka={"max_records_per_split": 50},
            format={"value": "json", "schema": {"trip_id": "string", "fare_amount": "double"}},
            output={"path": self.output, "format": fmt}).file
        self.state = tmp_path / "state"
        self.state.mkdir()
        self.dataset = tmp_path / "lake" / "pipeline=chaos"

    def run(self, run_id, try_number=1, fault=None):
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}", **self.env)
        env.pop("STREAMSLICE_INJECT_FAULT", None)
        if fault:
            env["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
        args = [sys.executable, "-m", "tests.chaos.run", str(self.file), str(self.state),
                run_id, str(try_number)] + ([str(T0)] if self.mode == "interval" else [])
        return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300, start_new_session=True)

    def target(self):
        from streamslice.config import load_pipeline
        return load_pipeline(self.file).output.target("chaos")

    def checkpoint(self):
        with open(self.state / "checkpoint.json") as f:
            return json.load(f)


def killed(out):
    assert out.returncode == -signal.SIGKILL, (out.returncode, out.stderr[-2000:])


def succeeded(out):
    assert out.returncode == 0, out.stderr[-2000:]


TABLE_POINTS = ["read:split=1:after=1", "before_publish", "table_commit", "after_publish",
                "after_checkpoint"]


@pytest.mark.parametrize("recovery", ["retry", "new_run"])
@pytest.mark.parametrize("point", TABLE_POINTS)
@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_kill_a_table_commit_then_recover_exactly_once(broker, tmp_path, fmt, point, recovery):
    """The same for Iceberg and Delta tables, including a kill between placing the files and
    the table commit: the table holds the source range once, and every file it references
    exists (orphans a crash leaves are never referenced)."""
    p = Pipeline(broker, tmp_path, "interval", fmt)
    succeeded(p.run("first"))  # the interval exists: the victim replaces it
    killed(p.run("victim", fault=point))
    succeeded(p.run("victim", try_number=2) if recovery == "retry" else p.run("rescue"))
    expected = sorted((part, off) for part, off, _ in p.sent)
    target = p.target()
    con = connect()
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog
        table = load_catalog("streamslice", **target.catalog).load_table(target.table)
        rows = table.scan().to_arrow()
        files = [t.file.file_path for t in table.scan().plan_files()]
        scan = f"iceberg_scan('{table.metadata_location}')"
    else:
        from deltalake import DeltaTable
        dt = DeltaTable(target.table)
        rows = dt.to_pyarrow_table()
        files = dt.file_uris()
        scan = f"delta_scan('{target.table}')"
    got = sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist()))
    assert got == expected
    assert present(con.sql(f"SELECT count(*) FROM {scan}").fetchone())[0] == len(expected)
    assert all(os.path.exists(f.removeprefix("file://")) for f in files)
    assert p.checkpoint()["interval_end"] == T0 + 3_600_000


# Airflow retries a commit task alone, on the staging area its read task left
COMMIT_POINTS = ["before_publish", "publish_swap", "publish_renamed", "after_publish"]


@pytest.mark.parametrize("point, recovery", [
    *((point, recovery) for point in POINTS for recovery in ("retry", "new_run")),
    *((point, "commit_retry") for point in COMMIT_POINTS)])
@pytest.mark.parametrize("mode", ["incremental", "interval"])
def test_kill_then_recover_exactly_once(broker, tmp_path, mode, point, recovery):
    p = Pipeline(broker, tmp_path, mode)
    if point in ("publish_swap", "publish_renamed"):  # a swap needs the partition to exist
        if mode == "interval":
            succeeded(p.run("first"))
        else:  # published, but killed before the checkpoint: the next run replaces it
            killed(p.run("first", fault="after_publish"))
    killed(p.run("victim", fault=point))
    if recovery == "retry":
        succeeded(p.run("victim", try_number=2))
    elif recovery == "commit_retry":
        succeeded(p.run("victim", try_number="2:commit"))
    else:
        succeeded(p.run("rescue"))

    expected = sorted((part, off) for part, off, _ in p.sent)
    table = ds.dataset(p.dataset, format="parquet", partitioning="hive").to_table(
        columns=["partition", "offset"])
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert got == expected  # every record, once
    # the whole output folder, work area included: nothing there reads as data
    glob = f"{p.tmp / 'lake'}/**/*.parquet"
    seen = duckdb.sql(f"SELECT count(*), count(DISTINCT (partition, \"offset\")) "
                      f"FROM read_parquet('{glob}')").fetchone()
    assert seen == (len(expected), len(expected))
    leftovers = [str(path) for path in p.dataset.rglob("*") if path.name.startswith("_")
                 and path.name != "_manifest.json"]
    assert leftovers == []
    work = p.tmp / "lake" / "_streamslice" / "pipeline=chaos"
    assert [f for sub in ("trash", "staging") for f in (work / sub).rglob("*")
            if f.is_file()] == []  # nothing a crash left behind survives the recovery
    cp = p.checkpoint()
    if mode == "incremental":
        ends = {f"{p.topic}:{part}": 1 + max(o for q, o, _ in p.sent if q == part)
                for part in (0, 1)}
        assert cp["positions"] == ends
    else:
        assert cp["interval_end"] == T0 + 3_600_000


@pytest.mark.parametrize("recovery", ["retry", "new_run"])
@pytest.mark.parametrize("point", ["read:split=1:after=1", "publish_swap", "after_publish"])
def test_kill_an_event_time_run_in_a_hive_folder_then_recover_exactly_once(broker, tmp_path,
                                                                           point, recovery):
    """An interval owned by an ``event_time`` field (broker times up to 3 minutes either side
    of it, within the bounds) and landed in ``dt=…/hour=…``: killed and recovered, the folder
    holds every record once, the work area nothing."""
    import json as _json
    import random

    from devtools.taxi import Trip
    p = Pipeline(broker, tmp_path, "interval")
    rng = random.Random(9)
    events = sorted(T0 + rng.randrange(300_000, 3_300_000) for _ in range(120))
    records = sorted((Trip(b"k", _json.dumps({"trip_id": f"e{i}", "event_time": t}).encode(),
                           t + rng.randrange(-180_000, 180_000))
                      for i, t in enumerate(events)), key=lambda r: r.timestamp)
    topic = unique("chaos_evt")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, records, partitions=2)
    p.file = kafka_pipeline(
        broker.bootstrap, topic, name="chaos", folder=tmp_path, mode="interval",
        schedule="@hourly", start_date="2024-05-01T00:00:00Z", allowed_lateness="5m",
        event_time={"field": "event_time", "allowed_earliness": "5m"},
        kafka={"max_records_per_split": 50},
        format={"value": "json", "epoch_unit": "millis",
                "schema": {"trip_id": "string", "event_time": "timestamp"}},
        output={"path": p.output, "partition_path": "dt=%Y-%m-%d/hour=%H"}).file
    if point == "publish_swap":
        succeeded(p.run("first"))
    killed(p.run("victim", fault=point))
    succeeded(p.run("victim", try_number=2) if recovery == "retry" else p.run("rescue"))
    folder = p.dataset / "dt=2024-05-01" / "hour=00"
    table = ds.dataset(folder, format="parquet").to_table()
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert got == sorted((part, off) for part, off, _ in sent)
    assert not any(table.column("is_late").to_pylist() + table.column("is_early").to_pylist())
    assert [x.name for x in p.dataset.iterdir()] == ["dt=2024-05-01"]
    work = p.tmp / "lake" / "_streamslice" / "pipeline=chaos"
    assert [f for sub in ("trash", "staging") for f in (work / sub).rglob("*")
            if f.is_file()] == []
