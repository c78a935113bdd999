"""The direct write path (readers write each split's Parquet file, ``reading.sink``) against
Spark's own writer (``run_read(direct=False)``): the same plan read both ways stages the same
rows, the same Parquet schema, dead letters and summaries, read back by pyarrow, DuckDB and
Spark, and table publishers accept it. A split whose attempt fails or is killed mid-read leaves
no file that verification or a ``**/*.parquet`` glob counts; the retry stages it once."""
import json
import os
import signal
import subprocess
import sys

import duckdb
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from devtools.services import create_topic
from devtools.taxi import TRIP_SCHEMA, produce, trips
from streamslice.commit.protocol import publish_once
from streamslice.commit.verify import verify
from streamslice.errors import CommitError, StreamsliceError
from streamslice.planning.plan import Interval
from streamslice.planning.planner import plan_run
from streamslice.reading.staging import Staging
from streamslice.spark.datasource import DATA_SOURCES
from streamslice.spark.job import run_read
from tests.conftest import ROOT
from tests.support.checks import present
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def planned(broker, topic, tmp_path, mode, value_format=None, interval=None, fmt="parquet",
            split_size=100):
    cfg = kafka_pipeline(broker.bootstrap, topic, name="direct", folder=tmp_path, mode=mode,
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                         kafka={"max_records_per_split": split_size}, format=value_format,
                         output={"path": str(tmp_path / "lake"), "format": fmt})
    plan = plan_run(cfg.source, pipeline=cfg.name, mode=mode, decode=cfg.decode,
                    output=cfg.output.target(cfg.name), interval=interval, run_id="r1",
                    properties=cfg.source.client_properties())
    return plan, cfg.source.client_properties()


def files(staging, sub="data", suffix=".parquet"):
    selector = pafs.FileSelector(f"{staging.root}/{sub}", allow_not_found=True)
    return sorted(i.path for i in staging.fs.get_file_info(selector)
                  if i.base_name.endswith(suffix))


def parquet_schema(path):
    s = pq.ParquetFile(path).schema
    return [(c.path, c.physical_type, str(c.logical_type), c.max_definition_level,
             c.max_repetition_level) for c in (s.column(i) for i in range(len(s)))]


