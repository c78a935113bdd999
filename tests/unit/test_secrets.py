"""*No secret in a plan*: secret client properties reach local and spark-submit readers only
through a private file (0600 in a 0700 folder, removed after the read); a Spark Connect
server and EMR Serverless get none, and a read that needs a secret they cannot replace by
their own identity fails at once, saying so. The runners themselves are replaced by a
recorder here (what is tested is which properties each would be given; the real runs are in
tests/integration/test_aws_credentials.py and test_spark_submit.py)."""
import json
import os
import stat
from pathlib import Path

import pytest

from streamslice.airflow import runners
from streamslice.config import parse_pipeline
from streamslice.config.secrets import SECRETS_FILE, private_file, split_secrets, with_secrets
from streamslice.errors import ConfigError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan

# The plan a read is given, which the runner receives (the runners here are fakes or recorders).
PLAN: ReadPlan[KafkaSplit] = ReadPlan(pipeline="p", source="kafka", mode="incremental",
                                      planned_at=0, splits=[], partition="batch=00000001")

KAFKA = {"bootstrap.servers": "b:9096", "security.protocol": "SASL_SSL",
         "sasl.mechanism": "PLAIN", "sasl.username": "svc", "sasl.password": "s3cret"}
KINESIS = {"region": "eu-west-1", "access_key_id": "AKIAEXAMPLE",
           "secret_access_key": "wJalrEXAMPLE", "role_arn": "arn:aws:iam::123456789012:role/r"}


def config(source, runner):
    spark = {"local": "{}", "spark-submit": "{runner: spark-submit, master: 'spark://m:7077'}",
             "connect": "{runner: connect, remote: 'sc://s:15002'}",
             "emr-serverless": "{runner: emr-serverless, emr_serverless: {application_id: a, "
                               "execution_role_arn: r, code_uri: 's3://b/c'}}"}[runner]
    block = "kafka: {conn_id: k, topics: [t]}" if source == "kafka" else \
        "kinesis: {stream: s, conn_id: aws}"
    return parse_pipeline(f"mode: incremental\n{block}\nspark: {spark}\noutput: {{path: /x}}\n")


@pytest.fixture
def recorded(monkeypatch):
    """What ``_run`` (the runner) is handed, and the secrets file as it stood then."""
    calls = []

    def record(cfg, plan, staging, properties, options, path, started=None, ahead=()):
        content = Path(properties[SECRETS_FILE]).read_text() if SECRETS_FILE in properties \
            else None
        mode = stat.S_IMODE(os.stat(path).st_mode) if path else None
        folder = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) if path else None
        calls.append({"properties": properties, "path": path, "content": content,
                      "modes": (mode, folder)})
    monkeypatch.setattr(runners, "_run", record)
    return calls


@pytest.mark.parametrize("runner", ["local", "spark-submit"])
def test_local_and_submitted_readers_get_secrets_in_a_private_file_removed_after(recorded,
                                                                                  runner):
    runners.run_spark_read(config("kafka", runner), PLAN, "/staging", dict(KAFKA), {})
    (call,) = recorded
    public = {k: v for k, v in call["properties"].items() if k != SECRETS_FILE}
    assert public == {k: v for k, v in KAFKA.items() if k != "sasl.password"}
    assert json.loads(call["content"]) == {"sasl.password": "s3cret"}
    assert call["modes"] == (0o600, 0o700)
    assert not os.path.exists(call["path"]) and not os.path.exists(os.path.dirname(call["path"]))
    # an executor merges the file back in where it builds its client
    with private_file({"sasl.password": "s3cret"}) as path:
        assert with_secrets({**public, SECRETS_FILE: path}) == KAFKA


@pytest.mark.parametrize("runner, where", [
    ("connect", "the Spark Connect server"), ("emr-serverless", "EMR Serverless")])
def test_a_kafka_password_is_never_sent_to_a_runtime_with_its_own_identity(recorded, runner,
                                                                           where):
    with pytest.raises(ConfigError, match=rf"spark.runner: spark.runner {runner}: the read "
                                          rf"needs sasl.password from kafka.conn_id 'k', and "
                                          rf"secrets are never sent to {where}.*msk_iam"):
        runners.run_spark_read(config("kafka", runner), PLAN, "/staging", dict(KAFKA), {})
    assert recorded == []  # failed at once, before any read


@pytest.mark.parametrize("runner", ["connect", "emr-serverless"])
def test_static_aws_keys_stay_in_airflow_and_the_role_still_travels(recorded, runner):
    runners.run_spark_read(config("kinesis", runner), PLAN, "/staging", dict(KINESIS), {})
    (call,) = recorded
    assert call["properties"] == {"region": "eu-west-1",
                                  "role_arn": "arn:aws:iam::123456789012:role/r"}
    assert call["path"] is None


def test_no_secrets_means_no_file():
    with private_file({}) as path:
        assert path is None
    assert split_secrets({"bootstrap.servers": "b:1"}) == ({"bootstrap.servers": "b:1"}, {})
    with pytest.raises(ConfigError, match="private credentials file is not readable here"):
        with_secrets({SECRETS_FILE: "/nonexistent/secrets.json"})
