"""One resolver for every connection a pipeline names, and one line for every failure a
command meets: an undefined connection names its field, the Airflow home and how to define
it; the command's plan resolves the connections the plan task resolves (a schema registry's
too); errors of Airflow, SQLAlchemy and botocore become one line (real exception classes,
no client faked)."""

import pytest

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError, SourceError
from streamslice.errors.hints import Where, explain
from tests.support.connections import connection

KAFKA = "mode: incremental\nkafka: {conn_id: no_such_kafka, topics: [t]}\noutput: {path: /x}\n"


@pytest.mark.parametrize("text, field, example", [
    (KAFKA, "kafka.conn_id", "--conn-type kafka --conn-extra"),
    ("mode: incremental\nkinesis: {stream: s, conn_id: no_such_aws}\noutput: {path: /x}\n",
     "kinesis.conn_id", "--conn-type aws"),
    ("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\nformat:\n  value: avro"
     "\n  registry: {conn_id: no_such_sr}\n  subject: s\noutput: {path: /x}\n",
     "format.registry.conn_id", "--conn-type http --conn-host HOST"),
    ("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\nformat:\n  value: avro"
     "\n  registry: {kind: glue, registry_name: r, aws_conn_id: no_such_glue}\n  subject: s\n"
     "output: {path: /x}\n", "format.registry.aws_conn_id", "--conn-type aws"),
], ids=["kafka", "kinesis", "registry", "glue"])
def test_an_undefined_connection_names_its_field_the_home_and_how_to_define_it(
        text, field, example):
    from streamslice.airflow.hooks import pipeline_properties
    cfg = parse_pipeline(text)
    with pytest.raises(ConfigError) as err:
        pipeline_properties(cfg)
    conn_id = str(err.value).split("'")[1]
    from airflow.configuration import AIRFLOW_HOME
    assert str(err.value) == (
        f"{field}: Airflow has no connection {conn_id!r} (AIRFLOW_HOME={AIRFLOW_HOME}): define "
        f"it with `airflow connections add {conn_id} {example}" + str(err.value).split(
            example)[1].split("`")[0] + f"` or the environment variable "
        f"AIRFLOW_CONN_{conn_id.upper()}")
    assert "\n" not in str(err.value)


def test_the_output_catalogs_undefined_connection_names_its_field():
    from streamslice.airflow.hooks import with_catalog_connection
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                         "output: {path: /x, format: iceberg, conn_id: no_such_catalog}\n")
    with pytest.raises(ConfigError, match=r"^output.conn_id: Airflow has no connection "
                                          r"'no_such_catalog' .*AIRFLOW_CONN_NO_SUCH_CATALOG$"):
        with_catalog_connection(cfg.output.target(cfg.name))


def test_the_command_resolves_a_registrys_connection_as_the_plan_task_does(monkeypatch):
    """#28: ``streamslice plan`` resolved only the source's connection, so a pipeline whose
    ``format.registry.conn_id`` works under Airflow failed to plan from the command line."""
    from streamslice.airflow.hooks import pipeline_properties
    from streamslice.cli import _properties, names_connection
    connection(monkeypatch, "sr_cli", "http", host="registry.example", port=8081,
               schema="https", login="u", password="p")
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                         "format:\n  value: avro\n  registry: {conn_id: sr_cli}\n  subject: s\n"
                         "output: {path: /x}\n")
    assert names_connection(cfg) and _properties(cfg) == pipeline_properties(cfg)
    assert _properties(cfg)["schema.registry.url"] == "https://registry.example:8081"
    assert _properties(cfg)["schema.registry.basic.auth.user.info"] == "u:p"
    plain = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                           "output: {path: /x}\n")
    assert not names_connection(plain)
    assert _properties(plain) == {"bootstrap.servers": "a:1"}


def test_the_plan_and_read_tasks_resolve_through_the_same_function():
    """No task builds a run's properties by itself: they all call ``pipeline_properties``."""
    import inspect

    from streamslice.airflow import tasks
    source = inspect.getsource(tasks)
    assert source.count("pipeline_properties(cfg)") == 2
    assert "registry_properties" not in source


HOME = Where("/srv/airflow")


def test_an_unmigrated_metadata_database_says_which_home_and_to_migrate():
    import sqlite3

    from sqlalchemy.exc import OperationalError
    exc = OperationalError("SELECT asset.id FROM asset", {},
                           sqlite3.OperationalError("no such table: asset"))
    assert explain(exc, HOME) == (
        "Airflow's metadata database for AIRFLOW_HOME=/srv/airflow is not set up (no such "
        "table: asset): run `airflow db migrate` with that AIRFLOW_HOME, or set AIRFLOW_HOME "
        "to the home your Airflow uses")
    assert "AIRFLOW_HOME is not set" in explain(exc, Where(None))
    gone = OperationalError("x", {}, sqlite3.OperationalError("unable to open database file"))
    assert explain(gone, HOME).startswith("cannot open Airflow's metadata database for "
                                          "AIRFLOW_HOME=/srv/airflow (unable to open database")


def test_an_unreachable_service_says_which_target_starts_the_demos():
    from botocore.exceptions import EndpointConnectionError
    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:4567/")
    assert explain(exc, HOME) == \
        'cannot reach Could not connect to the endpoint URL: "http://127.0.0.1:4567/"'
    assert explain(exc, Where("/x", demo=True)).endswith(
        "; the demo's services run under `make services`")
    kafka = SourceError("cannot reach Kafka at 127.0.0.1:1: no broker answered")
    assert explain(kafka, HOME) == "cannot reach Kafka at 127.0.0.1:1: no broker answered"
    assert explain(kafka, Where("/x", demo=True)).endswith("`make services`")


def test_aws_set_up_errors_say_what_to_pass():
    from botocore.exceptions import NoCredentialsError, NoRegionError
    assert explain(NoRegionError(), HOME).startswith("no AWS region: pass --region")
    assert explain(NoCredentialsError(), HOME).startswith("no AWS credentials")


def test_anything_else_is_one_line_with_its_kind_and_where_the_traceback_is():
    assert explain(RuntimeError("boom\n  at line 2"), HOME) == \
        "RuntimeError: boom (--debug shows the traceback)"
    assert explain(ConfigError("a\nb"), HOME) == "a b"


def test_efo_commands_reach_aws_through_the_pipeline_they_name(capsys, tmp_path):
    """STREAM naming a Kinesis pipeline: the command finds it among the pipelines (the CLI's
    ``CommandKit``) and resolves its connection as its tasks do, so a connection Airflow does
    not have is the pipeline's field, in one line."""
    from streamslice.cli import main
    (tmp_path / "trips.yaml").write_text(
        "mode: incremental\nkinesis: {stream: trips, region: us-east-1, "
        "conn_id: no_such_aws_pipeline}\noutput: {path: /tmp/out}\n")
    assert main(["--dir", str(tmp_path), "efo", "list", "trips"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamslice: kinesis.conn_id: Airflow has no connection "
                          "'no_such_aws_pipeline'"), err
    assert err.count("\n") == 1


def test_efo_commands_name_the_aws_connection_they_were_given(capsys):
    from streamslice.cli import main
    assert main(["efo", "list", "s", "--conn-id", "no_such_aws_cli"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamslice: --conn-id: Airflow has no connection 'no_such_aws_cli'")
    assert "--conn-type aws" in err and err.count("\n") == 1
