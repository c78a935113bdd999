"""Airflow connections for tests, defined as a deployment defines them: ``AIRFLOW_CONN_<ID>``
holding Airflow's JSON form, set through a MonkeyPatch so each is gone after its test (a
module-scoped fixture passes ``pytest.MonkeyPatch.context()``'s)."""
import json


def connection(monkeypatch, conn_id, conn_type, **fields):
    """Connection ``conn_id`` of ``conn_type`` with Airflow's fields (login, password, host,
    port, schema, extra)."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}",
                       json.dumps({"conn_type": conn_type, **fields}))


def aws_connection(monkeypatch, conn_id, endpoint, login="test", password="test", **extra):
    """An ``aws`` connection to a local endpoint (kinesis-local, moto_server) in us-east-1."""
    connection(monkeypatch, conn_id, "aws", login=login, password=password,
               extra={"region_name": "us-east-1", "endpoint_url": endpoint, **extra})
