"""Chaos for ``spark.readStream``: a Trigger.AvailableNow query is SIGKILLed (its process,
Spark JVM and Python workers) in the middle of a batch, after earlier batches of the same
checkpoint have committed, and started again: the output holds every record exactly once.
A Kafka topic, a Kinesis stream (checked against the ledger of what PutRecords stored: shard
and sequence number) and a folder of files (``streamslice-files``: every line) into Spark's
file sink, read as Spark reads its output (through its ``_spark_metadata`` log); Kafka and
Kinesis through ``foreachBatch`` into a Delta or Iceberg table by streamslice's publishers,
killed in a read, before the table's commit and after it (before Spark's), read back with
deltalake and pyiceberg. Real broker, real Kinesis server, real Spark local[2] in a process
of its own."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from devtools.services import create_topic
from tests.conftest import ROOT
from tests.support.kafka import producer
from tests.support.pipelines import unique

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    Run = Callable[[str | None], subprocess.CompletedProcess[str]]
    Row = tuple[int, Any, Any]  # a value and where it was read (partition and offset, ...)

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
READ_KILL = "read:split=1:after=5"
# Where a foreachBatch into a table is killed: in a read, before the table's commit, after it
TABLE_KILLS = [("delta", READ_KILL), ("delta", "table_commit"), ("delta", "after_publish"),
               ("iceberg", "table_commit"), ("iceberg", "after_publish")]
# The columns of a table's rows (the source's): the value and where it was read
TABLE_COLUMNS = {"kafka": ("value", "partition", "offset"),
                 "kinesis": ("data", "shardId", "sequenceNumber")}


def stream_query(tmp_path: Path, source: str, sink: str, *args: str) -> Run:
    """Runs ``tests.chaos.stream_query`` for ``source`` into ``sink`` (limit and where first
    in ``args``), with a fault that kills it, or none."""
    def run(fault: str | None) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
        env.pop("STREAMSLICE_INJECT_FAULT", None)
        if fault:
            env["STREAMSLICE_INJECT_FAULT"] = f"{fault}:action=kill"
        argv = [sys.executable, "-m", "tests.chaos.stream_query", source, sink,
                str(tmp_path / "checkpoint"), str(tmp_path / "out"), *args]
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600, start_new_session=True)
    return run


def kill_then_restart(run: Run, add: Callable[[Iterable[int]], object],
                      read: Callable[[], list[Row]], point: str = READ_KILL) -> list[Row]:
    """The chaos every source and sink share: 100 records read by a first query, 200 added,
    a query SIGKILLed at ``point`` in a batch of the second run, then run again; returns the
    rows of the output at the end."""
    add(range(100))
    first = run(None)
    assert first.returncode == 0, first.stderr[-3000:]
    add(range(100, 300))
    killed = run(point)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    assert 100 <= len(read()) < 300, "the kill came in a batch of the second run"
    again = run(None)
    assert again.returncode == 0, again.stderr[-3000:]
    return read()


def file_sink(spark: Any, tmp_path: Path) -> Callable[[], list[Row]]:
    """The rows of Spark's file sink, as Spark reads them (value, where it was read)."""
    return lambda: [(int(r[0]), r[1], r[2])
                    for r in spark.read.parquet(str(tmp_path / "out")).collect()]


def table(source: str, sink: str, tmp_path: Path) -> Callable[[], list[Row]]:
    """The rows of the table, as deltalake or pyiceberg reads them."""
    def read() -> list[Row]:
        t = read_table(sink, tmp_path / "out")
        value, *where = (t.column(c).to_pylist() for c in TABLE_COLUMNS[source])
        return [(int(v), a, b) for v, a, b in zip(value, *where)]
    return read


def assert_once(rows: list[Row], count: int = 300) -> None:
    assert sorted(v for v, _, _ in rows) == list(range(count))
    assert len({(a, b) for _, a, b in rows}) == count


def send(broker: Any, topic: str, values: Iterable[int]) -> None:
    with producer(broker.bootstrap) as p:
        for v in values:
            p.produce(topic, value=str(v).encode(), partition=v % 2)


