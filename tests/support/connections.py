"""Airflow connections for tests, defined as a deployment defines them: ``AIRFLOW_CONN_<ID>``
holding Airflow's JSON form. In the test's own process they are set through a MonkeyPatch so
each is gone after its test (a module-scoped fixture passes ``pytest.MonkeyPatch.context()``'s);
an Airflow the tests start as processes gets the same variables in its environment."""
import json


def environment(conn_id, conn_type, **fields):
    """``{AIRFLOW_CONN_<ID>: JSON}``: connection ``conn_id`` of ``conn_type`` with Airflow's
    fields (login, password, host, port, schema, extra), for a process's environment."""
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps({"conn_type": conn_type, **fields})}


def aws_environment(conn_id, endpoint, login="test", password="test", **extra):
    """An ``aws`` connection to a local endpoint (kinesis-local, moto_server) in us-east-1."""
    return environment(conn_id, "aws", login=login, password=password,
                       extra={"region_name": "us-east-1", "endpoint_url": endpoint, **extra})


def connection(monkeypatch, conn_id, conn_type, **fields):
    """Defines ``environment(conn_id, conn_type, **fields)`` for the test."""
    for name, value in environment(conn_id, conn_type, **fields).items():
        monkeypatch.setenv(name, value)


def aws_connection(monkeypatch, conn_id, endpoint, login="test", password="test", **extra):
    """Defines ``aws_environment(…)`` for the test."""
    for name, value in aws_environment(conn_id, endpoint, login, password, **extra).items():
        monkeypatch.setenv(name, value)
