"""Kinesis slices through Airflow (dag.test), real Spark and a real Kinesis-compatible server."""
import json
import os
import time
from collections import Counter
from datetime import datetime, timezone

import pyarrow.dataset as ds
import pytest

from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
from tests.support.checks import present
from tests.support.connections import aws_connection
from tests.support.kinesis import all_records, create_stream, put, wait_active
from tests.support.pipelines import kinesis_pipeline, parsed, run_dag, unique
from tests.support.wait import wait_until_clock

pytestmark = pytest.mark.integration


def _rows(path):
    t = ds.dataset(path, format="parquet").to_table(columns=["shardId", "sequenceNumber"])
    return list(zip(t.column("shardId").to_pylist(), t.column("sequenceNumber").to_pylist()))


def test_at_timestamp_intervals_match_arrival_times(kinesis, spark, airflow_db, monkeypatch,
                                                    tmp_path):
    aws_connection(monkeypatch, "test_aws", kinesis.endpoint)
    client = kinesis.client()
    stream = unique("trips")
    create_stream(client, stream, 4)
    width = 4
    start = (int(time.time()) // width + 1) * width  # the next boundary
    wait_until_clock(start)
    sent = []
    for second in range(3 * width):  # a wave a second, paced by the clock
        sent += put(client, stream, [json.dumps({"n": second * 100 + i}).encode()
                                     for i in range(100)])
        wait_until_clock(start + second + 1)
    wait_until_clock(start + 3 * width + 0.5)  # the last interval is over
    truth = all_records(client, stream)
    assert set(truth) == set(sent)
    begin = datetime.fromtimestamp(start, tz=timezone.utc)
    cfg = kinesis_pipeline(stream, name=unique("kin_interval"), mode="interval",
                           schedule=f"{width}s", start_date=begin.isoformat(), retries=0,
                           kinesis={"conn_id": "test_aws", "polling": {"interval": "50ms"}},
                           format={"value": "json", "schema": {"n": "long"}}, output=tmp_path)
    seen: Counter[tuple[str, str]] = Counter()
    for k in range(3):
        end = datetime.fromtimestamp(start + (k + 1) * width, tz=timezone.utc)
        run_dag(cfg, logical_date=end)
        begins = datetime.fromtimestamp(start + k * width, tz=timezone.utc)
        part = f"{cfg.output.dataset(cfg.name)}/interval={begins.strftime('%Y%m%dT%H%M%SZ')}"
        rows = _rows(part)
        lo, hi = (start + k * width) * 1000, (start + (k + 1) * width) * 1000
        expected = {r for r, ms in truth.items() if lo <= ms < hi}
        assert len(expected) > 300, "each interval should hold several waves"
        assert set(rows) == expected and len(rows) == len(expected), f"interval {k}"
        seen.update(rows)
        manifest = json.load(open(f"{part}/_manifest.json"))
        assert all(s["millis_behind_latest"] is not None for s in manifest["splits"])
    assert set(seen) == set(sent) and set(seen.values()) == {1}


def test_incremental_across_split_and_merge(kinesis, spark, airflow_db, monkeypatch, tmp_path):
    aws_connection(monkeypatch, "test_aws", kinesis.endpoint)
    client = kinesis.client()
    stream = unique("reshard")
    create_stream(client, stream, 2)
    cfg = kinesis_pipeline(stream, name=unique("kin_incr"), retries=0, output=tmp_path,
                           kinesis={"conn_id": "test_aws", "polling": {"interval": "50ms"}})

    def produce(n):
        return put(client, stream, [os.urandom(20) for _ in range(n)],
                   key=lambda i: f"k{time.time_ns()}-{i}")

    sent = produce(400)
    run_dag(cfg)
    shards = {s["ShardId"]: s for s in client.list_shards(StreamName=stream)["Shards"]}
    first, second = sorted(shards)
    lo, hi = (int(x) for x in shards[first]["HashKeyRange"].values())
    client.split_shard(StreamName=stream, ShardToSplit=first,
                       NewStartingHashKey=str((int(shards[first]["HashKeyRange"]
                                                   ["StartingHashKey"]) + hi) // 2))
    wait_active(client, stream)
    sent += produce(400)
    run_dag(cfg)  # reads the closed parent to its end; its children wait for it
    sent += produce(200)
    run_dag(cfg)  # the children start from TRIM_HORIZON
    shards = {s["ShardId"]: s for s in client.list_shards(StreamName=stream)["Shards"]}
    open_ = sorted(s for s, d in shards.items()
                   if "EndingSequenceNumber" not in d["SequenceNumberRange"])
    upper_child = max((s for s in open_ if shards[s].get("ParentShardId") == first),
                      key=lambda s: int(shards[s]["HashKeyRange"]["StartingHashKey"]))
    client.merge_shards(StreamName=stream, ShardToMerge=upper_child,
                        AdjacentShardToMerge=second)
    wait_active(client, stream)
    sent += produce(300)
    for _ in range(3):
        run_dag(cfg)

    dataset = cfg.output.dataset(cfg.name)
    batch_of = {}
    for name in sorted(os.listdir(dataset)):
        if name.startswith("batch="):
            for row in _rows(f"{dataset}/{name}"):
                assert row not in batch_of, f"{row} read twice"
                batch_of[row] = int(name.split("=")[1])
    assert set(batch_of) == set(sent)
    shards = {s["ShardId"]: s for s in client.list_shards(StreamName=stream)["Shards"]}
    for sid, d in shards.items():  # every child's records come in a later batch than its parents'
        parents = [p for p in (d.get("ParentShardId"), d.get("AdjacentParentShardId")) if p]
        child = [b for (s, _), b in batch_of.items() if s == sid]
        for p in parents:
            parent = [b for (s, _), b in batch_of.items() if s == p]
            if child and parent:
                assert min(child) > max(parent), f"{sid} read before its parent {p} finished"
    children = [s for s, d in shards.items() if d.get("ParentShardId")]
    assert len(children) == 3 and all(any(s == c for s, _ in batch_of) for c in children)
    cp = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    closed = [s for s, d in shards.items() if "EndingSequenceNumber" in d["SequenceNumberRange"]]
    assert all(cp.positions[f"{stream}:{s}"] == {"finished": True} for s in closed)


def test_flink_keys_plan_the_same_as_native_keys(kinesis):
    from streamslice.config import parse_pipeline
    from streamslice.planning.planner import plan_run
    client = kinesis.client()
    stream = unique("flinkmap")
    create_stream(client, stream, 3)
    put(client, stream, [b"x"] * 30)
    native = parse_pipeline(f"""
mode: incremental
kinesis:
  stream: {stream}
  region: us-east-1
  endpoint_url: {kinesis.endpoint}
  credentials: {{access_key_id: test, secret_access_key: test}}
  start: {{AT_TIMESTAMP: 1459799926.480}}
  polling: {{max_records: 250}}
output: {{path: /tmp/unused}}
""")
    flink = parse_pipeline(f"""
mode: incremental
kinesis:
  stream: {stream}
  flink_properties:
    aws.region: us-east-1
    aws.endpoint: {kinesis.endpoint}
    aws.credentials.provider: BASIC
    aws.credentials.provider.basic.accesskeyid: test
    aws.credentials.provider.basic.secretkey: test
    flink.stream.initpos: AT_TIMESTAMP
    flink.stream.initpos.timestamp: "1459799926.480"
    flink.shard.getrecords.maxrecordcount: 250
output: {{path: /tmp/unused}}
""")
    plans = [plan_run(cfg.source, pipeline="p", mode="incremental", now_ms=1_800_000_000_000,
                      properties=cfg.source.client_properties()).to_dict()
             for cfg in (native, flink)]
    assert plans[0] == plans[1]
    splits, info = plans[0]["splits"], plans[0]["source_info"]
    assert isinstance(splits, list) and len(splits) == 3 and isinstance(splits[0], dict)
    assert splits[0]["start"] == {"type": "AT_TIMESTAMP", "timestamp": 1459799926480}
    assert isinstance(info, dict) and isinstance(info["polling"], dict)
    assert info["polling"]["max_records"] == 250


def test_stream_by_arn_with_kpl_aggregated_records(kinesis, spark):
    from aws_kinesis_agg.aggregator import RecordAggregator
    client = kinesis.client()
    stream = unique("kpl")
    arn = create_stream(client, stream, 1)
    agg = RecordAggregator()
    for i in range(3):
        agg.add_user_record(f"user-{i}", f"payload-{i}".encode())
    pk, _, data = agg.clear_and_get().get_contents()
    client.put_record(StreamName=stream, Data=data, PartitionKey=pk)
    client.put_record(StreamName=stream, Data=b"plain", PartitionKey="p")
    df = (spark.read.format("streamslice-kinesis").option("streamName", arn)
          .option("region", "us-east-1").option("endpointUrl", kinesis.endpoint)
          .option("aws.access_key_id", "test").option("aws.secret_access_key", "test").load())
    rows = sorted((r.partitionKey, r.subSequenceNumber, bytes(r.data), r.stream)
                  for r in df.collect())
    assert rows == [("p", None, b"plain", stream), ("user-0", 0, b"payload-0", stream),
                    ("user-1", 1, b"payload-1", stream), ("user-2", 2, b"payload-2", stream)]


def test_wrong_kinesis_input_is_refused_before_reading(kinesis, monkeypatch):
    """A mistyped shard id or a sequence number that is not in its shard is refused when the
    run plans; a missing stream, no region or a bad endpoint is one clear, non-transient
    error, not a botocore traceback."""
    from streamslice.errors import ConfigError, PlanError
    from streamslice.planning.planner import plan_run
    client = kinesis.client()
    stream = unique("wrong")
    create_stream(client, stream, 1)
    (_, seq), = put(client, stream, [b"x"])

    def plan(start="TRIM_HORIZON", name=stream, endpoint=kinesis.endpoint, region="us-east-1"):
        cfg = parsed("kinesis", {"stream": name, **({"region": region} if region else {}),
                                 "endpoint_url": endpoint, "start": start, "credentials": {
                                     "access_key_id": "test", "secret_access_key": "test"}},
                     output="/tmp/unused")
        return plan_run(cfg.source, pipeline="p", mode="incremental",
                        properties=cfg.source.client_properties())

    assert len(plan({"AT_SEQUENCE_NUMBER": {"shardId-000000000000": seq}}).splits) == 1
    with pytest.raises(ConfigError, match="'shardId-000000000009' is not a shard of"):
        plan({"AT_SEQUENCE_NUMBER": {"shardId-000000000009": "1"}})
    bogus = str(int(seq) + 10 ** 20)
    with pytest.raises(ConfigError, match=f"sequence number {bogus} is not in shard"):
        plan({"AFTER_SEQUENCE_NUMBER": {"shardId-000000000000": bogus}})
    # the same found only when the read starts (a checkpoint written around the checks) is
    # a configuration error too, not a source error Airflow would retry to no purpose
    from streamslice.kinesis.polling import PollingSettings, shard_iterator
    from streamslice.kinesis.positions import AfterSequenceNumber, AtSequenceNumber
    from streamslice.kinesis.split import KinesisSplit
    split = KinesisSplit(0, stream, "shardId-000000000000", {}, 2**62)
    for position in (AtSequenceNumber(bogus), AfterSequenceNumber(bogus)):
        with pytest.raises(ConfigError) as info:
            shard_iterator(client, split, position, PollingSettings())
        assert not info.value.transient
        assert str(info.value).startswith(f"{stream}:shardId-000000000000: sequence number "
                                          f"{bogus} is not in shard shardId-000000000000 (")
    assert shard_iterator(client, split, AtSequenceNumber(seq), PollingSettings())
    with pytest.raises(PlanError, match="Kinesis stream 'nope-123' does not exist"):
        plan(name="nope-123")
    with pytest.raises(ConfigError, match="kinesis.endpoint_url: 'not-a-url' is not an "
                                          "endpoint URL"):
        plan(endpoint="not-a-url")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(ConfigError, match="no AWS region"):
        plan(region=None)
