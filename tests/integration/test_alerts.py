"""Operator alerts delivered through the amazon provider's SnsNotifier to an SNS topic on a
local moto_server, read back from a subscribed SQS queue. Real Airflow (dag.test), real broker,
real Spark."""

import json

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.connections import aws_connection
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


@pytest.fixture
def alerting(sns_queue, monkeypatch):
    moto, topic, received = sns_queue
    aws_connection(monkeypatch, "alerts_aws", moto.endpoint)
    received(wait=1)  # drain
    return topic, received


def pipeline(broker, topic_name, sns_topic, rules, mode="incremental", **settings):
    """Alerts to the SNS topic, with ``rules`` (thresholds) beside the notifier."""
    return kafka_pipeline(
        broker.bootstrap, topic_name, name=unique("alerts"), mode=mode, retries=0,
        kafka={"on_data_loss": "skip"}, format={"value": "json", "schema": {"n": "long"}},
        alerts={"notifiers": [{"sns": {"topic_arn": sns_topic, "aws_conn_id": "alerts_aws"}}],
                **rules}, **settings)


def one(alerts, kind):
    found = [a for a in alerts if a["kind"] == kind]
    assert len(found) == 1, f"expected one {kind} alert, got {alerts}"
    return found[0]


def test_lag_dead_letters_and_data_loss_alerts(broker, spark, airflow_db, alerting):
    sns_topic, received = alerting
    topic = unique("alerting")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for i in range(40):
            p.produce(topic, value=b"{broken" if i == 7 else b'{"n": %d}' % i, partition=0)
    cfg = pipeline(broker, topic, sns_topic, {"lag_records": 30, "dead_letters": 1})
    run = run_dag(cfg)
    alerts = received()
    lag, dead = one(alerts, "lag"), one(alerts, "dead_letters")
    assert lag["details"]["lag_records"] == 40 and "threshold 30" in lag["message"]
    assert lag["interval"] is None  # incremental runs have no data interval to report
    assert dead["details"]["dead_letters"] == 1
    assert "dead letters of batch=00000001" in dead["message"]
    for alert in (lag, dead):
        assert alert["pipeline"] == cfg.name and alert["run_id"] == run.run_id
        assert alert["link"].endswith(f"/dags/{cfg.name}/runs/" +
                                      run.run_id.replace(":", "%3A").replace("+", "%2B"))

    with producer(broker.bootstrap) as p:  # then offsets 40..44 expire before the next run
        for _ in range(10):
            p.produce(topic, value=b'{"n": 1}', partition=0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # keep it alive for the future
    for f in admin.delete_records([TopicPartition(topic, 0, 45)]).values():
        f.result(30)
    run_dag(cfg)
    loss = one(received(), "data_loss")
    assert loss["details"]["gaps"] == [{"key": f"{topic}:0", "from": 40, "to": 45,
                                        "reason": "expired"}]
    # Every alert sent is kept for the Streamslice page, each under its own key.
    from airflow.utils.session import create_session

    from streamslice.airflow import ui_data
    with create_session() as session:
        count, kept = ui_data.alerts(session, ui_data.asset(session, cfg.name))
    assert count == 3 and sorted(a.kind for a in kept) == ["data_loss", "dead_letters", "lag"]
    assert kept[-1].kind == "data_loss" and kept[-1].run_id != run.run_id


def test_run_failure_alert_names_the_error_and_split(broker, spark, airflow_db, alerting,
                                                     monkeypatch):
    sns_topic, received = alerting
    topic = unique("failing")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, trips(T0, 1, 40, seed=1), partitions=2)
    cfg = pipeline(broker, topic, sns_topic, {})
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:split=1")
    run = run_dag(cfg, expect="failed")
    alert = one(received(), "run_failed")
    assert alert["details"]["task"] == "read" and alert["details"]["failed_split"] == 1
    assert "injected fault at read" in alert["message"] and alert["run_id"] == run.run_id


def test_consecutive_empty_intervals_alert(broker, spark, airflow_db, alerting):
    sns_topic, received = alerting
    topic = unique("quiet")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(T0, 1, 20, seed=2), partitions=1)  # hour 0 only
    cfg = pipeline(broker, topic, sns_topic, {"empty_intervals": 2}, mode="interval",
                   schedule="@hourly", start_date="2024-05-01T00:00:00Z")
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
        alerts = received(wait=2 if hour < 2 else 5)
        if hour < 2:
            assert not [a for a in alerts if a["kind"] == "empty_intervals"]
    alert = one(alerts, "empty_intervals")
    assert alert["details"]["empty_runs"] == 2
    assert alert["interval"] == {"start": "2024-05-01T02:00:00.000Z",
                                 "end": "2024-05-01T03:00:00.000Z"}


def test_a_class_notifier_gets_its_args(broker, spark, airflow_db, tmp_path):
    """``{class: pkg.Notifier, args: {…}}`` as the operations page shows it: the notifier is built
    with the args and receives the alert through Airflow."""
    topic = unique("classy")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        p.produce(topic, value=b'{"n": 1}')
        p.produce(topic, value=b"not json")
    sink = tmp_path / "alerts.jsonl"
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("classy"), retries=0,
                         format={"value": "json", "schema": {"n": "long"}},
                         alerts={"dead_letters": 1, "notifiers": [
                             {"class": "tests.support.alerts.FileNotifier",
                              "args": {"path": str(sink), "label": "on-call"}}]},
                         output=tmp_path / "lake")
    run_dag(cfg)
    got = [json.loads(line) for line in sink.read_text().splitlines()]
    assert got == [{"label": "on-call", "kind": "dead_letters", "pipeline": cfg.name}]
