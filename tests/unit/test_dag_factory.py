"""The DAG factory: task structure per source, real data intervals, an invalid file shown as a
failing DAG, and interval runs that wait for their interval (and lateness) to close."""
import time
from datetime import datetime, timezone

import pytest

from streamslice.airflow.factory import build_dag, build_dags
from streamslice.config import parse_pipeline
from tests.support.checks import present
from tests.support.pipelines import modules_loaded_building

KAFKA = """\
mode: interval
schedule: "@hourly"
start_date: 2024-05-01T00:00:00Z
allowed_lateness: 5m
kafka: {bootstrap_servers: "b:9092", topics: [t]}
output: {path: /lake}
"""


def test_kafka_dag_shape_and_timetable():
    dag = build_dag(parse_pipeline(KAFKA, file="p.yaml", default_name="orders"))
    assert dag.dag_id == "orders"
    assert set(dag.task_dict) == {"plan", "read", "commit"}
    assert dag.task_dict["read"].upstream_task_ids == {"plan"}
    assert dag.task_dict["commit"].upstream_task_ids == {"read"}
    assert type(dag.timetable).__name__ == "CronDataIntervalTimetable"
    assert [a.name for a in dag.task_dict["commit"].outlets] == ["streamslice/orders"]
    assert "streamslice" in dag.tags and "| Allowed lateness | 300s |" in dag.doc_md


def test_efo_per_run_dag_has_setup_and_teardown():
    dag = build_dag(parse_pipeline("""
mode: incremental
kinesis: {stream: s, reader: efo}
output: {path: /lake}
""", file="k.yaml", default_name="k"))
    t = dag.task_dict
    assert set(t) == {"efo_sweep", "efo_register", "plan", "read", "commit", "efo_deregister"}
    assert t["efo_register"].is_setup and t["efo_deregister"].is_teardown
    assert t["efo_deregister"].upstream_task_ids >= {"read", "efo_register"}


CONNECT = "spark: {runner: connect, remote: 'sc://spark:15002'}\n"


@pytest.mark.parametrize("settings, shape", [
    ("", "separate"), (CONNECT, "combined"), (CONNECT + "tasks: separate\n", "separate"),
    ("tasks: combined\n", "combined"),
    ("spark: {runner: spark-submit, master: 'spark://m:7077'}\n", "separate")])
def test_the_task_layout_defaults_by_runner_and_is_the_pipelines_choice(settings, shape):
    """tasks: combined (the default on Spark Connect) is one task that plans, reads and
    commits, with the output asset as inlet (its failure alert is kept) and outlet (its
    event carries the run's figures); separate is plan → read → commit."""
    cfg = parse_pipeline(KAFKA + settings, file="p.yaml", default_name="orders")
    dag = build_dag(cfg)
    assert cfg.tasks == shape
    if shape == "combined":
        assert set(dag.task_dict) == {"plan_read_commit"}
        task = dag.task_dict["plan_read_commit"]
        assert task.python_callable.__name__ == "plan_read_commit_task"
        assert [a.name for a in task.inlets] == [a.name for a in task.outlets] == \
            ["streamslice/orders"]
    else:
        assert set(dag.task_dict) == {"plan", "read", "commit"}


def test_a_combined_efo_run_keeps_its_consumer_tasks_around_the_one_task():
    dag = build_dag(parse_pipeline("""
mode: incremental
tasks: combined
kinesis: {stream: s, reader: efo}
output: {path: /lake}
""", file="k.yaml", default_name="k"))
    t = dag.task_dict
    assert set(t) == {"efo_sweep", "efo_register", "plan_read_commit", "efo_deregister"}
    assert t["plan_read_commit"].upstream_task_ids == {"efo_register"}
    assert t["efo_deregister"].upstream_task_ids >= {"plan_read_commit", "efo_register"}
    assert t["efo_register"].is_setup and t["efo_deregister"].is_teardown


def test_emr_serverless_cannot_combine_its_tasks():
    from streamslice.errors import ConfigError
    emr = ("spark:\n  runner: emr-serverless\n  emr_serverless: {application_id: a, "
           "execution_role_arn: r, code_uri: 's3://b/code'}\n")
    assert parse_pipeline(KAFKA + emr, file="p.yaml").tasks == "separate"
    with pytest.raises(ConfigError, match="p.yaml:.*tasks: combined is not possible with "
                                          "spark.runner emr-serverless: its read waits"):
        parse_pipeline(KAFKA + emr + "tasks: combined\n", file="p.yaml")


