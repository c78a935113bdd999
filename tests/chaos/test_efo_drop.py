"""A network drop in the middle of SubscribeToShard, seen from a whole DAG run (dag.test: EFO
setup, plan, the Spark read, commit, teardown): the proxy in front of the Kinesis server cuts
the first subscriptions halfway through their first event (botocore reads an incomplete
chunked body: ``ProtocolError``). The readers resubscribe where they were; the run succeeds
with every record once and the resubscriptions in its manifest."""
import json
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from devtools.services import free_port, wait_for_port
from tests.conftest import ROOT
from tests.integration.test_kinesis_efo import consumers
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kinesis_pipeline, run_dag, unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
DROPS = 2


@pytest.fixture
def dropping_proxy(kinesis):
    """A second proxy in front of the same server that cuts its first DROPS subscriptions."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devtools.kinesis_proxy", "--listen-port",
                             str(port), "--upstream-port", str(kinesis.port),
                             "--drop-subscriptions", str(DROPS)], cwd=ROOT)
    wait_for_port(port, what="dropping Kinesis proxy")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def test_an_efo_run_survives_dropped_subscriptions(kinesis, dropping_proxy, spark, airflow_db,
                                                   tmp_path):
    client = kinesis.client()
    stream = unique("efo-drop")
    arn = create_stream(client, stream, 2)
    sent = put(client, stream, [b'{"n": %d}' % i for i in range(200)])
    cfg = kinesis_pipeline(stream, name=unique("efo_drop"), retries=0, output=tmp_path,
                           kinesis={"region": "us-east-1", "endpoint_url": dropping_proxy,
                                    "credentials": {"access_key_id": "test",
                                                    "secret_access_key": "test"},
                                    "reader": "efo", "efo": {"consumer_name": "ss-drop"}})
    run_dag(cfg)  # retries: 0 — only the readers' own resubscription can save it
    part = f"{cfg.output.dataset(cfg.name)}/batch=00000001"
    t = ds.dataset(part, format="parquet").to_table(columns=["shardId", "sequenceNumber"])
    assert sorted(zip(t.column("shardId").to_pylist(),
                      t.column("sequenceNumber").to_pylist())) == sorted(sent)
    with open(f"{part}/_manifest.json") as f:
        splits = json.load(f)["splits"]
    assert {s["reader"] for s in splits} == {"efo"}
    assert sum(s["resubscriptions"] for s in splits) == DROPS
    assert consumers(client, arn) == {}
