"""``spark.runner: connect``: the pipeline file's ``spark.remote`` (or PySpark's own
SPARK_REMOTE), the shared session's id, and how a lost server reads as an error."""
import pytest

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError, SourceError
from streamslice.spark.connect import session_id, session_url
from streamslice.spark.job import unwrap

HEAD = """\
mode: incremental
kafka: {bootstrap_servers: "b:9092", topics: [t]}
output: {path: /lake}
"""


@pytest.fixture(autouse=True)
def no_deployment_defaults(monkeypatch):
    for key in ("SPARK_REMOTE", "STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_MASTER"):
        monkeypatch.delenv(key, raising=False)


def spark(block):
    return parse_pipeline(HEAD + "spark:\n" + block, file="p.yaml", default_name="p").spark


def error(block):
    with pytest.raises(ConfigError) as info:
        spark(block)
    return str(info.value)


@pytest.mark.parametrize("remote", ["sc://localhost", "sc://spark-connect:15002",
                                    "sc://10.0.0.7:15002/", "sc://[::1]:15002",
                                    "sc://h:443/;use_ssl=true;token=abc;user_id=airflow"])
def test_connect_runner_takes_a_spark_connect_url(remote):
    s = spark(f"  runner: connect\n  remote: '{remote}'\n")
    assert (s.kind, s.remote) == ("connect", remote)


@pytest.mark.parametrize("remote", ["http://spark:15002", "spark:15002", "sc://", "sc://h:port",
                                    "sc://h:15002/path", "sc://h 1:15002"])
def test_a_bad_remote_names_the_field(remote):
    assert error(f"  runner: connect\n  remote: '{remote}'\n").startswith(
        f"p.yaml:6: spark.remote: {remote!r} is not a Spark Connect URL: sc://host:15002")


def test_remote_is_required_and_only_for_connect():
    assert error("  runner: connect\n") == (
        "p.yaml:5: spark.remote: is required with runner: connect (or set SPARK_REMOTE), "
        "e.g. sc://spark-connect:15002")
    assert error("  remote: sc://h:15002\n") == \
        "p.yaml:5: spark.remote: is only used with runner: connect"
    assert error("  runner: connect\n  remote: sc://h\n  master: yarn\n").startswith(
        "p.yaml:7: spark.master: is not used with runner: connect")


def test_spark_remote_in_the_environment_means_spark_connect(monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark-connect:15002")
    s = spark("  conf: {spark.sql.shuffle.partitions: '8'}\n")
    assert (s.kind, s.remote) == ("connect", "sc://spark-connect:15002")
    monkeypatch.setenv("STREAMSLICE_SPARK_RUNNER", "spark-submit")  # an explicit choice wins
    assert spark("  master: yarn\n").kind == "spark-submit"
    monkeypatch.setenv("SPARK_REMOTE", "http://nope")
    assert "spark.remote: 'http://nope' is not a Spark Connect URL" in \
        error("  runner: connect\n")


def test_runs_share_a_session_per_package_settings_and_half_hour():
    conf = {"spark.sql.session.timeZone": "UTC"}
    first = session_id("streamslice-aa.zip", conf, now=3600.0)
    assert first == session_id("streamslice-aa.zip", dict(conf), now=3600.0 + 1799)
    assert first != session_id("streamslice-aa.zip", conf, now=3600.0 + 1800)
    assert first != session_id("streamslice-bb.zip", conf, now=3600.0)
    assert first != session_id("streamslice-aa.zip", {**conf, "x": "1"}, now=3600.0)


@pytest.mark.parametrize("remote, url", [
    ("sc://h:15002", "sc://h:15002/;session_id=S"),
    ("sc://h:15002/", "sc://h:15002/;session_id=S"),
    ("sc://h:15002/;token=t", "sc://h:15002/;token=t;session_id=S"),
    ("sc://h:15002/;session_id=mine", "sc://h:15002/;session_id=mine")])
def test_the_session_goes_into_the_url(remote, url):
    assert session_url(remote, "S") == url


def test_a_lost_server_is_a_retryable_source_error():
    text = ('<_MultiThreadedRendezvous of RPC that terminated with:\n\tstatus = '
            'StatusCode.UNAVAILABLE\n\tdetails = "failed to connect to all addresses; last '
            'error: UNKNOWN: ipv4:127.0.0.1:1: Connection refused"\n>')
    err = unwrap(RuntimeError(text))
    assert isinstance(err, SourceError) and err.transient
    assert str(err) == ("the Spark Connect server cannot be reached or was restarted: "
                        "failed to connect to all addresses; last error: "
                        "UNKNOWN: ipv4:127.0.0.1:1: Connection refused")


def test_a_restarted_server_is_a_retryable_source_error():
    err = unwrap(RuntimeError("[RESPONSE_ALREADY_RECEIVED] INVALID_HANDLE.SESSION_NOT_FOUND on "
                              "the server but responses were already received from it."))
    assert isinstance(err, SourceError) and str(err).startswith(
        "the Spark Connect server cannot be reached or was restarted: "
        "[RESPONSE_ALREADY_RECEIVED] INVALID_HANDLE.SESSION_NOT_FOUND")
