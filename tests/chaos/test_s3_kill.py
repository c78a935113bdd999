"""Chaos on an object store (S3 API on a local moto_server), where a partition cannot be
renamed into place: ``ObjectStoreCopy`` removes the old partition, copies the staged files in
and writes ``_manifest.json`` last. The run is SIGKILLed once the old partition is gone, with
the new one half copied, and after the publish, then recovered by a retry and by a new run.
Afterwards pyarrow and DuckDB's ``**/*.parquet`` glob over S3 read the source range exactly
once, no staging or trash object is left, and the checkpoint is what the manifest says was
published.

Real broker, real S3 API over HTTP, real process kills (tests/chaos/run.py drives the run)."""
import json

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from devtools.duck import connect
from devtools.services import MotoServer
from tests.chaos.test_kill import T0, Pipeline, killed, succeeded
from tests.support.pipelines import unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
BUCKET = "lake"


@pytest.fixture(scope="module")
def s3():
    moto = MotoServer().start()
    moto.client("s3").create_bucket(Bucket=BUCKET)
    yield moto
    moto.stop()


def s3_env(moto):
    return {"AWS_ENDPOINT_URL": moto.endpoint, "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


def objects(fs, prefix):
    """Every object under ``prefix`` (directory markers aside), as paths relative to it."""
    infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path[len(prefix) + 1:] for i in infos if i.type == pafs.FileType.File)


CASES = [("interval", "publish_copy", "new_run"), ("interval", "publish_copy:after=2", "retry"),
         ("interval", "after_publish", "retry"), ("incremental", "publish_copy:after=2", "new_run")]


@pytest.mark.parametrize(("mode", "point", "recovery"), CASES)
def test_kill_an_object_store_publish_then_recover_exactly_once(broker, s3, tmp_path, mode,
                                                                point, recovery):
    prefix = f"{BUCKET}/{unique('out')}"
    p = Pipeline(broker, tmp_path, mode, output=f"s3://{prefix}", env=s3_env(s3))
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="test",
                           secret_key="test", region="us-east-1", scheme="http")
    dataset, work = f"{prefix}/pipeline=chaos", f"{prefix}/_streamslice/pipeline=chaos"
    partition = "interval=20240501T000000Z" if mode == "interval" else "batch=00000001"
    first = []
    if mode == "interval":  # the interval exists: the victim replaces it
        succeeded(p.run("first"))
        first = objects(fs, dataset)
        assert len(first) > 3 and f"{partition}/_manifest.json" in first  # files to copy

    killed(p.run("victim", fault=point))
    crashed = objects(fs, dataset)
    if point == "publish_copy":  # the old partition is gone, nothing copied yet
        assert crashed == []
    elif point == "publish_copy:after=2":  # half copied, no manifest yet
        assert len(crashed) == 2 and all(f.endswith(".parquet") for f in crashed)

    succeeded(p.run("victim", try_number=2) if recovery == "retry" else p.run("rescue"))
    expected = sorted((part, off) for part, off, _ in p.sent)
    table = ds.dataset(dataset, filesystem=fs, format="parquet", partitioning="hive").to_table(
        columns=["partition", "offset"])
    assert sorted(zip(table.column("partition").to_pylist(),
                      table.column("offset").to_pylist())) == expected
    glob = f"s3://{dataset}/**/*.parquet"
    seen = connect(s3_endpoint=s3.endpoint).sql(
        f"SELECT count(*), count(DISTINCT (partition, \"offset\")) "
        f"FROM read_parquet('{glob}')").fetchone()
    assert seen == (len(expected), len(expected))
    after = objects(fs, dataset)
    assert [f for f in after if not f.startswith(f"{partition}/part-")] == \
        [f"{partition}/_manifest.json"]  # data files and their manifest, nothing else
    assert [f for f in objects(fs, work) if f.split("/")[0] in ("staging", "trash")] == []
    with fs.open_input_stream(f"{dataset}/{partition}/_manifest.json") as f:
        manifest = json.loads(f.read())
    assert manifest["records"] == len(expected)
    assert manifest["run_id"] == ("victim" if recovery == "retry" else "rescue")
    cp = p.checkpoint()  # the checkpoint is what the manifest says was published
    assert (cp["run_id"], cp["partition"]) == (manifest["run_id"], partition)
    if mode == "interval":
        assert cp["interval_end"] == manifest["interval"]["end"] == T0 + 3_600_000
    else:
        ends = {f"{p.topic}:{part}": 1 + max(o for q, o, _ in p.sent if q == part)
                for part in (0, 1)}
        assert cp["positions"] == ends
        published: dict[str, int] = {}
        for split in manifest["splits"]:
            published[split["key"]] = max(published.get(split["key"], 0), split["stop"])
        assert published == ends