def json_trips(broker, tmp_path):
    """JSON values with a timestamp field, string keys, an interval (late records flagged,
    outside ones dropped) and a few values that do not decode (dead letters)."""
    topic = unique("direct")
    create_topic(broker.bootstrap, topic, 2)
    records = trips(T0, 3, 150, seed=21, late_share=0.2)  # the second hour is read
    half = next(i for i, r in enumerate(records) if r.timestamp >= T0 + HOUR + HOUR // 2)
    produce(broker.bootstrap, topic, records[:half], partitions=2)
    with producer(broker.bootstrap) as p:
        for i, value in enumerate([b"{not json", b'{"trip_id": 5, "event_time": "soon"}']):
            p.produce(topic, key=b"bad", value=value, partition=i, timestamp=T0 + HOUR + HOUR // 2)
    produce(broker.bootstrap, topic, records[half:], partitions=2)
    return planned(broker, topic, tmp_path, "interval",
                   {"value": "json", "key": "string", "schema": dict(TRIP_SCHEMA),
                    "epoch_unit": "millis"},
                   Interval(T0 + HOUR, T0 + 2 * HOUR, 0))


def raw_with_headers(broker, tmp_path, fmt):
    """Raw keys and values (some null), headers on some records, a table output (the
    partition column), more splits than partitions."""
    topic = unique("direct")
    create_topic(broker.bootstrap, topic, 2)
    with producer(broker.bootstrap) as p:
        for i in range(240):
            headers: list[tuple[str, str | bytes | None]] | None = \
                [("h", b"%d" % i), ("empty", None)] if i % 3 == 0 else None
            p.produce(topic, key=None if i % 5 == 0 else b"k%d" % i,
                      value=None if i % 7 == 0 else bytes(range(i % 256)) * 3, partition=i % 2,
                      timestamp=T0 + i, headers=headers)
    return planned(broker, topic, tmp_path, "incremental", fmt=fmt)


CASES = {"json-interval-files": json_trips,
         "raw-headers-iceberg": lambda b, t: raw_with_headers(b, t, "iceberg"),
         "raw-headers-delta": lambda b, t: raw_with_headers(b, t, "delta")}


@pytest.mark.parametrize("case", CASES)
def test_both_write_paths_stage_the_same_data(spark, broker, tmp_path, case):
    plan, props = CASES[case](broker, tmp_path)
    direct, sparks = (Staging(str(tmp_path / "staging" / name)) for name in ("direct", "spark"))
    run_read(spark, plan, direct.uri, properties=props)
    run_read(spark, plan, sparks.uri, properties=props, direct=False)

    names = {p.rsplit("/", 1)[1] for p in files(direct)}  # splits that kept records
    assert f"part-{plan.splits[0].id:05d}.parquet" in names
    assert names <= {f"part-{s.id:05d}.parquet" for s in plan.splits}
    assert files(direct, "_tmp", "") == []
    assert parquet_schema(files(direct)[0]) == parquet_schema(files(sparks)[0])
    assert direct.summaries() == sparks.summaries()
    figures = verify(plan, direct)
    assert figures == verify(plan, sparks) and figures.records > 0
    dead = [ds.dataset(files(s, "_dead_letter", ".dlq")).to_table().sort_by("offset").to_pylist()
            if files(s, "_dead_letter", ".dlq") else [] for s in (direct, sparks)]
    assert dead[0] == dead[1] and bool(dead[0]) == case.startswith("json")

    order = [("partition", "ascending"), ("offset", "ascending")]
    a, b = (ds.dataset(f"{s.root}/data", format="parquet").to_table().sort_by(order)
            for s in (direct, sparks))
    assert a.schema == b.schema and a.equals(b) and a.num_rows == figures.records
    if case.startswith("json"):
        assert str(a.schema.field("event_time").type) == "timestamp[us, tz=UTC]"
        assert 0 < sum(a.column("is_late").to_pylist())
    else:
        assert a.column("headers").to_pylist()[0] == [{"key": "h", "value": b"0"},
                                                      {"key": "empty", "value": None}]
        assert set(a.column("streamslice_partition").to_pylist()) == {"batch=00000001"}

    duck = [duckdb.sql(f"SELECT * FROM read_parquet('{s.root}/data/**/*.parquet') "
                       "ORDER BY partition, \"offset\"") for s in (direct, sparks)]
    assert duck[0].types == duck[1].types and duck[0].fetchall() == duck[1].fetchall()

    read = [spark.read.parquet(s.data_uri) for s in (direct, sparks)]
    assert read[0].schema == read[1].schema
    assert read[0].toArrow().sort_by(order).equals(read[1].toArrow().sort_by(order))

    if plan.output.publisher != "files":  # the table publisher takes the direct files
        manifest = publish_once(plan, direct, run_id="r1", now_ms=T0)
        assert manifest.records == a.num_rows
        if plan.output.publisher == "iceberg":
            from pyiceberg.catalog import load_catalog
            catalog = load_catalog("streamslice", **plan.output.catalog)
            assert catalog.load_table(plan.output.table).scan().to_arrow().num_rows == \
                a.num_rows
        else:
            from deltalake import DeltaTable
            assert DeltaTable(plan.output.table).to_pyarrow_table().num_rows == a.num_rows


def two_splits(broker, tmp_path):
    topic = unique("direct")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 400, seed=22), partitions=2)
    plan, props = planned(broker, topic, tmp_path, "incremental", split_size=1000)
    assert [s.id for s in plan.splits] == [0, 1]
    return plan, props, sent