def test_an_invalid_file_becomes_a_failing_dag(tmp_path):
    (tmp_path / "good.yaml").write_text(KAFKA)
    (tmp_path / "broken.yaml").write_text(KAFKA.replace("interval\n", "sometimes\n", 1))
    dags = build_dags(tmp_path)
    assert set(dags) == {"good", "broken"}
    broken = dags["broken"]
    assert "config-error" in broken.tags and set(broken.task_dict) == {"invalid_config"}
    assert "broken.yaml:1: mode: 'sometimes' is not one of" in present(broken.doc_md)
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk.exceptions import AirflowFailException
    invalid = broken.task_dict["invalid_config"]
    assert isinstance(invalid, PythonOperator)
    with pytest.raises(AirflowFailException, match="mode: 'sometimes'"):
        invalid.python_callable(*invalid.op_args)


def test_an_interval_is_read_only_once_closed_with_its_lateness():
    from airflow.sdk.exceptions import AirflowRescheduleException

    from streamslice.airflow.tasks import _wait_until_closed
    from streamslice.planning.plan import Interval
    now = int(time.time() * 1000)
    _wait_until_closed(Interval(now - 7_200_000, now - 3_600_000, 600_000))  # closed: no wait
    with pytest.raises(AirflowRescheduleException) as info:
        _wait_until_closed(Interval(now - 3_600_000, now - 60_000, 600_000))
    assert info.value.reschedule_date == datetime.fromtimestamp((now + 540_000) / 1000,
                                                                tz=timezone.utc)


def test_bad_bytes_and_alias_bombs_become_their_own_error_dags(tmp_path):
    """A non-UTF-8 file used to make the whole DAG file fail to import, and an alias bomb to
    hang it: now each is a config-error DAG and the good pipeline is still there."""
    from tests.unit.test_pipeline_files_fuzz import BAD_FILES, GOOD
    (tmp_path / "good.yaml").write_text(GOOD)
    for name in ("latin1", "bomb"):
        (tmp_path / f"{name}.yaml").write_bytes(BAD_FILES[name][0])
    dags = build_dags(tmp_path)
    assert sorted(dags) == ["bomb", "good", "latin1"]
    assert "config-error" in dags["bomb"].tags and "config-error" in dags["latin1"].tags
    assert "config-error" not in dags["good"].tags


def test_the_files_airflow_settings_reach_the_dag():
    """The Common table's Airflow fields: retries 2 / 30s by default, max_active_runs 4 for
    interval pipelines, catchup off, tags and description shown; a duration schedule is
    Airflow's DeltaDataIntervalTimetable, no schedule a manual DAG."""
    from datetime import timedelta
    dag = build_dag(parse_pipeline(KAFKA, file="p.yaml", default_name="orders"))
    assert (dag.max_active_runs, dag.catchup, dag.end_date) == (4, False, None)
    assert dag.start_date == datetime(2024, 5, 1, tzinfo=timezone.utc)
    for task in dag.tasks:
        assert (task.retries, task.retry_delay) == (2, timedelta(seconds=30)), task.task_id
    dag = build_dag(parse_pipeline(KAFKA.replace('"@hourly"', "15m") + """\
end_date: 2024-06-01T00:00:00Z
catchup: true
retries: 0
retry_delay: 2m
max_active_runs: 2
tags: [team-a]
description: Orders by the quarter hour.
""", file="p.yaml", default_name="orders"))
    assert type(dag.timetable).__name__ == "DeltaDataIntervalTimetable"
    assert dag.timetable.delta == timedelta(minutes=15)
    assert (dag.max_active_runs, dag.catchup) == (2, True)
    assert dag.end_date == datetime(2024, 6, 1, tzinfo=timezone.utc)
    assert {(t.retries, t.retry_delay) for t in dag.tasks} == {(0, timedelta(minutes=2))}
    assert {"streamslice", "kafka", "interval", "team-a"} <= set(dag.tags)
    assert dag.description == "Orders by the quarter hour."
    manual = build_dag(parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'b:9092',"
                                      " topics: [t]}\noutput: {path: /lake}\n",
                                      file="p.yaml", default_name="inc"))
    assert type(manual.timetable).__name__ == "NullTimetable" and manual.max_active_runs == 1


