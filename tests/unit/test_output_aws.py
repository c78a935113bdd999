"""``output.aws``: parsed, recorded in the plan (no secret), and the output's storage made
with the credentials of the moment. Credentials are faked here (our own logic only);
tests/integration/test_output_role.py runs it against moto with IAM enforced."""
import json

import pytest

from streamslice.aws import AwsAuth, storage
from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.planning import plan as plan_module
from streamslice.planning.plan import OutputTarget, ReadPlan
from streamslice.sources import read_plan
from tests.support.checks import present

ROLE = "arn:aws:iam::123456789012:role/lake"
KAFKA = "mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"


def test_the_output_identity_is_parsed_and_planned_without_secrets():
    cfg = parse_pipeline(KAFKA + f"output:\n  path: s3://lake/x\n  aws: {{region: eu-west-1, "
                         f"role_arn: '{ROLE}', session_duration: 30m}}\n", default_name="p")
    target = cfg.output.target("p")
    assert target.aws.to_dict() == {"region": "eu-west-1", "role_arn": ROLE,
                                    "session_duration_s": 1800}
    assert target.auth == AwsAuth(region="eu-west-1", role_arn=ROLE, session_duration_s=1800)
    with pytest.raises(ConfigError, match=r"output.aws: is for an output on S3 or in a Glue"):
        parse_pipeline(KAFKA + f"output: {{path: /tmp/x, aws: {{role_arn: '{ROLE}'}}}}\n")
    with pytest.raises(ConfigError, match=r"output.aws.aws_secret_access_key: unknown key "
                                          r".*allowed here: endpoint_url"):
        parse_pipeline(KAFKA + "output: {path: s3://l/x, aws: {aws_secret_access_key: k}}\n")


def test_the_output_identity_is_a_record_in_the_plan_and_its_json_keeps_its_shape():
    cfg = parse_pipeline(KAFKA + f"output:\n  path: s3://lake/x\n  aws: {{region: eu-west-1, "
                         f"role_arn: '{ROLE}', session_duration: 30m}}\n", default_name="p")

    def plan(output):
        return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=1,
                        splits=[], partition="batch=00000001", output=output)
    given, default = plan(cfg.output.target("p")), plan(OutputTarget("/d"))
    assert json.loads(given.to_json())["output"]["aws"] == {
        "region": "eu-west-1", "role_arn": ROLE, "session_duration_s": 1800}
    assert json.loads(default.to_json())["output"]["aws"] == {}
    assert read_plan(given.to_json()) == given and read_plan(default.to_json()) == default
    assert present(read_plan(given.to_json()).output).auth == AwsAuth(
        region="eu-west-1", role_arn=ROLE, session_duration_s=1800)
    assert present(read_plan(default.to_json()).output).auth is None


def test_a_version_2_plan_reaches_its_output_with_the_default_chain():
    old = {"version": 2, "output": {"dataset": "s3://lake/pipeline=p"}}
    output = plan_module.upgrade(old)["output"]
    assert isinstance(output, dict) and output["aws"] == {}


class Creds:
    def __init__(self, n):
        self.access_key, self.secret_key, self.token = f"AK{n}", f"SK{n}", f"T{n}"


def test_the_s3_file_system_is_made_again_when_the_credentials_are_renewed(monkeypatch):
    auth = AwsAuth(region="us-east-1", role_arn=ROLE)
    current = [Creds(1)]
    monkeypatch.setattr(storage, "frozen_credentials", lambda a: current[0])
    fs1, path = storage.filesystem("s3://lake/out/x", auth)
    assert path == "lake/out/x" and fs1.type_name == "s3"
    assert storage.filesystem("s3://lake/other", auth)[0] is fs1  # same credentials: kept
    current[0] = Creds(2)
    assert storage.filesystem("s3://lake/out/x", auth)[0] is not fs1
    # not S3, or no identity of its own: pyarrow finds its own, as without output.aws
    assert storage.filesystem("/tmp/x", auth)[0].type_name == "local"
    assert not storage.governs("s3://lake/x", AwsAuth()) and storage.governs("s3a://l/x", auth)


def test_table_libraries_get_the_credentials_of_the_moment(monkeypatch):
    auth = AwsAuth(region="eu-west-1", endpoint_url="http://127.0.0.1:9", role_arn=ROLE)
    monkeypatch.setattr(storage, "frozen_credentials", lambda a: Creds(7))
    assert storage.delta_storage_options("s3://lake/t", auth) == {
        "AWS_ACCESS_KEY_ID": "AK7", "AWS_SECRET_ACCESS_KEY": "SK7", "AWS_SESSION_TOKEN": "T7",
        "AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ALLOW_HTTP": "true"}
    assert storage.delta_storage_options("/tmp/t", auth) is None
    props = storage.iceberg_properties({"type": "sql", "s3.region": "us-east-2"}, auth)
    assert props["s3.session-token"] == "T7" and props["s3.region"] == "us-east-2"  # theirs win
    assert "botocore_session" not in props
    assert storage.iceberg_properties({"type": "sql"}, None) == {"type": "sql"}


def test_with_renewed_credentials_a_split_file_is_written_locally_then_uploaded(tmp_path):
    """An upload under way keeps the credentials it started with; so the sink writes the
    split's file here and copies it in at the end."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    from streamslice.reading.sink import ParquetSink
    from streamslice.reading.staging import Staging

    class Renewing(Staging):
        renews_credentials = True

    staging = Renewing(str(tmp_path / "staging"))
    schema = pa.schema([("n", pa.int64())])
    sink = ParquetSink(staging, 3, schema, "snappy")
    sink.write(pa.record_batch([pa.array([1, 2])], schema=schema))
    assert not str(sink._tmp).startswith(str(tmp_path))  # not in the staging area
    sink.commit()
    assert pafs.LocalFileSystem().get_file_info(sink._tmp).type == pafs.FileType.NotFound
    import pyarrow.parquet as pq
    assert pq.read_table(staging.data_file(3)).num_rows == 2
