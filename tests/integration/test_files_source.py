"""The files source end to end: a folder of JSON Lines files read through the real DAG factory,
Airflow (dag.test) and Spark, one incremental batch per run, each line exactly once; its
checkpoint in Airflow's asset state; a reset replays from a line; the Spark data source reads
the same folder. The third source: its own package and one line in sources.SOURCES."""
import json

import pyarrow.dataset as ds
import pytest

from streamslice.airflow.checkpoint_store import OfflineCheckpointStore, reset_checkpoint
from streamslice.commit.manifest import read_manifest
from tests.support.checks import present
from tests.support.pipelines import files_pipeline, run_dag

pytestmark = pytest.mark.integration


def lines(*records):
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def published(cfg, partition):
    table = ds.dataset(f"{cfg.output.dataset(cfg.name)}/{partition}", format="parquet") \
        .to_table().sort_by([("file", "ascending"), ("line", "ascending")])
    return [(r["file"], r["line"], r["n"], r["who"]) for r in table.to_pylist()]


def test_files_replay_lines_exactly_once_through_airflow_and_spark(spark, airflow_db, tmp_path):
    folder = tmp_path / "events"
    (folder / "2024-05-02").mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(lines({"n": 0, "who": "a"}, {"n": 1, "who": "b"})
                                     + b"not json\n" + b'{"n": 3, "who"')  # still being written
    (folder / "2024-05-02" / "b.jsonl").write_bytes(lines({"n": 10, "who": "c"}))
    (folder / "_tmp.jsonl").write_bytes(lines({"n": 99, "who": "hidden"}))
    (folder / "notes.txt").write_bytes(b"not matched\n")
    cfg = files_pipeline(folder, files={"pattern": "*.jsonl"}, retries=0,
                         format={"value": "json", "schema": {"n": "long", "who": "string"}},
                         output=tmp_path / "lake")

    run_dag(cfg)
    assert published(cfg, "batch=00000001") == [("2024-05-02/b.jsonl", 0, 10, "c"),
                                                 ("a.jsonl", 0, 0, "a"), ("a.jsonl", 1, 1, "b")]
    manifest = present(read_manifest(cfg.output.dataset(cfg.name), "batch=00000001"))
    assert (manifest["source"], manifest["records"], manifest["dead_letters"]) == \
        ("files", 3, 1)  # "not json" is line 2's dead letter, the half line is not read yet
    assert {s["key"]: (s["start"], s["stop"], s["lag"], s["lag_unit"])
            for s in manifest["splits"]} == {"a.jsonl": (0, 3, 3, "records"),
                                             "2024-05-02/b.jsonl": (0, 1, 1, "records")}
    store = OfflineCheckpointStore(f"streamslice/{cfg.name}")
    assert present(store.get()).positions == {"a.jsonl": 3, "2024-05-02/b.jsonl": 1}

    with open(folder / "a.jsonl", "ab") as f:  # the writer finishes its line and adds one
        f.write(b': "d"}\n' + lines({"n": 4, "who": "e"}))
    (folder / "c.jsonl").write_bytes(lines({"n": 20, "who": "f"}, {"n": 21, "who": "g"}))
    run_dag(cfg)
    assert published(cfg, "batch=00000002") == [("a.jsonl", 3, 3, "d"), ("a.jsonl", 4, 4, "e"),
                                                 ("c.jsonl", 0, 20, "f"), ("c.jsonl", 1, 21, "g")]
    checkpoint = present(store.get())
    assert (checkpoint.batch, checkpoint.positions) == \
        (2, {"a.jsonl": 5, "2024-05-02/b.jsonl": 1, "c.jsonl": 2})

    reset_checkpoint(cfg, {"offsets": {"a.jsonl": 4}})  # replay a.jsonl from line 4 only
    run_dag(cfg)
    assert published(cfg, "batch=00000003") == [
        ("2024-05-02/b.jsonl", 0, 10, "c"), ("a.jsonl", 4, 4, "e"),
        ("c.jsonl", 0, 20, "f"), ("c.jsonl", 1, 21, "g")]  # files the reset left out: line 0
    assert present(store.get()).positions == {"a.jsonl": 5, "2024-05-02/b.jsonl": 1, "c.jsonl": 2}

    df = spark.read.format("streamslice-files").option("pattern", "*.jsonl") \
        .option("valueFormat", "string").load(str(folder))
    assert sorted((r.file, r.line) for r in df.select("file", "line").collect()) == \
        [("2024-05-02/b.jsonl", 0)] + [("a.jsonl", i) for i in range(5)] + \
        [("c.jsonl", 0), ("c.jsonl", 1)]


def test_files_on_an_object_store_plan_and_read_the_same(sns_queue, monkeypatch):
    """The folder may be an S3 prefix (a local S3 API server here): the same splits, lines
    and checkpoint positions as on a file system."""
    from streamslice.planning.planner import plan_run
    from streamslice.reading.decode import Decoder
    from streamslice.sources import ReadRequest, read_plan, source_class
    from tests.support.pipelines import pipeline
    moto, _, _ = sns_queue
    for key, value in {"AWS_ENDPOINT_URL": moto.endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="replay")
    s3.put_object(Bucket="replay", Key="events/2024/a.jsonl", Body=b"l0\nl1\nl2")
    s3.put_object(Bucket="replay", Key="events/b.jsonl", Body=b"m0\n")
    s3.put_object(Bucket="replay", Key="events/_SUCCESS", Body=b"")
    cfg = pipeline("files", {"path": "s3://replay/events"}, output="/unused")
    plan = read_plan(plan_run(cfg.source, pipeline="p", mode="incremental").to_json())
    assert plan.next_positions == {"2024/a.jsonl": 2, "b.jsonl": 1}
    readers, got = source_class("files").readers(), {}
    for split in plan.splits:
        reader = readers.open_reader(split, ReadRequest(plan=plan, properties={},
                                                        decoder=Decoder("string")))
        got[split.key] = [(r["line"], r["value"]) for b in reader.batches() for r in b.to_pylist()]
    assert got == {"2024/a.jsonl": [(0, "l0"), (1, "l1")], "b.jsonl": [(0, "m0")]}
