"""Publishing to an object store (S3 API on a local moto_server): no directory rename there,
so files are copied into place with the manifest last, and a re-publish replaces them."""
import threading

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from streamslice.commit.manifest import plan_id, read_manifest
from streamslice.commit.protocol import publish_once, staging_for
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import OutputTarget, ReadPlan
from streamslice.reading.stats import SplitSummary
from tests.support.checks import present

pytestmark = pytest.mark.integration


def test_publish_to_s3_by_copy(sns_queue, monkeypatch):
    moto, _, _ = sns_queue
    for key, value in {"AWS_ENDPOINT_URL": moto.endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    moto.client("s3").create_bucket(Bucket="lake")
    dataset = "s3://lake/pipeline=p"
    for planned_at, attempt in enumerate(("a1", "a2")):  # a replan replaces the partition
        plan = ReadPlan(pipeline="p", source="kafka", mode="incremental",
                        planned_at=planned_at, splits=[KafkaSplit(0, "t", 0, 0, 3)],
                        partition="batch=00000001", output=OutputTarget(dataset))
        staging = staging_for(plan, attempt)
        table = pa.table({"topic": ["t"] * 3, "partition": pa.array([0] * 3, pa.int32()),
                          "offset": pa.array([0, 1, 2], pa.int64())})
        staging.fs.create_dir(f"{staging.root}/data")
        pq.write_table(table, f"{staging.root}/data/part-{attempt}.parquet",
                       filesystem=staging.fs)
        staging.write_summary(0, SplitSummary(0, "t:0", 0, 3, records=3, reached_stop=True))
        publish_once(plan, staging, run_id=attempt, now_ms=0)
    fs = pafs.FileSystem.from_uri(dataset)[0]
    names = sorted(i.base_name for i in fs.get_file_info(
        pafs.FileSelector("lake/pipeline=p/batch=00000001")))
    assert names == ["_manifest.json", f"part-{plan_id(plan)}-00000.parquet"]  # a1's is gone
    assert present(read_manifest(dataset, "batch=00000001"))["records"] == 3
    assert fs.get_file_info("lake/_streamslice/pipeline=p/staging/batch=00000001").type == \
        pafs.FileType.NotFound


def _s3(sns_queue, monkeypatch, bucket):
    moto, _, _ = sns_queue
    for key, value in {"AWS_ENDPOINT_URL": moto.endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    moto.client("s3").create_bucket(Bucket=bucket)


RECORDS = {0: 3, 1: 3}  # topic t: offsets 0..2 of partitions 0 and 1


def _plan(dataset, splits):
    """A plan of ``splits`` ((partition, start, stop) each), its id the split's place."""
    return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=len(splits),
                    splits=[KafkaSplit(i, "t", *s) for i, s in enumerate(splits)],
                    partition="batch=00000001", output=OutputTarget(dataset))


def _stage(plan, attempt):
    """The staging area the read job leaves: a split's records in ``part-<split>.parquet``
    (the direct write path's names), its summary beside."""
    staging = staging_for(plan, attempt)
    staging.fs.create_dir(f"{staging.root}/data")
    for s in plan.splits:
        offsets = list(range(s.start, s.stop))
        pq.write_table(pa.table({"topic": ["t"] * len(offsets),
                                 "partition": pa.array([s.partition] * len(offsets), pa.int32()),
                                 "offset": pa.array(offsets, pa.int64())}),
                       staging.data_file(s.id), filesystem=staging.fs)
        staging.write_summary(s.id, SplitSummary(s.id, f"t:{s.partition}", s.start, s.stop,
                                                 records=len(offsets), reached_stop=True))
    return staging


def _keys(tables):
    return [k for t in tables for k in zip(t.column("partition").to_pylist(),
                                            t.column("offset").to_pylist())]


def test_a_reader_never_sees_a_record_twice_during_publishes_and_replaces(sns_queue,
                                                                          monkeypatch):
    """A partition published again and again on S3, by the same plan (a retry) and by plans
    that split the same records differently (a cleared run planned again): a plain-Parquet
    reader polling the prefix never reads a record twice, and one that listed the files before
    a publish and reads them after it reads fewer records (an object gone), never one twice;
    after a re-publish of the same plan it still reads them all. The partition ends exact."""
    _s3(sns_queue, monkeypatch, "race")
    dataset = "s3://race/pipeline=p"
    folder = "race/pipeline=p/batch=00000001"
    whole = _plan(dataset, [(0, 0, 3), (1, 0, 3)])
    halves = _plan(dataset, [(0, 0, 2), (0, 2, 3), (1, 0, 3)])
    everything = sorted((p, o) for p, n in RECORDS.items() for o in range(n))
    fs = pafs.FileSystem.from_uri(dataset)[0]

    def files():
        return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(
            folder, recursive=True, allow_not_found=True)) if i.path.endswith(".parquet"))

    def read(path):
        try:
            return pq.read_table(path, filesystem=fs)
        except FileNotFoundError:  # replaced since it was listed: fewer records, not twice
            return None

    seen, done = [], threading.Event()

    def poll():  # a reader polling the dataset's prefix the whole time
        while not done.is_set():
            try:
                tables = [t for t in map(read, files()) if t is not None]
            except OSError:  # a listing cut short by a delete: tried again
                continue
            seen.append(_keys(tables))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        plans, stale = [whole, whole, halves, halves, whole, halves, whole], []
        for n, plan in enumerate(plans):
            listed = files()
            first = [read(p) for p in listed[:1]]  # read one file, then the publish
            publish_once(plan, _stage(plan, f"a{n}"), run_id=f"r{n}", now_ms=n)
            rest = [read(p) for p in listed[1:]]
            stale.append(_keys([t for t in first + rest if t is not None]))
    finally:
        done.set()
        poller.join()
    for n, got in enumerate(stale):
        assert len(got) == len(set(got)), f"publish {n}: a record read twice: {sorted(got)}"
        assert set(got) <= set(everything)
        if n and plans[n - 1] is plans[n]:  # the same plan's files replace its own
            assert sorted(got) == everything, n
    assert seen and all(len(keys) == len(set(keys)) for keys in seen), \
        [sorted(k) for k in seen if len(k) != len(set(k))][:3]
    assert sorted(_keys([pq.read_table(p, filesystem=fs) for p in files()])) == everything
    names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(folder)))
    assert names == ["_manifest.json", *(f"part-{plan_id(whole)}-{i:05d}.parquet"
                                         for i in range(2))]
    assert present(read_manifest(dataset, "batch=00000001"))["plan_id"] == plan_id(whole)
