"""Each run's figures reach the team's monitoring through Airflow's own metrics, switched on
by Airflow's ``[metrics]`` settings in the environment as a deployment does: a real StatsD
listener (UDP) and an OTLP receiver (HTTP/protobuf), fed by a run of the DAG (dag.test()) in a
process of its own. The names are the README's (``streamslice.monitoring.metrics.NAMES``)."""
import json
import time

import pytest

from devtools.services import create_topic
from streamslice.commit.manifest import read_manifest
from streamslice.monitoring.metrics import NAMES
from tests.support.checks import present
from tests.support.kafka import producer
from tests.support.metrics import OtlpReceiver, StatsdListener, run_with_metrics
from tests.support.pipelines import kafka_pipeline, unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000
BAD = (3, 7, 11, 12)  # of 20 records: not JSON, so dead letters
COUNTS = {"records": 16, "dead_letters": 4, "late_records": 0}


@pytest.fixture
def pipeline(broker, airflow_db):
    """An incremental pipeline over 20 records, 4 of them malformed."""
    topic = unique("metrics")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for i in range(20):
            value = b"{not json" if i in BAD else json.dumps({"id": i}).encode()
            p.produce(topic, value=value, partition=0, timestamp=T0 + i)
    return kafka_pipeline(broker.bootstrap, topic, name=unique("metrics"), retries=0,
                          format={"value": "json", "schema": {"id": "long"}})


def run(cfg, settings, env=None):
    """The run, and what its commit recorded; with the bounds of its data age in seconds."""
    before = time.time()
    run_with_metrics(cfg.file, settings, env)
    after = time.time()
    manifest = present(read_manifest(cfg.output.dataset(cfg.name), "batch=00000001"))
    newest = manifest["max_timestamp"] / 1000
    return manifest, (before - newest, after - newest), after - before


def lag_of(manifest):
    return sum(s["lag"] for s in manifest["splits"])


def test_run_figures_reach_a_statsd_server(pipeline):
    listener = StatsdListener()
    try:
        manifest, age, took = run(pipeline, {
            "statsd_on": True, "statsd_host": "127.0.0.1", "statsd_port": listener.port,
            "statsd_influxdb_enabled": True, "otel_on": False})
        wait_for(lambda: any(".commit.duration" in line for line in listener.lines), 120,
                 "the commit's timing")
    finally:
        listener.stop()
    got = {}
    for line in listener.lines:  # airflow.streamslice.records,pipeline=…,source=kafka:16|c
        name, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        got[name] = (float(value), kind)
    tags = f",pipeline={pipeline.name},source=kafka"

    def sent(name):
        return got[f"airflow.streamslice.{name}{tags}"]
    for name, count in COUNTS.items():
        assert sent(name) == (count, "c"), name
        # Plain StatsD drops tags: the name that carries the pipeline, as Airflow's own do.
        assert got[f"airflow.streamslice.{name}.{pipeline.name},source=kafka"] == (count, "c")
    assert manifest["records"] == 16 and lag_of(manifest) is not None
    assert sent("lag_records") == (lag_of(manifest), "g")
    value, kind = sent("data_age")
    assert kind == "g" and age[0] <= value <= age[1]
    for step in ("plan", "read", "commit"):
        value, kind = sent(f"{step}.duration")
        assert kind == "ms" and 0 < value < took * 1000, step
    assert f"airflow.streamslice.lag_ms{tags}" not in got  # a Kafka run has no time behind
    sent_names = {n.split(",")[0].removeprefix("airflow.streamslice.") for n in got
                  if n.startswith("airflow.streamslice.") and f",pipeline={pipeline.name}" in n}
    assert sent_names == set(NAMES) - {"lag_ms"}


def test_run_figures_reach_an_opentelemetry_collector(pipeline):
    receiver = OtlpReceiver()
    try:
        # Where the collector is, in OpenTelemetry's own variables (as Airflow advises).
        manifest, age, took = run(pipeline, {"otel_on": True, "statsd_on": False}, {
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT":
                f"http://127.0.0.1:{receiver.port}/v1/metrics",
            "OTEL_METRIC_EXPORT_INTERVAL": "1000"})
        wait_for(lambda: any(n == "airflow.streamslice.commit.duration"
                             for n, _, _ in receiver.points), 120, "the commit's timing")
    finally:
        receiver.stop()
    tags = {"pipeline": pipeline.name, "source": "kafka"}
    latest = {}  # cumulative figures: the latest export holds all
    for name, attrs, value in receiver.points:
        if attrs == tags:
            latest[name.removeprefix("airflow.streamslice.")] = value
    for name, count in COUNTS.items():
        assert latest[name] == count, name
    assert latest["lag_records"] == lag_of(manifest)
    assert age[0] <= latest["data_age"] <= age[1]
    for step in ("plan", "read", "commit"):
        count, total_ms = latest[f"{step}.duration"]
        assert count == 1 and 0 < total_ms < took * 1000, step
    assert set(latest) == set(NAMES) - {"lag_ms"}