def test_a_failed_split_leaves_no_file_and_the_retry_stages_it_once(spark, broker, tmp_path,
                                                                    monkeypatch):
    plan, props, sent = two_splits(broker, tmp_path)
    staging = Staging(str(tmp_path / "staging"))
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:split=1:after=1")
    with pytest.raises(StreamsliceError, match="injected fault"):
        run_read(spark, plan, staging.uri, properties=props)
    assert not any(p.endswith("part-00001.parquet") for p in files(staging))
    assert files(staging, "_tmp", "") == []  # the failed attempt removed what it wrote
    with pytest.raises(CommitError, match="split 1 .* left no summary"):
        verify(plan, staging)

    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    run_read(spark, plan, staging.uri, properties=props)  # the retry, in the same area
    assert verify(plan, staging).records == len(sent)
    assert [p.rsplit("/", 1)[1] for p in files(staging)] == ["part-00000.parquet",
                                                             "part-00001.parquet"]


def test_a_killed_read_leaves_no_partial_file_counted(spark, broker, tmp_path):
    """SIGKILL of the whole job (driver, JVM, Python workers) while split 1 is being
    written: its partial file stays under ``_tmp/``, where nothing reads; ``data/`` holds only
    whole files of finished splits."""
    plan, props, sent = two_splits(broker, tmp_path)
    staging = Staging(str(tmp_path / "staging"))
    (tmp_path / "plan.json").write_text(plan.to_json())
    (tmp_path / "props.json").write_text(json.dumps(props))
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}",
               STREAMSLICE_INJECT_FAULT="read:split=1:after=1:action=kill")
    out = subprocess.run([sys.executable, str(ROOT / "jobs" / "bounded_read.py"), "--plan",
                          str(tmp_path / "plan.json"), "--staging", staging.uri,
                          "--properties", str(tmp_path / "props.json")],
                         env=env, capture_output=True, text=True, timeout=600,
                         start_new_session=True)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    partial = {p.rsplit("/", 1)[1].split(".")[0] for p in files(staging, "_tmp", ".tmp")}
    assert "part-00001" in partial  # written into, never moved in
    assert partial <= {"part-00000", "part-00001"}  # (split 0 too, if it was not done)
    assert 1 not in staging.summaries()
    staged = files(staging)
    assert staged in ([], [staging.data_file(0)])  # split 0 in place, or not yet
    whole = sum(s.stop - s.start for s in plan.splits[:len(staged)])
    assert sum(pq.read_metadata(p).num_rows for p in staged) == whole
    glob = f"{staging.root}/data/**/*.parquet"
    counted = present(duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchone())[0] \
        if staged else 0
    assert counted == whole  # a glob sees whole files only
    with pytest.raises(CommitError, match="split 1 .* left no summary"):
        verify(plan, staging)

    run_read(spark, plan, staging.uri, properties=props)  # the retry, in the same area
    assert verify(plan, staging).records == len(sent)
    assert files(staging, "_tmp", "") == []


@pytest.mark.parametrize("splits", ["empty", "none"])
def test_an_empty_run_stages_the_schema_as_spark_does(spark, broker, tmp_path, splits):
    """Spark's writer leaves one file without rows (its first task's); so does the direct
    path, under the first split's name (or split 0's, for a plan without splits)."""
    topic = unique("direct")
    create_topic(broker.bootstrap, topic, 2)
    plan, props = planned(broker, topic, tmp_path, "incremental", fmt="iceberg")
    assert [(s.start, s.stop) for s in plan.splits] == [(0, 0), (0, 0)]
    if splits == "none":
        plan.splits = []
    direct, sparks = (Staging(str(tmp_path / "staging" / name)) for name in ("direct", "spark"))
    run_read(spark, plan, direct.uri, properties=props)
    run_read(spark, plan, sparks.uri, properties=props, direct=False)
    assert [p.rsplit("/", 1)[1] for p in files(direct)] == ["part-00000.parquet"]
    assert len(files(sparks)) == 1
    assert parquet_schema(files(direct)[0]) == parquet_schema(files(sparks)[0])
    assert pq.read_metadata(files(direct)[0]).num_rows == 0
    assert verify(plan, direct) == verify(plan, sparks)


