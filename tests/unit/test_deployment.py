"""docker-compose.yml is a valid Compose file (the Compose specification's JSON schema, vendored
in tests/support/compose_spec/) in Airflow's own Celery layout, and provides every service,
volume, connection and setting the DAGs need; every file, folder, build context and command it
names exists in the project (there is no Docker engine here, so this reads the file rather
than running it)."""
import json
import re
from pathlib import Path

import pytest
import yaml

from streamslice.config import load_pipelines
from streamslice.kinesis.source import KinesisSource
from tests.support.checks import present

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
AIRFLOW = ["airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
           "airflow-triggerer", "airflow-worker"]


def env(service):
    return {k: str(v) for k, v in (SERVICES[service].get("environment") or {}).items()}


def test_every_component_is_there():
    assert set(AIRFLOW + ["airflow-init", "postgres", "redis", "kafka", "schema-registry",
                          "kinesis", "kinesis-proxy", "spark-master", "spark-worker",
                          "spark-connect"]) <= set(SERVICES)
    commands = {s: " ".join(SERVICES[s]["command"]) for s in AIRFLOW}
    assert commands["airflow-apiserver"].startswith("airflow api-server")
    assert commands["airflow-dag-processor"] == "airflow dag-processor"
    assert commands["airflow-worker"] == "airflow celery worker"
    assert SERVICES["airflow-worker"]["deploy"]["replicas"] >= 2
    assert "airflow db migrate" in " ".join(SERVICES["airflow-init"]["command"])
    assert set(COMPOSE["volumes"]) == {"postgres", "kafka", "lake"}


@pytest.mark.parametrize("service", AIRFLOW)
def test_airflow_services_mount_the_repo_and_share_settings(service):
    mounts = SERVICES[service]["volumes"]
    for folder in ("dags", "plugins", "jobs"):
        assert f"./{folder}:/opt/streamslice/{folder}" in mounts
    assert "lake:/opt/streamslice/output" in mounts
    e = env(service)
    assert e["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert "@postgres:5432/" in e["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert e["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://") and \
        "@redis:6379/" in e["AIRFLOW__CELERY__BROKER_URL"]
    assert e["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql://")
    assert SERVICES[service]["depends_on"]["redis"]["condition"] == "service_healthy"
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
            host, port = present(re.match(r"http://([\w-]+):(\d+)$", url)).groups()
            cmd = SERVICES[host]["command"]
            assert cmd[cmd.index("--listen-port") + 1] == port
            upstream = cmd[cmd.index("--upstream-port") + 1]
            assert env("kinesis")["KINESIS_MOCK_PLAIN_PORT"] == upstream
            assert isinstance(cfg.source, KinesisSource)
            assert any(s.startswith(f"{cfg.source.streams[0]}:")
                       for s in env("kinesis")["INITIALIZE_STREAMS"].split(","))


def test_registry_connections_point_at_confluents_schema_registry():
    """The registry is Confluent's own image (not the project's test server), keeping its
    schemas in the compose Kafka, on the port the connection names."""
    e = env("airflow-scheduler")
    configs, _ = load_pipelines(ROOT / "dags" / "pipelines")
    registries = [c.decode.value.options["registry"] for c in configs
                  if "registry" in c.decode.value.options]
    assert registries
    registry = SERVICES["schema-registry"]
    assert registry["image"].startswith("confluentinc/cp-schema-registry:")
    for options in registries:
        conn = json.loads(e[f"AIRFLOW_CONN_{options['conn_id'].upper()}"])
        assert conn["host"] == "schema-registry"
        assert env("schema-registry")["SCHEMA_REGISTRY_LISTENERS"].endswith(f":{conn['port']}")
    assert env("schema-registry")["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"] == \
        "PLAINTEXT://kafka:9092"


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


SPEC = ROOT / "tests" / "support" / "compose_spec" / "compose-spec.json"


def compose_errors(document):
    import jsonschema
    validator = jsonschema.Draft7Validator(json.loads(SPEC.read_text()))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(document)]


def test_the_file_is_valid_by_the_compose_specification():
    assert compose_errors(COMPOSE) == []
    broken = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    broken["services"]["airflow-worker"]["comand"] = ["airflow", "celery", "worker"]
    broken["volumes"]["lake"] = {"drive": "local"}
    assert len(compose_errors(broken)) == 2  # the schema is strict where Compose is


def test_every_local_file_and_build_context_exists():
    for name, service in SERVICES.items():
        build = service.get("build")
        if build is not None:
            context = ROOT / (build if isinstance(build, str) else build["context"])
            assert (context / "Dockerfile").is_file(), name
        else:  # an image from a registry: pinned to a version
            image = service["image"]
            assert ":" in image and not image.endswith(":latest"), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert not source.startswith(("/", "~")), f"{name}: a host path {volume}"
            if source.startswith("."):
                assert (ROOT / source).exists(), f"{name}: {volume}"
            else:
                assert source in COMPOSE["volumes"], f"{name}: {volume}"


def commands():
    """Every command line a service runs: (service, argv), ``bash -c`` scripts split at
    ``&&``."""
    import shlex
    for name, service in SERVICES.items():
        cmd = service.get("command")
        if not cmd:
            continue
        if cmd[:2] == ["bash", "-c"]:
            for part in cmd[2].split("&&"):
                yield name, shlex.split(part)
        else:
            yield name, list(cmd)


def airflow_commands():
    """Airflow's CLI as the image runs it: its core commands and the Celery executor's."""
    from airflow.cli.cli_config import core_commands
    from airflow.providers.celery.cli.definition import get_celery_cli_commands
    return {c.name: c for c in [*core_commands, *get_celery_cli_commands()]}


def test_every_command_exists_in_the_project_and_its_tools():
    import zipfile

    import pyspark
    jars = [zipfile.ZipFile(j) for j in (Path(pyspark.__file__).parent / "jars").glob("spark-*")]
    cli = airflow_commands()
    seen = set()
    for name, argv in commands():
        tool = argv[0]
        seen.add(tool)
        if tool == "airflow":
            command = cli[argv[1]]
            while hasattr(command, "subcommands"):  # a group: celery worker, db migrate
                argv = argv[1:]
                command = {c.name: c for c in command.subcommands}[argv[1]]
            flags = {f for arg in command.args for f in arg.flags}
            assert {a for a in argv if a.startswith("--")} <= flags, (name, argv)
        elif tool == "python":
            assert argv[1] == "-m"
            module = ROOT / argv[2].replace(".", "/")
            assert module.with_suffix(".py").is_file() or module.is_dir(), (name, argv)
        elif tool in ("spark-class", "spark-submit"):
            assert (Path(pyspark.__file__).parent / "bin" / tool).is_file()
            main = argv[1] if tool == "spark-class" else argv[argv.index("--class") + 1]
            entry = main.replace(".", "/") + ".class"
            assert any(entry in jar.NameToInfo for jar in jars), (name, main)
        else:
            assert tool == "echo", (name, argv)
    assert {"airflow", "python", "spark-class", "spark-submit"} <= seen


def test_the_image_is_the_airflow_the_project_pins():
    pinned = present(re.search(r"^apache-airflow\[\w+\]==([\d.]+)$",
                       (ROOT / "requirements.txt").read_text(), re.M)).group(1)
    assert f"FROM apache/airflow:{pinned}-python" in (ROOT / "Dockerfile").read_text()
    assert "apache-airflow-providers-celery==" in (ROOT / "requirements.txt").read_text()
