"""Runners are registered classes that own their settings (``streamslice.runners``): one
registered by one line in ``RUNNERS`` is chosen by ``spark.runner``, validates its own keys of
the ``spark:`` block with errors naming file, line and field, and runs the read task's job;
the runners a pipeline does not use are never imported. The runner registered here records
what it is handed instead of starting Spark (the real runners run in
tests/integration/test_spark_submit.py, test_spark_connect.py, test_emr_serverless.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import pytest

from streamslice import runners
from streamslice.airflow.runners import run_spark_read
from streamslice.config import parse_pipeline
from streamslice.config.secrets import SECRETS_FILE
from streamslice.errors import ConfigError
from streamslice.planning.plan import ReadPlan
from tests.support.pipelines import modules_loaded_parsing

if TYPE_CHECKING:
    from streamslice.kafka.split import KafkaSplit

# The plan a read is given, which the runner receives (the runners here are fakes or recorders).
PLAN: ReadPlan[KafkaSplit] = ReadPlan(pipeline="p", source="kafka", mode="incremental",
                                      planned_at=0, splits=[], partition="batch=00000001")

HEAD = "mode: incremental\nkafka: {bootstrap_servers: 'b:9092', topics: [t]}\n"
RAN: list[runners.RunRequest] = []


@dataclass(frozen=True, kw_only=True)
class RecordingRunner(runners.Runner):
    """A runner as a new module would write it: its settings under ``spark.recorder``."""

    kind: ClassVar[str] = "recorder"
    keys: ClassVar[tuple[str, ...]] = ("recorder",)
    queue: str
    attempts: int = 1

    @classmethod
    def parse(cls, f, conf):
        own = f.child("recorder", required=True)
        runner = cls(conf=conf, queue=own.str("queue"),
                     attempts=own.int("attempts", 1, minimum=1))
        own.done()
        return runner

    def run(self, request):
        RAN.append(request)


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    for key in ("SPARK_REMOTE", "STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_MASTER"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setitem(runners.RUNNERS, "recorder", f"{__name__}:RecordingRunner")
    RAN.clear()


def parse(spark):
    return parse_pipeline(HEAD + "spark:\n" + spark, file="p.yaml", default_name="p")


def error(spark):
    with pytest.raises(ConfigError) as info:
        parse(spark)
    return str(info.value)


def test_a_runner_registered_by_one_line_is_chosen_and_runs_the_read():
    cfg = parse("  runner: recorder\n  conf: {spark.executor.memory: 2g}\n"
                "  recorder: {queue: q1, attempts: 3}\n")
    assert cfg.spark == RecordingRunner(conf={"spark.executor.memory": "2g"}, queue="q1",
                                        attempts=3)
    run_spark_read(cfg, PLAN, "/staging", {"bootstrap.servers": "b:9092",
                                           "sasl.password": "s3cret"}, {"o": 1})
    (request,) = RAN
    assert (request.cfg, request.plan, request.staging_uri, request.options) == \
        (cfg, PLAN, "/staging", {"o": 1})
    # not an own-identity runner: the secret reaches it in the private file, never inline
    assert "sasl.password" not in request.properties
    assert request.properties[SECRETS_FILE] == request.secrets_path


def test_the_registered_runner_validates_its_own_settings_naming_the_field():
    assert error("  runner: recorder\n") == \
        "p.yaml:4: spark.recorder: is required"
    assert error("  runner: recorder\n  recorder: {queue: q1, attempts: 0}\n") == \
        "p.yaml:5: spark.recorder.attempts: must be at least 1, got 0"
    assert error("  runner: recorder\n  recorder: {queue: q1, tries: 2}\n").startswith(
        "p.yaml:5: spark.recorder.tries: unknown key 'tries' (allowed here: attempts, queue)")
    assert error("  runner: nope\n") == ("p.yaml:4: spark.runner: 'nope' is not one of: "
                                         "local, spark-submit, emr-serverless, connect, "
                                         "recorder")


def test_a_key_of_another_runner_names_the_runner_that_takes_it():
    assert error("  recorder: {queue: q1}\n") == \
        "p.yaml:4: spark.recorder: is only used with runner: recorder"
    assert error("  runner: recorder\n  recorder: {queue: q}\n  remote: sc://h\n") == \
        "p.yaml:6: spark.remote: is only used with runner: connect"
    assert error("  runner: recorder\n  recorder: {queue: q}\n  emr_serverless: {a: b}\n") == \
        "p.yaml:6: spark.emr_serverless: is only used with runner: emr-serverless"
    assert parse("  emr_serverless: {}\n").spark.kind == "local"  # an empty block, as before
    assert error("  runner: recorder\n  recorder: {queue: q}\n  mystery: 1\n").startswith(
        "p.yaml:6: spark.mystery: unknown key 'mystery'")


def test_a_pipeline_imports_only_the_runner_it_uses():
    """Validating a local pipeline loads no other runner, and neither Airflow nor PySpark."""
    loaded = modules_loaded_parsing(
        HEAD + "output: {path: /x}\n",
        ("streamslice.runners", "streamslice.airflow", "airflow", "pyspark"))
    assert loaded == ["streamslice.runners", "streamslice.runners.local"]


@dataclass(frozen=True, kw_only=True)
class WaitingRunner(RecordingRunner):
    """A runner whose read waits for its job in a trigger (as EMR Serverless does)."""

    kind: ClassVar[str] = "waiting"
    keys: ClassVar[tuple[str, ...]] = ("recorder",)
    defers: ClassVar[bool] = True


def test_the_runner_says_how_its_read_fits_the_tasks(monkeypatch):
    monkeypatch.setitem(runners.RUNNERS, "waiting", f"{__name__}:WaitingRunner")
    spark = "  runner: {}\n  recorder: {{queue: q}}\n"
    assert parse(spark.format("recorder")).tasks == "separate"  # Runner.tasks by default
    monkeypatch.setattr(RecordingRunner, "tasks", "combined")
    assert parse(spark.format("recorder")).tasks == "combined"
    with pytest.raises(ConfigError, match=r"^p.yaml:\d+: tasks: combined is not possible with "
                                          r"spark.runner waiting: its read waits for the job "
                                          r"run in a trigger"):
        parse_pipeline(HEAD + "tasks: combined\nspark:\n" + spark.format("waiting"),
                       file="p.yaml", default_name="p")
