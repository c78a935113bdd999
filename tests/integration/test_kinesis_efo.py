"""Enhanced Fan-Out consumers registered and deregistered as Airflow tasks; reads through
SubscribeToShard. Real Kinesis-compatible server, real Spark, real Airflow (dag.test)."""
import functools
import json

import pyarrow.dataset as ds
import pytest

from tests.support.checks import present
from tests.support.connections import aws_connection
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kinesis_pipeline, run_dag, unique
from tests.support.wait import wait_for, wait_until_clock

pytestmark = pytest.mark.integration


@pytest.fixture
def efo_stream(kinesis, monkeypatch):
    aws_connection(monkeypatch, "test_aws", kinesis.endpoint)
    client = kinesis.client()
    stream = unique("efo")
    arn = create_stream(client, stream, 2)
    sent = put(client, stream, [b'{"n": %d}' % i for i in range(300)])
    return client, stream, arn, sent


def pipeline(stream, tmp_path, registration="per_run", **efo):
    return kinesis_pipeline(stream, name=unique("kin_efo"), retries=0, output=tmp_path,
                            kinesis={"conn_id": "test_aws", "reader": "efo",
                                     "efo": {"consumer_name": "ss-test",
                                             "registration": registration, **efo}})


def consumers(client, arn):
    return {c["ConsumerName"]: c for c in
            client.list_stream_consumers(StreamARN=arn, MaxResults=100)["Consumers"]}


def states(run):
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_per_run_registers_reads_over_efo_and_deregisters(efo_stream, spark, airflow_db,
                                                         tmp_path):
    client, stream, arn, sent = efo_stream
    cfg = pipeline(stream, tmp_path)
    run = run_dag(cfg)
    assert set(states(run)) == {"efo_sweep", "efo_register", "plan", "read", "commit",
                                "efo_deregister"}
    arns = run.get_task_instance("efo_register").xcom_pull(task_ids="efo_register")
    assert list(arns) == [stream] and "ss-test-" in arns[stream]
    part = f"{cfg.output.dataset(cfg.name)}/batch=00000001"
    t = ds.dataset(part, format="parquet").to_table(columns=["shardId", "sequenceNumber"])
    assert sorted(zip(t.column("shardId").to_pylist(),
                      t.column("sequenceNumber").to_pylist())) == sorted(sent)
    manifest = json.load(open(f"{part}/_manifest.json"))
    assert {s["reader"] for s in manifest["splits"]} == {"efo"}
    assert consumers(client, arn) == {}, "the run's consumer was not deregistered"


def test_per_run_teardown_deregisters_when_the_read_fails(efo_stream, spark, airflow_db,
                                                          tmp_path, monkeypatch):
    client, stream, arn, _ = efo_stream
    cfg = pipeline(stream, tmp_path)
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read")
    run = run_dag(cfg, expect="failed")
    s = states(run)
    assert s["read"] == "failed" and s["efo_deregister"] == "success"
    assert consumers(client, arn) == {}


def test_keep_leaves_the_consumer_and_reuses_it(efo_stream, spark, airflow_db, tmp_path):
    client, stream, arn, sent = efo_stream
    cfg = pipeline(stream, tmp_path, registration="keep")
    run = run_dag(cfg)
    assert "efo_deregister" not in states(run) and "efo_sweep" not in states(run)
    assert list(consumers(client, arn)) == ["ss-test"]
    put(client, stream, [b'{"n": 1}'] * 5)
    run_dag(cfg)  # reuses the ACTIVE consumer
    assert list(consumers(client, arn)) == ["ss-test"]
    client.deregister_stream_consumer(ConsumerARN=consumers(client, arn)["ss-test"]["ConsumerARN"])