@pytest.mark.parametrize("error, retried", [
    ("SourceError", True), ("ConfigError", False), ("DataLossError", False),
    ("CommitError", False), ("PlanError", False), ("DecodeError", False)])
def test_only_transient_source_errors_are_retried(error, retried):
    """Airflow retries a task that raises AirflowException, and fails one that raises
    AirflowFailException at once (its retries unused): only an unreachable source is worth
    another try."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from streamslice import errors
    from streamslice.airflow.failures import operator_errors, original_error
    exc = getattr(errors, error)("broker down", split=3) if error != "ConfigError" else \
        errors.ConfigError("bad field", file="p.yaml", line=2, field="kafka.topics")
    with pytest.raises(AirflowException) as info:
        with operator_errors():
            raise exc
    assert isinstance(info.value, AirflowFailException) is not retried
    assert str(info.value) == f"{error}: {exc}" and original_error(info.value) is exc


@pytest.mark.parametrize("try_number, max_tries, retries, note", [
    (1, 2, 2, " (task read, try 1 of 3: Airflow retries it)"),
    (3, 2, 2, " (task read, try 3 of 3: not retried, no retries left)"),
    (1, 0, 0, " (task read, try 1 of 1: not retried, retries: 0)"),
    (4, 5, 2, " (task read, try 4 of 6: Airflow retries it)"),  # cleared: 2 more tries
])
def test_a_transient_error_says_which_task_failed_and_whether_it_is_retried(
        try_number, max_tries, retries, note):
    """The note follows Airflow's own rule (retried while try_number <= max_tries). The task
    instance is a stand-in for the one Airflow passes (our logic only); a real run with
    retries: 0 is in tests/integration/test_schema_registries.py."""
    from types import SimpleNamespace

    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from streamslice.airflow.failures import operator_errors
    from streamslice.errors import ConfigError, SourceError
    ti = SimpleNamespace(task_id="read", try_number=try_number, max_tries=max_tries,
                         task=SimpleNamespace(retries=retries))
    with pytest.raises(AirflowException) as info:
        with operator_errors({"ti": ti}):
            raise SourceError("the Spark JVM is gone (killed, or out of memory?): x")
    assert str(info.value) == ("SourceError: the Spark JVM is gone (killed, or out of "
                               f"memory?): x{note}")
    with pytest.raises(AirflowFailException) as failed:  # never retried: nothing to say
        with operator_errors({"ti": ti}):
            raise ConfigError("bad")
    assert str(failed.value) == "ConfigError: bad"


def test_a_freshness_limit_adds_the_watchdog_dag_scheduled_on_its_own(tmp_path):
    (tmp_path / "orders.yaml").write_text(KAFKA + "alerts: {freshness: 2h}\n")
    (tmp_path / "clicks.yaml").write_text(KAFKA)
    dags = build_dags(tmp_path)
    watchdog = dags["streamslice_freshness"]
    assert set(dags) == {"orders", "clicks", "streamslice_freshness"}
    assert "streamslice" not in watchdog.tags  # not a pipeline on the Streamslice page
    assert type(watchdog.timetable).__name__ == "DeltaTriggerTimetable"
    task = watchdog.task_dict["check_freshness"]
    from airflow.providers.standard.operators.python import PythonOperator
    assert isinstance(task, PythonOperator)
    assert task.op_kwargs["pipeline_files"] == [str(tmp_path / "orders.yaml")]
    assert [a.name for a in task.inlets] == ["streamslice/orders"]  # its state: read, alerted
    (tmp_path / "orders.yaml").write_text(KAFKA)
    assert "streamslice_freshness" not in build_dags(tmp_path)


KINESIS = ("mode: incremental\nkinesis: {stream: s, region: us-east-1, reader: efo, "
           "efo: {consumer_name: c}}\noutput: {path: /lake}\n")


def test_a_task_process_builds_only_its_own_dag_the_one_the_folder_gives(tmp_path,
                                                                          monkeypatch):
    """In a task process Airflow's parsing context names the DAG: only the files that decide
    it are loaded, and it is the DAG the whole folder gives, for every kind of entry:
    a pipeline, one named in its file, a name two files claim (the last one wins, the other
    is an error under its own file's name), an invalid file, the freshness watchdog."""
    from airflow.sdk.definitions.context import _AIRFLOW_PARSING_CONTEXT_DAG_ID

    import streamslice.config.pipeline as pipeline
    (tmp_path / "orders.yaml").write_text(KAFKA + "alerts: {freshness: 2h}\n")
    (tmp_path / "trips.yaml").write_text(KINESIS)
    (tmp_path / "a.yaml").write_text("pipeline: shared\n" + KAFKA)
    (tmp_path / "b.yaml").write_text("pipeline: shared\n" + KAFKA.replace("5m", "7m"))
    (tmp_path / "named.yaml").write_text("pipeline: clicks\n" + KAFKA)
    (tmp_path / "env.yaml").write_text("pipeline: ${CLICKS_NAME:-from_env}\n" + KAFKA)
    (tmp_path / "broken.yaml").write_text("mode: sometimes\n")
    full = build_dags(tmp_path)
    assert sorted(full) == ["b", "broken", "clicks", "from_env", "orders", "shared",
                            "streamslice_freshness", "trips"]
    loaded = []
    real = pipeline.load_pipeline

    def counted(path):
        loaded.append(path.name)
        return real(path)
    monkeypatch.setattr(pipeline, "load_pipeline", counted)
    for dag_id, dag in full.items():
        loaded.clear()
        monkeypatch.setenv(_AIRFLOW_PARSING_CONTEXT_DAG_ID, dag_id)
        built = build_dags(tmp_path)
        only = built[dag_id]
        assert only.dag_id == dag_id
        # the watchdog watches every pipeline: its task loads them all
        assert len(built) == (len(full) if dag_id == "streamslice_freshness" else 1)
        assert only.doc_md == dag.doc_md and only.description == dag.description
        assert {t.task_id: getattr(t, "op_kwargs", None) for t in only.tasks} == \
            {t.task_id: getattr(t, "op_kwargs", None) for t in dag.tasks}
        if dag_id not in ("streamslice_freshness", "trips"):
            assert "trips.yaml" not in loaded, dag_id
    assert "| Allowed lateness | 420s |" in present(full["shared"].doc_md)  # b.yaml, the last one
    monkeypatch.setenv(_AIRFLOW_PARSING_CONTEXT_DAG_ID, "shared")
    loaded.clear()
    build_dags(tmp_path)
    assert sorted(loaded) == ["a.yaml", "b.yaml", "env.yaml"]  # env.yaml: only loading tells
    monkeypatch.setenv(_AIRFLOW_PARSING_CONTEXT_DAG_ID, "not_ours")  # another DAG file's
    assert set(build_dags(tmp_path)) == set(full)


def test_building_the_dags_imports_what_only_a_run_needs_in_no_process(tmp_path):
    """In a fresh interpreter the DAG file imports neither PySpark (the Spark Connect client
    alone is ~0.4 CPU s), kafka-python nor boto3: the steps import them when they run. And a
    task process of one pipeline does not import another's source. (pyarrow it does import:
    the plugin Airflow loads in every process imports it already, and every step needs it.)"""
    (tmp_path / "orders.yaml").write_text(KAFKA + CONNECT)
    (tmp_path / "trips.yaml").write_text(KINESIS)
    heavy = ("pyspark", "kafka", "boto3", "botocore", "streamslice.kinesis")
    everything = modules_loaded_building(tmp_path, heavy)
    assert "streamslice.kinesis.source" in everything  # the check sees the other source
    assert [m for m in everything if not m.startswith("streamslice.kinesis")] == []
    assert modules_loaded_building(tmp_path, heavy, dag_id="orders") == []


def test_every_task_of_a_run_keeps_its_failure_alert_where_the_page_reads_it():
    efo = ("mode: incremental\nkinesis: {stream: s, region: us-east-1, reader: efo, "
           "efo: {consumer_name: c, registration: per_run}}\noutput: {path: /lake}\n")
    dag = build_dag(parse_pipeline(efo, file="p.yaml", default_name="trips"))
    for task in dag.tasks:  # the failure callback records into the asset's state
        assert [a.name for a in task.inlets + task.outlets][:1] == ["streamslice/trips"], \
            task.task_id


def test_descriptions_name_no_server_paths(tmp_path):
    (tmp_path / "orders.yaml").write_text(KAFKA)
    (tmp_path / "broken.yaml").write_text("mode: sometimes\n")
    dags = build_dags(tmp_path)
    assert dags["orders"].description == "kafka → parquet files (pipeline=orders)"
    broken = present(dags["broken"].description)
    assert broken.startswith("invalid pipeline file: broken.yaml:1")
    assert str(tmp_path) not in broken
