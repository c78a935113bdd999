"""Chaos for Kinesis: the run is SIGKILLed while it reads shards with GetRecords (and at the
other phases) or with SubscribeToShard, then recovered by a retry and by a new run: the
output holds every record of the stream once. EFO consumers: a run killed mid-read, or a
process killed while registering or deregistering its per-run consumer, leaves nothing
behind once the retry's teardown or the sweeper has run.

Real Kinesis-compatible server (kinesis-local) over HTTP; real process kills."""
import os
import signal
import subprocess
import sys
import time

import pyarrow.dataset as ds
import pytest

from tests.chaos.test_kill import killed, succeeded
from tests.conftest import ROOT
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kinesis_pipeline, unique
from tests.support.wait import wait_until_clock

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
POINTS = ["plan", "read:split=1:after=1", "before_publish", "after_publish",
          "after_checkpoint"]


def env(fault=None):
    out = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
    out.pop("STREAMSLICE_INJECT_FAULT", None)
    if fault:
        out["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
    return out


def run(args, fault=None):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env(fault),
                          capture_output=True, text=True, timeout=300, start_new_session=True)


def chaos_run(kinesis, tmp_path, prefix, reader):
    """A 2-shard stream with 60 records and an incremental pipeline over it (``reader``: more
    keys of its kinesis section); ``go(run_id, try_number, fault)`` runs it in a process of
    its own. Returns (client, stream ARN, what was sent, go)."""
    client = kinesis.client()
    stream = unique(prefix)
    arn = create_stream(client, stream, 2)
    sent = put(client, stream, [f"r{i}".encode() for i in range(60)])
    pipeline = kinesis_pipeline(
        stream, name="chaos", folder=tmp_path, format={"value": "string"},
        output=tmp_path / "lake",
        kinesis={"region": "us-east-1", "endpoint_url": kinesis.endpoint,
                 "credentials": {"access_key_id": "test", "secret_access_key": "test"},
                 "polling": {"max_records": 7, "interval": "10ms"}, **reader}).file
    state = tmp_path / "state"
    state.mkdir()

    def go(run_id, try_number=1, fault=None):
        return run(["tests.chaos.run", str(pipeline), str(state), run_id, str(try_number)],
                   fault)
    return client, arn, sent, go


def read_back(tmp_path):
    """(shard, sequence number) of every record in the output, sorted."""
    table = ds.dataset(tmp_path / "lake" / "pipeline=chaos", format="parquet",
                       partitioning="hive").to_table(columns=["shardId", "sequenceNumber"])
    return sorted(zip(table.column("shardId").to_pylist(),
                      table.column("sequenceNumber").to_pylist()))


@pytest.mark.parametrize("recovery", ["retry", "new_run"])
@pytest.mark.parametrize("point", POINTS)
def test_kill_a_kinesis_run_then_recover_exactly_once(kinesis, tmp_path, point, recovery):
    _, _, sent, go = chaos_run(kinesis, tmp_path, "chaos", {})
    killed(go("victim", fault=point))
    succeeded(go("victim", 2) if recovery == "retry" else go("rescue"))
    assert read_back(tmp_path) == sorted(sent)  # every record, once


@pytest.mark.parametrize("action", ["register", "deregister"])
def test_a_killed_consumer_registration_leaves_nothing_after_the_sweeper(kinesis, action):
    from streamslice.kinesis.consumers import register, run_consumer_name, sweep
    client = kinesis.client()
    stream = unique("efo-chaos")
    arn = create_stream(client, stream, 1)
    name = run_consumer_name("ss-chaos", f"run-{action}")
    if action == "deregister":
        register(client, arn, name)
    out = run(["tests.chaos.efo", action, kinesis.endpoint, arn, name], f"efo_{action}")
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    created = [c["ConsumerCreationTimestamp"].timestamp()
               for c in client.list_stream_consumers(StreamARN=arn)["Consumers"]]
    wait_until_clock(max(created, default=time.time()) + 1.2)  # older than the sweep's 1s
    sweep(client, arn, "ss-chaos", older_than_s=1)
    left = client.list_stream_consumers(StreamARN=arn)["Consumers"]
    assert [c["ConsumerName"] for c in left if c["ConsumerStatus"] != "DELETING"] == []


@pytest.mark.parametrize("recovery", ["retry", "new_run"])
def test_kill_an_efo_read_then_recover_without_leaking_consumers(kinesis, tmp_path, recovery):
    """Killed in the middle of a SubscribeToShard read, a per_run run leaves its consumer
    registered (no teardown runs after a SIGKILL); the retry reuses it and deregisters it, a
    new run's sweeper removes it. Either way every record is read once, no consumer is left."""
    from streamslice.kinesis.consumers import run_consumer_name
    client, arn, sent, go = chaos_run(
        kinesis, tmp_path, "chaos-efo", {"reader": "efo", "efo": {
            "consumer_name": "ss-chaos", "registration": "per_run", "sweep_older_than": "1s"}})

    def consumers():
        return {c["ConsumerName"]: c for c in
                client.list_stream_consumers(StreamARN=arn)["Consumers"]}
    killed(go("victim", fault="read:split=1:after=1"))
    leaked = consumers()
    assert list(leaked) == [run_consumer_name("ss-chaos", "victim")]  # no teardown ran
    created = leaked[run_consumer_name("ss-chaos", "victim")]["ConsumerCreationTimestamp"]
    wait_until_clock(created.timestamp() + 1.2)  # older than sweep_older_than
    succeeded(go("victim", 2) if recovery == "retry" else go("rescue"))
    assert read_back(tmp_path) == sorted(sent)  # every record, once
    import json
    manifest = json.loads((tmp_path / "lake" / "pipeline=chaos" / "batch=00000001" /
                           "_manifest.json").read_text())
    assert {s["reader"] for s in manifest["splits"]} == {"efo"}
    assert consumers() == {}