def test_none_uses_the_given_arn_and_makes_no_registration_calls(efo_stream, spark, airflow_db,
                                                                 tmp_path):
    client, stream, arn, sent = efo_stream
    given = client.register_stream_consumer(StreamARN=arn, ConsumerName="external")
    consumer_arn = given["Consumer"]["ConsumerARN"]
    wait_for(lambda: client.describe_stream_consumer(ConsumerARN=consumer_arn)[
        "ConsumerDescription"]["ConsumerStatus"] == "ACTIVE", what="external ACTIVE")
    cfg = pipeline(stream, tmp_path, registration="none", consumer_arn=consumer_arn)
    run = run_dag(cfg)
    assert set(states(run)) == {"plan", "read", "commit"}
    assert list(consumers(client, arn)) == ["external"]
    manifest = json.load(open(f"{cfg.output.dataset(cfg.name)}/batch=00000001/_manifest.json"))
    assert manifest["records"] == len(sent)


def test_the_21st_consumer_is_refused_clearly(efo_stream, spark, airflow_db, tmp_path):
    client, stream, arn, _ = efo_stream
    def registered(i):
        try:
            return client.register_stream_consumer(StreamARN=arn, ConsumerName=f"other-{i}")
        except client.exceptions.LimitExceededException:  # 5 CREATING at once
            return None
    for i in range(20):
        wait_for(functools.partial(registered, i), what=f"other-{i} registered")
    run = run_dag(pipeline(stream, tmp_path), expect="failed")
    assert states(run)["efo_register"] == "failed"
    from streamslice.errors import SourceError
    from streamslice.kinesis.client import make_client
    from streamslice.kinesis.consumers import register
    props = {"region": "us-east-1", "endpoint_url": client.meta.endpoint_url,
             "access_key_id": "test", "secret_access_key": "test"}
    with pytest.raises(SourceError, match="already has 20 consumers, the Kinesis limit of 20"):
        register(make_client(props), arn, "ss-test-x")


def test_sweeper_removes_a_leaked_consumer(efo_stream, spark, airflow_db, tmp_path):
    client, stream, arn, _ = efo_stream
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-test-00c0ffee00")
    client.register_stream_consumer(StreamARN=arn, ConsumerName="someone-else")
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-test-team-b")
    created = [c["ConsumerCreationTimestamp"].timestamp() for c in consumers(client, arn).values()]
    wait_until_clock(max(created) + 2.5)  # all three older than sweep_older_than
    cfg = pipeline(stream, tmp_path, sweep_older_than="2s")
    run_dag(cfg)
    assert sorted(consumers(client, arn)) == ["someone-else", "ss-test-team-b"]


def test_the_streamslice_page_lists_the_streams_consumers(efo_stream, tmp_path):
    """What the pipeline page shows under "Enhanced fan-out consumers", asked of the Kinesis
    server with the pipeline's own connection; the connection's secret is never in it."""
    from streamslice.airflow.checkpoint_store import output_asset
    from streamslice.airflow.ui import _sections
    client, stream, arn, _ = efo_stream
    cfg = pipeline(stream, tmp_path, registration="keep")
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-test")
    # deregistering a consumer still CREATING is refused
    wait_for(lambda: consumers(client, arn)["ss-test"]["ConsumerStatus"] == "ACTIVE",
             what="ss-test ACTIVE")
    try:
        extra = output_asset(cfg).extra
        assert (extra["efo"], extra["source"]) == (True, "kinesis")
        (section,) = _sections(extra)
        assert (section.title, section.error) == ("Enhanced fan-out consumers", None)
        assert section.columns == ("Consumer", "Status", "Registered", "Age")  # nothing else
        assert [(r[0], r[1] in ("CREATING", "ACTIVE"), r[3]) for r in section.rows] == \
            [(f"ss-test ({stream})", True, "0 min")]
    finally:
        client.deregister_stream_consumer(StreamARN=arn, ConsumerName="ss-test")
    missing = pipeline(unique("no-such-stream"), tmp_path, registration="keep")
    (section,) = _sections(output_asset(missing).extra)
    error = present(section.error)
    assert section.rows == () and error.startswith("Could not list the stream's consumers: ")
    assert error.endswith("then reload this page.")
    assert "test" not in error.split(": ", 1)[1].split()  # no secret in the message
    assert _sections({"pipeline_file": str(tmp_path / "gone.yaml")}) == []
    polling = kinesis_pipeline(stream, kinesis={"conn_id": "test_aws"}, output=tmp_path)
    assert output_asset(polling).extra["efo"] is False
    assert _sections(output_asset(polling).extra) == []


