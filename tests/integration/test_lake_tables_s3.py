"""Iceberg and Delta tables on an object store (S3 API on a local moto_server): staging on
S3, one commit per run, a retry finds its commit, a replan replaces the partition; and a
reader scanning while intervals are replaced sees the old interval or the new one, never a
mix. delta-rs commits to S3 with conditional writes (it no longer uses a DynamoDB lock)."""
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamslice.commit.protocol import publish_once, staging_for
from streamslice.config import parse_pipeline
from streamslice.reading.stats import SplitSummary
from tests.unit.test_table_publishers import make_plan

pytestmark = pytest.mark.integration


@pytest.fixture
def s3(sns_queue, monkeypatch):
    moto, _, _ = sns_queue
    for key, value in {"AWS_ENDPOINT_URL": moto.endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(key, value)
    bucket = f"lake-{id(monkeypatch) % 100000}"
    moto.client("s3").create_bucket(Bucket=bucket)
    return moto, bucket


def target(fmt, moto, bucket, tmp_path):
    catalog = ""
    if fmt == "iceberg":
        catalog = (f"  catalog: {{type: sql, uri: 'sqlite:///{tmp_path}/catalog.db', "
                   f"warehouse: 's3://{bucket}/warehouse', s3.endpoint: '{moto.endpoint}', "
                   "s3.access-key-id: test, s3.secret-access-key: test, "
                   "s3.region: us-east-1}\n")
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output:\n  path: s3://{bucket}/out\n  format: {fmt}\n{catalog}",
                         default_name="p")
    return cfg.output.target("p")


def stage_s3(plan, rows, attempt):
    from streamslice.commit.publishers.tables import table_schema
    schema = table_schema(plan)
    st = staging_for(plan, attempt)
    st.fs.create_dir(f"{st.root}/data", recursive=True)
    cols: dict[str, list[object]] = {f.name: [None] * len(rows) for f in schema}
    cols.update(topic=["t"] * len(rows), partition=[0] * len(rows), offset=rows,
                n=[o * 10 for o in rows], streamslice_partition=[plan.partition] * len(rows))
    pq.write_table(pa.table(cols, schema=schema), f"{st.root}/data/part-0.parquet",
                   filesystem=st.fs)
    st.write_summary(0, SplitSummary(0, "t:0", 0, 3, records=len(rows), reached_stop=True))
    return st


def scan_count(output, fmt, moto):
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog
        return load_catalog("streamslice", **output.catalog).load_table(
            output.table).scan().to_arrow().num_rows
    from deltalake import DeltaTable
    return DeltaTable(output.table).to_pyarrow_table().num_rows


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_tables_on_s3_commit_once_and_readers_never_see_a_mix(s3, tmp_path, fmt):
    moto, bucket = s3
    output = target(fmt, moto, bucket, tmp_path)
    assert output.table.startswith(f"s3://{bucket}/") or fmt == "iceberg"
    plan = make_plan(output)
    first = publish_once(plan, stage_s3(plan, [0, 1, 2], "a1"), run_id="r1", now_ms=1)
    assert scan_count(output, fmt, moto) == 3
    again = publish_once(plan, staging_for(plan, "a1"), run_id="r1", now_ms=2)  # a retry
    assert again.plan_id == first.plan_id and scan_count(output, fmt, moto) == 3

    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(scan_count(output, fmt, moto))
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i, rows in enumerate(([0, 1], [0, 1, 2], [0])):  # replace the interval 3 times
            replan = make_plan(output, planned_at=10 + i)
            publish_once(replan, stage_s3(replan, rows, f"b{i}"), run_id=f"r{i + 2}",
                         now_ms=10 + i)
    finally:
        stop.set()
        thread.join(60)
    assert seen and set(seen) <= {1, 2, 3}  # whole intervals only: never 0, never a sum
    assert scan_count(output, fmt, moto) == 1
