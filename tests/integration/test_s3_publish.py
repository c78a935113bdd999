"""Publishing to an object store (S3 API on a local moto_server): no directory rename there,
so files are copied into place with the manifest last, and a re-publish replaces them."""
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from streamslice.commit.manifest import read_manifest
from streamslice.commit.protocol import publish_once, staging_for
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import OutputTarget, ReadPlan
from streamslice.reading.stats import SplitSummary

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
    assert names == ["_manifest.json", "part-a2.parquet"]
    assert read_manifest(dataset, "batch=00000001")["records"] == 3
    assert fs.get_file_info("lake/_streamslice/pipeline=p/staging/batch=00000001").type == \
        pafs.FileType.NotFound