# -- lifecycle edge cases (FLINK-37908, flink-connector-aws #213/#255) -------------------------
def _props(endpoint):
    return {"region": "us-east-1", "endpoint_url": endpoint, "access_key_id": "test",
            "secret_access_key": "test"}


def _wait_status(client, arn, name, status):
    wait_for(lambda: consumers(client, arn).get(name, {}).get("ConsumerStatus") == status,
             what=f"{name} {status}")


def test_registering_a_name_still_deleting_waits_and_registers_it_again(efo_stream):
    """The previous try's consumer of the same name is still DELETING (kinesis-local keeps
    it so for 300 ms): registration waits it out and registers anew, instead of waiting for
    an ACTIVE that never comes."""
    from streamslice.kinesis.client import make_client
    from streamslice.kinesis.consumers import register
    client, _, arn, _ = efo_stream
    client.register_stream_consumer(StreamARN=arn, ConsumerName="again")
    _wait_status(client, arn, "again", "ACTIVE")
    client.deregister_stream_consumer(StreamARN=arn, ConsumerName="again")
    assert consumers(client, arn)["again"]["ConsumerStatus"] == "DELETING"
    got = register(make_client(_props(client.meta.endpoint_url)), arn, "again", timeout_s=30)
    assert consumers(client, arn)["again"]["ConsumerStatus"] == "ACTIVE"
    assert got == consumers(client, arn)["again"]["ConsumerARN"]
    client.deregister_stream_consumer(StreamARN=arn, ConsumerName="again")


def test_deregistering_a_consumer_still_creating_waits_for_it(efo_stream):
    """Kinesis refuses to deregister a consumer still CREATING (ResourceInUseException): the
    teardown waits and deregisters it rather than failing and leaking it."""
    from streamslice.kinesis.client import make_client
    from streamslice.kinesis.consumers import deregister
    client, _, arn, _ = efo_stream
    client.register_stream_consumer(StreamARN=arn, ConsumerName="young")
    with pytest.raises(client.exceptions.ResourceInUseException):
        client.deregister_stream_consumer(StreamARN=arn, ConsumerName="young")
    assert deregister(make_client(_props(client.meta.endpoint_url)), arn, "young",
                      timeout_s=30) is True
    assert "young" not in consumers(client, arn)


def test_throttled_describe_stream_consumer_is_retried(kinesis, efo_stream):
    """DescribeStreamConsumer answering LimitExceededException (20 calls/s per stream) is
    retried with backoff; the registration succeeds."""
    import subprocess
    import sys
    from pathlib import Path

    from devtools.services import free_port, wait_for_port
    from streamslice.kinesis.client import DEFAULT_BACKOFF, Backoff, make_client
    from streamslice.kinesis.consumers import deregister, register
    _, _, arn, _ = efo_stream
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devtools.kinesis_proxy", "--listen-port",
                             str(port), "--upstream-port", str(kinesis.port), "--throttle",
                             "DescribeStreamConsumer:4"],
                            cwd=str(Path(__file__).resolve().parents[2]))
    try:
        wait_for_port(port, what="throttling Kinesis proxy")
        client = make_client(_props(f"http://127.0.0.1:{port}"))
        with pytest.raises(client.exceptions.LimitExceededException):
            client.describe_stream_consumer(StreamARN=arn, ConsumerName="x")
        quick = {**DEFAULT_BACKOFF, "describe_stream_consumer": Backoff(10, 20, 100, 1.5)}
        assert register(client, arn, "throttled", backoff=quick, timeout_s=30).startswith("arn:")
        assert deregister(client, arn, "throttled", backoff=quick, timeout_s=30) is True
    finally:
        proc.terminate()
        proc.wait(10)
