"""The output reached through ``output.aws.role_arn``: S3 staging and publishing, Delta, and
Iceberg in a Glue catalog, against a moto_server that enforces IAM (its
``/moto-api/reset-auth``): the processes' own keys may only assume the role, the role may
use S3 and Glue. Whatever reaches the output with the keys rather than the role is refused,
so these runs pass only if every process (Spark's readers staging their files, the commit)
assumed it."""
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from devtools.services import MotoServer, create_topic
from devtools.taxi import produce, trips
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, unique

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"


class IamMoto(MotoServer):
    """moto, and the IAM user's keys and the role they may assume."""

    keys: dict[str, str]  # AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
    role: str  # the role's ARN


@pytest.fixture(scope="module")
def aws():
    """moto with a user whose keys may only assume ``lake-writer``, which may use S3 and
    Glue; then IAM is enforced."""
    moto = IamMoto().start()
    iam = moto.client("iam")
    iam.create_user(UserName="etl")
    key = iam.create_access_key(UserName="etl")["AccessKey"]
    iam.put_user_policy(UserName="etl", PolicyName="assume", PolicyDocument=_policy(
        "sts:AssumeRole"))
    role = iam.create_role(RoleName="lake-writer", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "sts:AssumeRole",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/etl"}}]}))["Role"]["Arn"]
    iam.put_role_policy(RoleName="lake-writer", PolicyName="lake",
                        PolicyDocument=_policy(["s3:*", "glue:*"]))
    moto.client("s3").create_bucket(Bucket="lake")
    urllib.request.urlopen(urllib.request.Request(
        f"{moto.endpoint}/moto-api/reset-auth", data=b"0", method="POST",
        headers={"Content-Type": "text/plain"}), timeout=10).read()
    moto.keys = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                 "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
    moto.role = role
    keys_only = _client(moto, "s3")
    with pytest.raises(Exception, match="AccessDenied"):  # the keys alone are refused
        keys_only.put_object(Bucket="lake", Key="probe", Body=b"x")
    yield moto
    moto.stop()


def _policy(actions):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": actions, "Resource": "*"}]})


def _client(moto, service):
    import boto3
    return boto3.client(service, endpoint_url=moto.endpoint, region_name="us-east-1",
                        aws_access_key_id=moto.keys["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=moto.keys["AWS_SECRET_ACCESS_KEY"])


def _auth(moto):
    from streamslice.aws import AwsAuth
    return AwsAuth(region="us-east-1", endpoint_url=moto.endpoint, role_arn=moto.role,
                   sts_endpoint_url=moto.endpoint, session_name="lake-test")


def _aws(moto):
    """The output's ``aws`` mapping: the role, assumed through moto's STS."""
    return {"region": "us-east-1", "endpoint_url": moto.endpoint, "role_arn": moto.role,
            "sts_endpoint_url": moto.endpoint}


def test_a_run_stages_and_publishes_on_s3_through_the_role(aws, broker, airflow_db,
                                                          monkeypatch):
    """plan → read (Spark on local[*], in a process whose environment has only the keys) →
    commit, all with the role."""
    from streamslice.aws.storage import filesystem
    from streamslice.commit.manifest import read_manifest
    topic = unique("role")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 120, seed=11))
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("role"), retries=0,
                         output={"path": "s3://lake/files", "aws": _aws(aws)})
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(aws.keys, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    out = subprocess.run([sys.executable, "-m", "devtools.dag_run", cfg.file], env=env,
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    _only_the_keys(aws, monkeypatch)
    auth = cfg.output.aws
    manifest = read_manifest(cfg.output.dataset(cfg.name), "batch=00000001", auth)
    assert manifest and manifest["records"] == len(sent)
    fs, path = filesystem(f"{cfg.output.dataset(cfg.name)}/batch=00000001", auth)
    files = [i.path for i in fs.get_file_info(pafs.FileSelector(path))
             if i.path.endswith(".parquet")]
    rows = sum(pq.read_metadata(f, filesystem=fs).num_rows for f in files)
    assert rows == len(sent)


@pytest.mark.parametrize("fmt", ["delta", "iceberg-glue"])
def test_table_commits_through_the_role(aws, fmt, tmp_path, monkeypatch):
    """Staging written and a table committed with the role: Delta through delta-rs's storage
    options, Iceberg through a Glue catalog (pyiceberg given the role's botocore session)
    and its S3 FileIO."""
    from streamslice.commit.protocol import publish_once, staging_for
    from streamslice.config import parse_pipeline
    from tests.unit.test_table_publishers import make_plan
    _only_the_keys(aws, monkeypatch)
    name = unique("t").replace("-", "_")
    output = ("  format: delta\n" if fmt == "delta" else
              f"  format: iceberg\n  table: lake_db.{name}\n  catalog: {{type: glue, "
              f"glue.endpoint: '{aws.endpoint}', warehouse: 's3://lake/warehouse'}}\n")
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}"
                         f"\noutput:\n  path: s3://lake/{name}\n{output}"
                         f"  aws: {json.dumps(_aws(aws))}\n", default_name=name)
    target = cfg.output.target(name)
    plan = make_plan(target)
    staging = staging_for(plan, "a1")
    _stage(plan, staging, [0, 1, 2])
    manifest = publish_once(plan, staging, run_id="r1", now_ms=0)
    assert manifest.records == 3
    if fmt == "delta":
        from deltalake import DeltaTable

        from streamslice.aws.storage import delta_storage_options
        table = DeltaTable(present(target.table), storage_options=delta_storage_options(
            present(target.table), target.auth))
        assert table.to_pyarrow_table().num_rows == 3
    else:
        from pyiceberg.catalog import load_catalog

        from streamslice.aws.storage import iceberg_properties
        catalog = load_catalog("g", **iceberg_properties(target.catalog, target.auth))
        assert catalog.load_table(present(target.table)).scan().to_arrow().num_rows == 3
        with pytest.raises(Exception, match="AccessDenied"):  # the keys alone: no Glue
            _client(aws, "glue").get_table(DatabaseName="lake_db", Name=name)


def _only_the_keys(aws, monkeypatch):
    """This process's default chain: the keys, and nothing else of AWS's."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in aws.keys.items():
        monkeypatch.setenv(key, value)


def _stage(plan, staging, offsets):
    from streamslice.commit.publishers.tables import table_schema
    from streamslice.reading.stats import SplitSummary
    schema = table_schema(plan)
    cols: dict[str, list[object]] = {f.name: [None] * len(offsets) for f in schema}
    cols.update(topic=["t"] * len(offsets), partition=[0] * len(offsets), offset=offsets,
                n=[o * 10 for o in offsets], streamslice_partition=[plan.partition] * len(offsets))
    staging.fs.create_dir(f"{staging.root}/data", recursive=True)
    pq.write_table(pa.table(cols, schema=schema), f"{staging.root}/data/part-0.parquet",
                   filesystem=staging.fs)
    staging.write_summary(0, SplitSummary(0, "t:0", 0, 3, records=len(offsets),
                                          reached_stop=True))
