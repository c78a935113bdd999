"""docker-compose.yml parses and provides every service, volume, connection and setting the
DAGs need (there is no Docker engine here, so this reads the file rather than running it)."""
import json
import re
from pathlib import Path

import pytest
import yaml

from streamslice.config import load_pipelines

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
AIRFLOW = ["airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
           "airflow-triggerer"]


def env(service):
    return {k: str(v) for k, v in (SERVICES[service].get("environment") or {}).items()}


def test_every_component_is_there():
    assert set(AIRFLOW + ["airflow-init", "postgres", "kafka", "kinesis", "kinesis-proxy",
                          "spark-master", "spark-worker"]) <= set(SERVICES)
    commands = {s: " ".join(SERVICES[s]["command"]) for s in AIRFLOW}
    assert commands["airflow-apiserver"].startswith("airflow api-server")
    assert commands["airflow-dag-processor"] == "airflow dag-processor"
    assert "airflow db migrate" in " ".join(SERVICES["airflow-init"]["command"])
    assert set(COMPOSE["volumes"]) == {"postgres", "kafka", "lake"}


@pytest.mark.parametrize("service", AIRFLOW)
def test_airflow_services_mount_the_repo_and_share_settings(service):
    mounts = SERVICES[service]["volumes"]
    for folder in ("dags", "plugins", "jobs"):
        assert f"./{folder}:/opt/streamslice/{folder}" in mounts
    assert "lake:/opt/streamslice/output" in mounts
    e = env(service)
    assert e["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert "@postgres:5432/" in e["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert e["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/streamslice/dags"
    assert e["AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME"] == "0.2"  # docs/performance.md
    assert e["STREAMSLICE_HOME"] == "/opt/streamslice"
    assert SERVICES[service]["depends_on"]["airflow-init"]["condition"] == \
        "service_completed_successfully"


def test_connections_cover_every_pipeline_and_point_at_services():
    e = env("airflow-scheduler")
    configs, errors = load_pipelines(ROOT / "dags" / "pipelines")
    assert not errors and configs
    for cfg in configs:
        conn_id = cfg.source.conn_id
        assert conn_id, f"{cfg.name} should use a connection so deployments can point it"
        conn = json.loads(e[f"AIRFLOW_CONN_{conn_id.upper()}"])
        if cfg.source.kind == "kafka":
            host, port = conn["extra"]["bootstrap.servers"].split(":")
            assert f"PLAINTEXT://{host}:{port}" in env("kafka")["KAFKA_ADVERTISED_LISTENERS"]
        else:
            url = conn["extra"]["endpoint_url"]
            host, port = re.match(r"http://([\w-]+):(\d+)$", url).groups()
            cmd = SERVICES[host]["command"]
            assert cmd[cmd.index("--listen-port") + 1] == port
            upstream = cmd[cmd.index("--upstream-port") + 1]
            assert env("kinesis")["KINESIS_MOCK_PLAIN_PORT"] == upstream
            assert any(s.startswith(f"{cfg.source.streams[0]}:")
                       for s in env("kinesis")["INITIALIZE_STREAMS"].split(","))


def test_registry_connections_point_at_the_compose_registry():
    e = env("airflow-scheduler")
    configs, _ = load_pipelines(ROOT / "dags" / "pipelines")
    registries = [c.decode.value.options["registry"] for c in configs
                  if "registry" in c.decode.value.options]
    assert registries
    for registry in registries:
        conn = json.loads(e[f"AIRFLOW_CONN_{registry['conn_id'].upper()}"])
        cmd = SERVICES[conn["host"]]["command"]
        assert cmd[cmd.index("--port") + 1] == str(conn["port"])
        assert cmd[:3] == ["python", "-m", "devtools.schema_registry"]


def test_spark_cluster_is_what_the_pipelines_submit_to(monkeypatch):
    e = env("airflow-scheduler")
    master = e["STREAMSLICE_SPARK_MASTER"]
    assert master == "spark://spark-master:7077"
    assert "--port 7077" in " ".join(SERVICES["spark-master"]["command"])
    assert master in " ".join(SERVICES["spark-worker"]["command"])
    assert "lake:/opt/streamslice/output" in SERVICES["spark-worker"]["volumes"]
    for key in ("STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_MASTER", "SPARK_REMOTE"):
        monkeypatch.setenv(key, e[key])
    configs, _ = load_pipelines(ROOT / "dags" / "pipelines")
    assert {(c.spark.kind, getattr(c.spark, "remote", None)) for c in configs} == \
        {("connect", "sc://spark-connect:15002")}


def test_pipelines_read_on_the_compose_spark_connect_server():
    connect = " ".join(SERVICES["spark-connect"]["command"])
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in connect
    assert "--master spark://spark-master:7077" in connect
    assert "spark.connect.grpc.binding.port=15002" in connect
    assert env("airflow-scheduler")["SPARK_REMOTE"] == "sc://spark-connect:15002"
    assert "lake:/opt/streamslice/output" in SERVICES["spark-connect"]["volumes"]


def test_the_image_installs_the_pinned_requirements():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.startswith("# ") and "FROM apache/airflow:3.3.2" in dockerfile
    assert "-r /opt/streamslice/requirements.txt" in dockerfile
    assert "-c /opt/streamslice/constraints.txt" in dockerfile
    assert "openjdk-17" in dockerfile
    assert SERVICES["airflow-scheduler"]["build"] == "."


def test_iceberg_pipelines_use_the_compose_postgres_catalog(monkeypatch):
    e = env("airflow-scheduler")
    uri = e["STREAMSLICE_ICEBERG_CATALOG_URI"]
    assert uri.startswith("postgresql+psycopg2://") and "@postgres:5432/" in uri
    monkeypatch.setenv("STREAMSLICE_ICEBERG_CATALOG_URI", uri)
    configs, errors = load_pipelines(ROOT / "dags" / "pipelines")
    iceberg = [c for c in configs if c.output.format == "iceberg"]
    assert not errors and iceberg
    assert all(c.output.target(c.name).catalog["uri"] == uri for c in iceberg)


def test_spark_processes_that_read_aws_sources_have_an_identity_of_their_own(monkeypatch):
    """The read tasks never send the Spark Connect server (or its executors) the AWS
    connection's keys, so the processes that read Kinesis need their own identity."""
    e = env("airflow-scheduler")
    for key in ("STREAMSLICE_SPARK_RUNNER", "SPARK_REMOTE"):
        monkeypatch.setenv(key, e[key])
    configs, _ = load_pipelines(ROOT / "dags" / "pipelines")
    aws = [c for c in configs if c.source.kind == "kinesis" and c.spark.kind == "connect"]
    assert aws
    for service in ("spark-connect", "spark-worker"):  # the driver, and the executors
        identity = env(service)
        assert identity.get("AWS_ACCESS_KEY_ID") and identity.get("AWS_SECRET_ACCESS_KEY"), \
            service
        assert identity.get("AWS_DEFAULT_REGION") == json.loads(
            e["AIRFLOW_CONN_STREAMSLICE_AWS"])["extra"]["region_name"]
