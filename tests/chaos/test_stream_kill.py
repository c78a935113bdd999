"""Chaos for ``spark.readStream``: a Trigger.AvailableNow query is SIGKILLed (its process,
Spark JVM and Python workers) in the middle of a batch, after earlier batches of the same
checkpoint have committed, and started again: the output holds every record of the topic
exactly once (or, for ``streamslice-files``, every line of the folder's files). Into Spark's
file sink, read as Spark reads its output (through its
``_spark_metadata`` log); through ``foreachBatch`` into a Delta table by streamslice's
publisher, killed in a read, before the table's commit and after it (before Spark's). Real
broker, real Spark local[2] in a process of its own."""
import os
import signal
import subprocess
import sys
import time

import pytest

from devtools.services import create_topic
from tests.conftest import ROOT
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def query(broker, topic, tmp_path, fault=None, sink="files"):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
    env.pop("STREAMSLICE_INJECT_FAULT", None)
    if fault:
        env["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
    args = [sys.executable, "-m", "tests.chaos.stream_query", broker.bootstrap, topic,
            str(tmp_path / "checkpoint"), str(tmp_path / "out"), "40", sink]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, start_new_session=True)


def files_query(folder, tmp_path, fault=None):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
    env.pop("STREAMSLICE_INJECT_FAULT", None)
    if fault:
        env["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
    args = [sys.executable, "-m", "tests.chaos.stream_query", "files", str(folder),
            str(tmp_path / "checkpoint"), str(tmp_path / "out"), "2"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, start_new_session=True)


def kill_then_restart(spark, tmp_path, run, add):
    """The chaos all three sources share: 100 records read by a first query, 200 added, a
    query SIGKILLed in the middle of a batch of the second run, then run again; returns the
    rows of Spark's file sink at the end."""
    add(range(100))
    first = run(None)
    assert first.returncode == 0, first.stderr[-3000:]
    add(range(100, 300))
    killed = run("read:split=1:after=5")
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    committed = spark.read.parquet(str(tmp_path / "out")).count()
    assert 100 <= committed < 300, "the kill came in a batch of the second run"
    again = run(None)
    assert again.returncode == 0, again.stderr[-3000:]
    return spark.read.parquet(str(tmp_path / "out")).collect()


def send(broker, topic, values):
    with producer(broker.bootstrap) as p:
        for v in values:
            p.produce(topic, value=str(v).encode(), partition=v % 2)


def test_kill_a_query_mid_batch_then_restart_exactly_once_with_the_file_sink(spark, broker,
                                                                                tmp_path):
    topic = unique("stream-chaos")
    create_topic(broker.bootstrap, topic, 2)
    rows = kill_then_restart(spark, tmp_path, lambda fault: query(broker, topic, tmp_path, fault),
                             lambda values: send(broker, topic, values))
    assert sorted(int(r.v) for r in rows) == list(range(300))
    assert len({(r.partition, r.offset) for r in rows}) == 300


def write_files(folder, numbers, per_file=20):
    """``numbers`` as JSON Lines, ``per_file`` to a file; the first goes on the end of the
    last file there, so a batch also reads on in a file that grew."""
    numbers = list(numbers)
    names = sorted(folder.glob("*.jsonl"))
    if names:
        with open(names[-1], "a") as f:
            f.write("".join(f'{{"n": {n}}}\n' for n in numbers[:5]))
        numbers = numbers[5:]
    for i in range(0, len(numbers), per_file):
        path = folder / f"{numbers[i]:05d}.jsonl"
        path.write_text("".join(f'{{"n": {n}}}\n' for n in numbers[i:i + per_file]))


def test_kill_a_files_query_mid_batch_then_restart_exactly_once(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    rows = kill_then_restart(spark, tmp_path, lambda fault: files_query(folder, tmp_path, fault),
                             lambda values: write_files(folder, values))
    assert sorted(r.n for r in rows) == list(range(300))
    assert len({(r.file, r.line) for r in rows}) == 300


@pytest.mark.parametrize(("sink", "point"), [
    ("delta", "read:split=1:after=5"), ("delta", "table_commit"), ("delta", "after_publish"),
    ("iceberg", "after_publish")])
def test_kill_a_foreachBatch_into_a_table_then_restart_exactly_once(broker, tmp_path, sink,
                                                                     point):
    topic = unique("stream-table")
    create_topic(broker.bootstrap, topic, 2)
    send(broker, topic, range(100))
    first = query(broker, topic, tmp_path, sink=sink)
    assert first.returncode == 0, first.stderr[-3000:]
    send(broker, topic, range(100, 300))
    killed = query(broker, topic, tmp_path, fault=point, sink=sink)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    again = query(broker, topic, tmp_path, sink=sink)
    assert again.returncode == 0, again.stderr[-3000:]
    table = read_table(sink, tmp_path / "out")
    assert sorted(int(v) for v in table.column("value").to_pylist()) == list(range(300))
    pairs = set(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert len(pairs) == 300


def kinesis_query(kinesis, stream, tmp_path, fault=None):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
    env.pop("STREAMSLICE_INJECT_FAULT", None)
    if fault:
        env["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
    args = [sys.executable, "-m", "tests.chaos.stream_query", "kinesis", kinesis.endpoint,
            stream, str(tmp_path / "checkpoint"), str(tmp_path / "out"), "40"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, start_new_session=True)


def put_spread(client, stream, values):
    """Records in small PutRecords calls, each in an arrival millisecond of its own, so the
    batches' cuts (maxFetchRecordsPerShard) can fall between them."""
    from tests.support.kinesis import put
    from tests.support.wait import wait_until_clock
    ledger: list[tuple[int, tuple[str, str]]] = []
    for lo in range(0, len(values), 10):
        chunk = values[lo:lo + 10]
        ledger += zip(chunk, put(client, stream, [str(v).encode() for v in chunk]))
        wait_until_clock(time.time() + 0.002)
    return ledger


def test_kill_a_kinesis_query_mid_batch_then_restart_exactly_once_with_the_file_sink(
        spark, kinesis, tmp_path):
    """The Kinesis stream's batches end at arrival-time cuts: a batch killed in its read and
    run again reads the same records, and the output holds every record put once, checked
    against the ledger of what PutRecords stored (shard and sequence number)."""
    from tests.support.kinesis import create_stream
    client = kinesis.client()
    stream = unique("kstream-chaos")
    create_stream(client, stream, 2)
    ledger: list[tuple[int, tuple[str, str]]] = []
    rows = kill_then_restart(spark, tmp_path,
                             lambda fault: kinesis_query(kinesis, stream, tmp_path, fault),
                             lambda values: ledger.extend(put_spread(client, stream, list(values))))
    got = sorted((int(r.v), r.shardId, r.sequenceNumber) for r in rows)
    assert got == sorted((v, shard, seq) for v, (shard, seq) in ledger)


def read_table(sink, output):
    if sink == "delta":
        from deltalake import DeltaTable
        return DeltaTable(str(output / "pipeline=stream")).to_pyarrow_table()
    from pyiceberg.catalog import load_catalog

    from tests.chaos.stream_query import iceberg_catalog
    catalog = load_catalog("streamslice", **iceberg_catalog(str(output)))
    return catalog.load_table("streamslice.stream").scan().to_arrow()