def spark_tasks(spark, read):
    """How many Spark tasks ``read()`` ran (the jobs of a job group of its own)."""
    sc = spark.sparkContext
    group = unique("tasks")
    sc.setJobGroup(group, group)
    try:
        read()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    return sum(tracker.getStageInfo(stage).numTasks
               for job in tracker.getJobIdsForGroup(group)
               for stage in tracker.getJobInfo(job).stageIds)


def test_many_small_splits_share_tasks_and_stage_exactly_one_file_each(spark, broker,
                                                                       tmp_path):
    """Forty partitions, ten of them empty, a few records in each of the others: the read
    packs the splits into about a task per core (``planning.packing``), and stages exactly
    the records sent, in one file and one summary per split, as one task per split does."""
    topic = unique("packed")
    create_topic(broker.bootstrap, topic, 40)
    sent: dict[int, list[tuple[bytes, bytes, int]]] = {}
    with producer(broker.bootstrap) as p:
        for i in range(300):
            part = i % 30  # partitions 30-39 stay empty
            key, value = b"k%d" % i, json.dumps({"n": i}).encode()
            p.produce(topic, key=key, value=value, partition=part, timestamp=T0 + i)
            sent.setdefault(part, []).append((key, value, T0 + i))
    plan, props = planned(broker, topic, tmp_path, "incremental")
    assert len(plan.splits) == 40
    packed, single = (Staging(str(tmp_path / "staging" / name)) for name in ("packed", "one"))
    tasks = spark_tasks(spark, lambda: run_read(spark, plan, packed.uri, properties=props))
    assert spark_tasks(spark, lambda: run_read(spark, plan, single.uri, properties=props,
                                               pack=False)) == 40
    assert 1 <= tasks <= spark.sparkContext.defaultParallelism < 40
    # the input partitions Spark ran those tasks for: every split in exactly one of them
    kafka = next(cls for cls in DATA_SOURCES if cls.kind == "kafka")
    layout = kafka({"plan": plan.to_json(), "staging": packed.uri, "directWrite": "snappy",
                    "taskSlots": str(spark.sparkContext.defaultParallelism)}
                   ).reader(None).partitions()
    assert len(layout) == tasks
    read = [s["id"] for part in layout for _, s in part.value]  # (plan index, split)
    assert sorted(read) == [s.id for s in plan.splits] and len(set(read)) == 40

    with_records = [s.id for s in plan.splits if s.stop > s.start]
    assert len(with_records) == 30
    assert [p.rsplit("/", 1)[1] for p in files(packed)] == \
        [p.rsplit("/", 1)[1] for p in files(single)] == \
        [f"part-{i:05d}.parquet" for i in sorted({plan.splits[0].id, *with_records})]
    assert files(packed, "_tmp", "") == []
    assert packed.summaries() == single.summaries() and len(packed.summaries()) == 40
    assert verify(plan, packed) == verify(plan, single)

    order = [("partition", "ascending"), ("offset", "ascending")]
    got = ds.dataset(f"{packed.root}/data", format="parquet").to_table().sort_by(order)
    assert got.equals(ds.dataset(f"{single.root}/data", format="parquet").to_table()
                      .sort_by(order))
    rows: dict[int, list[tuple[bytes, bytes, int]]] = {}
    for r in got.select(["partition", "offset", "key", "value", "timestamp"]).to_pylist():
        rows.setdefault(r["partition"], []).append(
            (r["key"], r["value"], int(r["timestamp"].timestamp() * 1000)))
    assert rows == sent  # every record once, in offset order, empty partitions empty
    assert got.num_rows == 300
