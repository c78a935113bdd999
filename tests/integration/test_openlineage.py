"""OpenLineage: the read and commit tasks' inputs and outputs, as Airflow's OpenLineage
provider sends them. Runs go through ``dag.test()`` in a process of their own whose Airflow
has a file transport configured (the provider reads its configuration once per process);
the test reads the events that transport wrote. Without a transport nothing of ours runs."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
RUNS = """
import sys
from devtools.dag_run import main
sys.exit(max(main(path) for path in sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def events(broker, kinesis, airflow_db, tmp_path_factory):
    """Three pipelines run with lineage on: Kafka → Parquet, Kinesis → Parquet, Kafka →
    Iceberg. Yields (the events by job and type, what was run)."""
    tmp = tmp_path_factory.mktemp("openlineage")
    topic = unique("ol")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 150, seed=7))
    client = kinesis.client()
    stream = unique("ol")
    arn = create_stream(client, stream, 2)
    put(client, stream, [json.dumps({"n": i}).encode() for i in range(40)])
    cfgs = {
        "kafka": kafka_pipeline(broker.bootstrap, topic, name=unique("ol_kafka"), retries=0,
                                output=tmp / "files"),
        "kinesis": kinesis_pipeline(stream, name=unique("ol_kinesis"), retries=0,
                                    output=tmp / "files", kinesis={
                                        "region": "us-east-1", "endpoint_url": kinesis.endpoint,
                                        "polling": {"interval": "50ms"}}),
        "iceberg": kafka_pipeline(broker.bootstrap, topic, name=unique("ol_iceberg"), retries=0,
                                  output={"path": f"{tmp}/lake", "format": "iceberg"}),
    }
    log = tmp / "events.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]),
               AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(
                   {"type": "file", "log_file_path": str(log), "append": True}),
               AIRFLOW__OPENLINEAGE__NAMESPACE="streamslice-test")
    out = subprocess.run([sys.executable, "-c", RUNS, *(c.file for c in cfgs.values())],
                         env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    found: dict[tuple[str, str], list[dict]] = {}
    for line in log.read_text().splitlines():
        event = json.loads(line)
        found.setdefault((event["job"]["name"], event["eventType"]), []).append(event)
    yield found, cfgs, {"topic": topic, "stream": stream, "arn": arn, "tmp": tmp}


def complete(found, cfg, task):
    got = found.get((f"{cfg.name}.{task}", "COMPLETE"))
    assert got and len(got) == 1, sorted(found)
    event = got[0]
    assert event["job"]["namespace"] == "streamslice-test"
    return event


@pytest.mark.parametrize("task", ["read", "commit"])
def test_kafka_topics_in_and_the_dataset_out_with_counts(events, broker, task):
    found, cfgs, ran = events
    cfg = cfgs["kafka"]
    event = complete(found, cfg, task)
    [source] = event["inputs"]
    assert (source["namespace"], source["name"]) == (f"kafka://{broker.bootstrap}",
                                                     ran["topic"])
    assert source["inputFacets"]["inputStatistics"]["rowCount"] == 150
    [out] = event["outputs"]
    assert (out["namespace"], out["name"]) == ("file", str(ran["tmp"] / "files" /
                                                          f"pipeline={cfg.name}"))
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 150
    run = event["run"]["facets"]["streamslice"]
    assert (run["pipeline"], run["partition"], run["records"]) == \
        (cfg.name, "batch=00000001", 150)
    start = found[(f"{cfg.name}.{task}", "START")][0]
    assert [(o["namespace"], o["name"]) for o in start["outputs"]] == \
        [(out["namespace"], out["name"])]  # before the plan is read: the output, no inlet


def test_kinesis_streams_are_named_by_their_arn(events):
    found, cfgs, ran = events
    region_account, _, name = ran["arn"].partition(":stream/")
    for task in ("read", "commit"):
        event = complete(found, cfgs["kinesis"], task)
        [source] = event["inputs"]
        assert (source["namespace"], source["name"]) == (region_account, f"stream/{name}")
        assert region_account.startswith("arn:aws:kinesis:us-east-1:")
        assert source["inputFacets"]["inputStatistics"]["rowCount"] == 40
        assert event["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 40


def test_an_iceberg_output_is_its_location_with_the_table_as_symlink(events):
    from pyiceberg.catalog import load_catalog
    found, cfgs, _ = events
    cfg = cfgs["iceberg"]
    target = cfg.output.target(cfg.name)
    location = load_catalog("streamslice", **target.catalog).load_table(target.table).location()
    event = complete(found, cfg, "commit")
    [out] = event["outputs"]
    assert (out["namespace"], out["name"]) == ("file", location.removeprefix("file://"))
    assert out["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "file", "name": target.table, "type": "TABLE"}]
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 150


def test_without_a_transport_our_lineage_code_never_runs(broker, spark, airflow_db, tmp_path,
                                                         monkeypatch):
    from streamslice.airflow.operators import StreamsliceOperator
    called = []
    for name in ("get_openlineage_facets_on_start", "get_openlineage_facets_on_complete"):
        monkeypatch.setattr(StreamsliceOperator, name, lambda *a, n=name: called.append(n))
    topic = unique("ol_off")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 10, seed=1))
    run_dag(kafka_pipeline(broker.bootstrap, topic, name=unique("ol_off"), retries=0,
                           output=tmp_path))
    assert called == []
