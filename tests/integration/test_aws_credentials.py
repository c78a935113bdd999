"""AWS credentials in every process that calls AWS: roles assumed through moto's STS
(moto_server) with credentials that refresh, and no secret in anything a run leaves behind.

The Kinesis server is kinesis-local behind the proxy; a second proxy started here refuses
temporary credentials a few seconds after their first use (``--session-lifetime``), as AWS
refuses them past their session's end."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.services import free_port, wait_for_port
from streamslice.errors import SourceError
from tests.support.connections import aws_connection, connection
from tests.support.kafka import producer
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, parsed, run_dag, unique

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
ROLE = "arn:aws:iam::123456789012:role/reader"
LIFETIME_S = 2.0


@pytest.fixture(scope="module")
def expiring_proxy(kinesis):
    """A Kinesis endpoint that refuses a session's keys LIFETIME_S after their first use."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devtools.kinesis_proxy", "--listen-port",
                             str(port), "--upstream-port", str(kinesis.port),
                             "--session-lifetime", str(LIFETIME_S)], cwd=str(ROOT))
    wait_for_port(port, what="expiring Kinesis proxy")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def moto(sns_queue):
    return sns_queue[0]


def _one_shard_split(kinesis, endpoint, records):
    from streamslice.sources import PlanRequest
    client = kinesis.client()
    stream = unique("roles")
    arn = create_stream(client, stream, 1)
    put(client, stream, [b"r%d" % i for i in range(records)])
    source = parsed("kinesis", {"stream": arn, "region": "us-east-1", "endpoint_url": endpoint},
                    output="/unused").source
    base = {"region": "us-east-1", "endpoint_url": kinesis.endpoint,
            "access_key_id": "test", "secret_access_key": "test"}
    plan = source.planner().plan(PlanRequest(mode="incremental", properties=base,
                                   now_ms=int(time.time() * 1000) + 1000))
    return plan.splits[0]


def _read(split, props):
    from streamslice.kinesis.polling import PollingSettings
    from streamslice.kinesis.reader import KinesisSplitReader
    settings = PollingSettings(max_records=10, interval_ms=150)  # ~30 calls, 4-5 s
    reader = KinesisSplitReader(split, properties=props, settings=settings)
    return sum(b.num_rows for b in reader.batches())


def test_a_read_longer_than_the_role_session_keeps_working(kinesis, expiring_proxy, moto):
    """With role_arn the reader's credentials are re-assumed before they expire: a read of
    ~30 GetRecords calls over 4+ seconds against a server that refuses each role session's
    keys 2 s after their first use (standing in for sessions that end mid-read) goes through.
    Sessions are 900 s, the STS minimum, which botocore renews within 15 minutes of their end,
    so here on every call. The same read with the role's credentials taken once (what copying
    credentials into a plan did) is refused mid-read."""
    from streamslice.aws import AwsAuth, frozen_credentials
    split = _one_shard_split(kinesis, expiring_proxy, 300)
    role = {"region": "us-east-1", "endpoint_url": expiring_proxy, "role_arn": ROLE,
            "session_name": "long-read", "sts_endpoint_url": moto.endpoint,
            "session_duration": 900, "access_key_id": "base", "secret_access_key": "base"}
    assert _read(split, role) == 300

    taken_once = frozen_credentials(AwsAuth.from_dict(role), {"access_key_id": "base",
                                                              "secret_access_key": "base"})
    assert taken_once.access_key.startswith("ASIA") and taken_once.token  # moto's session
    static = {"region": "us-east-1", "endpoint_url": expiring_proxy,
              "access_key_id": taken_once.access_key,
              "secret_access_key": taken_once.secret_key, "session_token": taken_once.token}
    with pytest.raises(SourceError, match="ExpiredTokenException"):
        _read(split, static)


SECRET_PASSWORD = "PLAIN-pa55-never-in-a-plan"
SECRET_KEY_ID = "AKIAQQQQSTATICKEY000"
SECRET_ACCESS = "StaticSecretAccessKeyNeverInAPlan0000000"
# What must never appear: the secrets above, and any temporary key or session token.
LEAKS = re.compile(re.escape(SECRET_PASSWORD) + "|" + re.escape(SECRET_KEY_ID) + "|"
                   + re.escape(SECRET_ACCESS) + r"|ASIA[A-Z0-9]{16}|FQoGZXIvYXdzE")