def kafka_topic(broker: Any) -> str:
    topic = unique("stream-chaos")
    create_topic(broker.bootstrap, topic, 2)
    return topic


def test_kill_a_query_mid_batch_then_restart_exactly_once_with_the_file_sink(spark, broker,
                                                                                tmp_path):
    topic = kafka_topic(broker)
    rows = kill_then_restart(
        stream_query(tmp_path, "kafka", "files", "40", broker.bootstrap, topic),
        lambda values: send(broker, topic, values), file_sink(spark, tmp_path))
    assert_once(rows)


def write_files(folder: Path, numbers: Iterable[int], per_file: int = 20) -> None:
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
    rows = kill_then_restart(stream_query(tmp_path, "files", "files", "2", str(folder)),
                             lambda values: write_files(folder, values),
                             file_sink(spark, tmp_path))
    assert_once(rows)


@pytest.mark.parametrize(("sink", "point"), TABLE_KILLS)
def test_kill_a_foreachBatch_into_a_table_then_restart_exactly_once(broker, tmp_path, sink,
                                                                     point):
    topic = kafka_topic(broker)
    rows = kill_then_restart(
        stream_query(tmp_path, "kafka", sink, "40", broker.bootstrap, topic),
        lambda values: send(broker, topic, values), table("kafka", sink, tmp_path), point)
    assert_once(rows)


def put_spread(client: Any, stream: str, values: list[int]) -> list[Row]:
    """Records in small PutRecords calls, each in an arrival millisecond of its own, so the
    batches' cuts (maxFetchRecordsPerShard) can fall between them; returns the ledger of what
    PutRecords stored (value, shard, sequence number)."""
    from tests.support.kinesis import put_spread as spread
    stored = spread(client, stream, [str(v).encode() for v in values], 10, 0.002)
    return [(v, shard, seq) for v, (shard, seq) in zip(values, stored)]


def kinesis_chaos(kinesis: Any, tmp_path: Path, sink: str, read: Callable[[], list[Row]],
                  point: str = READ_KILL) -> None:
    """The Kinesis stream's batches end at arrival-time cuts: a batch killed and run again
    reads the same records, and the output holds every record put once, checked against the
    ledger of what PutRecords stored (value, shard and sequence number)."""
    from tests.support.kinesis import create_stream
    client = kinesis.client()
    stream = unique("kstream-chaos")
    create_stream(client, stream, 2)
    ledger: list[Row] = []
    rows = kill_then_restart(
        stream_query(tmp_path, "kinesis", sink, "40", kinesis.endpoint, stream),
        lambda values: ledger.extend(put_spread(client, stream, list(values))), read, point)
    assert sorted(rows) == sorted(ledger)


def test_kill_a_kinesis_query_mid_batch_then_restart_exactly_once_with_the_file_sink(
        spark, kinesis, tmp_path):
    kinesis_chaos(kinesis, tmp_path, "files", file_sink(spark, tmp_path))


# The publishers' kill points are the same code for every source (the Kafka case has them
# all); what is the Kinesis source's own is that a batch run again reads to the same cuts.
KINESIS_TABLE_KILLS = [("delta", READ_KILL), ("iceberg", "after_publish")]


@pytest.mark.parametrize(("sink", "point"), KINESIS_TABLE_KILLS)
def test_kill_a_kinesis_foreachBatch_into_a_table_then_restart_exactly_once(kinesis, tmp_path,
                                                                             sink, point):
    kinesis_chaos(kinesis, tmp_path, sink, table("kinesis", sink, tmp_path), point)


def read_table(sink: str, output: Path) -> Any:
    """The table's rows as a pyarrow table."""
    if sink == "delta":
        from deltalake import DeltaTable
        return DeltaTable(str(output / "pipeline=stream")).to_pyarrow_table()
    from pyiceberg.catalog import load_catalog

    from tests.chaos.stream_query import iceberg_catalog
    catalog = load_catalog("streamslice", **iceberg_catalog(str(output)))
    return catalog.load_table("streamslice.stream").scan().to_arrow()