@pytest.fixture
def spark_options(monkeypatch):
    """Every option the read gives to Spark's DataFrameReader (a spy: the calls go on)."""
    from pyspark.sql.readwriter import DataFrameReader
    seen, original = [], DataFrameReader.option

    def option(self, key, value):
        seen.append(f"{key}={value}")
        return original(self, key, value)
    monkeypatch.setattr(DataFrameReader, "option", option)
    return seen


def _artifacts(run, out: Path, spark_options, captured) -> str:
    """Everything a run leaves that a person or a process could read: every task's XCom,
    every file under the output (manifests, staging, dead letters), the task logs and the
    options given to Spark."""
    parts = list(spark_options) + [captured]
    for ti in run.get_task_instances():
        parts.append(json.dumps(ti.xcom_pull(task_ids=ti.task_id), default=str))
    for path in out.rglob("*"):
        if path.is_file():
            parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def _check(run, out, spark_options, capfd, caplog):
    text = capfd.readouterr()
    blob = _artifacts(run, out, spark_options,
                      text.out + text.err + "\n".join(r.getMessage() for r in caplog.records))
    assert spark_options, "the spy saw no Spark options: the test would prove nothing"
    found = LEAKS.findall(blob)
    assert not found, f"secrets in the run's artifacts: {sorted(set(found))}"


def test_kafka_sasl_password_stays_out_of_every_artifact(broker, spark, airflow_db, tmp_path,
                                                         monkeypatch, spark_options, capfd,
                                                         caplog):
    """The connection's SASL/PLAIN password reaches the readers (librdkafka refuses PLAIN
    without one) through the private file, and nothing else."""
    from devtools.services import create_topic
    topic = unique("sasl")
    create_topic(broker.bootstrap, topic, 2)
    with producer(broker.bootstrap) as p:
        for i in range(50):
            p.produce(topic, b"v%d" % i, partition=i % 2)
    connection(monkeypatch, "sasl_kafka", "kafka", login="svc", password=SECRET_PASSWORD,
               extra={"bootstrap.servers": broker.bootstrap,
                      "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    cfg = kafka_pipeline(None, topic, name=unique("sasl"), retries=0, output=tmp_path,
                         kafka={"conn_id": "sasl_kafka", "start": "earliest",
                                "commit_offsets_to_group": False})
    run = run_dag(cfg)
    manifest = json.loads((Path(cfg.output.dataset(cfg.name)) / "batch=00000001"
                           / "_manifest.json").read_text())
    assert manifest["records"] == 50
    _check(run, tmp_path, spark_options, capfd, caplog)


@pytest.mark.parametrize("mode", ["static keys", "assumed role"])
def test_aws_keys_and_role_sessions_stay_out_of_every_artifact(
        mode, kinesis, moto, spark, airflow_db, tmp_path, monkeypatch, spark_options, capfd,
        caplog):
    """An AWS connection with static keys, and the same keys as the base of an assumed role
    (moto's STS): the readers sign with them (or with the role's session), and no key or
    session token is in any artifact."""
    extra: dict[str, object] = {}
    if mode == "assumed role":
        extra.update(role_arn=ROLE, assume_role_kwargs={"ExternalId": "ext-7"},
                     service_config={"sts": {"endpoint_url": moto.endpoint}})
    aws_connection(monkeypatch, "keys_aws", kinesis.endpoint, login=SECRET_KEY_ID,
                   password=SECRET_ACCESS, **extra)
    client = kinesis.client()
    stream = unique("keys")
    create_stream(client, stream, 2)
    put(client, stream, [b"k%d" % i for i in range(40)])
    cfg = kinesis_pipeline(stream, name=unique("keys"), retries=0, output=tmp_path,
                           kinesis={"conn_id": "keys_aws"})
    run = run_dag(cfg)
    manifest = json.loads((Path(cfg.output.dataset(cfg.name)) / "batch=00000001"
                           / "_manifest.json").read_text())
    assert manifest["records"] == 40
    if mode == "assumed role":
        assert any(o.startswith("aws.role_arn=" + ROLE) for o in spark_options)
    _check(run, tmp_path, spark_options, capfd, caplog)
