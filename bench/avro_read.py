"""Avro through a schema registry: streamslice against a raw confluent-kafka loop plus
fastavro's ``schemaless_reader`` per record, over the same records in the same run.

  raw      consume(10 000) and, per record, the value's 5-byte Confluent header skipped and
           ``fastavro.schemaless_reader`` with the writer schema parsed once: the plain
           decode (no Arrow, no Parquet), in a process of its own
  reader   streamslice's split reader with ``value: avro`` through the registry (frames,
           writer schemas cached per id, Avro → Arrow), one split per partition, no Spark
  e2e      plan + Spark local[*] + the readers writing Parquet, one split per partition

Records are written by confluent-kafka's AvroSerializer against the local registry
(devtools/schema_registry.py): a taxi-trip record of 11 fields (decimal, timestamp-millis,
a nullable double, strings). Medians of --repeat runs; prints ratios, asserts nothing.
  python bench/avro_read.py [--records 500000] [--partitions 4] [--repeat 3] [--end-to-end]
"""
from __future__ import annotations

import io
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from bench.children import ChildArgs, Measured
    from streamslice.config.pipeline import PipelineConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import (  # noqa: E402
    cpu_now,
    local_broker,
    parse_args,
    partition_ends,
    run_child,
)
from bench.kafka_bounded_read import BIG  # noqa: E402

TOPIC = "bench-avro"
SCHEMA = {"type": "record", "name": "Trip", "namespace": "bench", "fields": [
    {"name": "trip_id", "type": "string"}, {"name": "vendor_id", "type": "int"},
    {"name": "pickup", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "dropoff", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "passengers", "type": "int"}, {"name": "distance", "type": "double"},
    {"name": "fare", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                              "scale": 2}},
    {"name": "tip", "type": ["null", "double"], "default": None},
    {"name": "zone", "type": "string"}, {"name": "payment", "type": "string"},
    {"name": "paid", "type": "boolean"}]}


def produce(bootstrap: str, url: str, n: int, partitions: int) -> None:
    from datetime import datetime, timezone
    from decimal import Decimal

    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from devtools.services import create_topic
    create_topic(bootstrap, TOPIC, partitions)
    ser = AvroSerializer(SchemaRegistryClient({"url": url}), json.dumps(SCHEMA))
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "enable.idempotence": False})
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    for i in range(n):
        value = ser({"trip_id": f"trip-{i:010d}", "vendor_id": i % 3, "pickup": at,
                     "dropoff": at, "passengers": 1 + i % 4, "distance": i % 100 / 7,
                     "fare": Decimal(i % 10_000) / 100, "tip": None if i % 5 else 1.5,
                     "zone": "Upper East Side South", "payment": "card", "paid": True}, ctx)
        while True:
            try:
                p.produce(TOPIC, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.1)
    p.flush(120)


def child_raw(args: ChildArgs) -> tuple[int, float, float]:
    import fastavro
    from confluent_kafka import Consumer, TopicPartition
    schema = fastavro.parse_schema(SCHEMA)
    reader = fastavro.schemaless_reader
    ends = {int(p): e for p, e in args["ends"].items()}
    c = Consumer({"bootstrap.servers": args["bootstrap"], "group.id": "bench-avro",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "queued.min.messages": 200_000, "fetch.max.bytes": 64 * 1024 * 1024, **BIG})
    c.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    cpu, wall = cpu_now(), time.perf_counter()
    n, done = 0, set[int]()
    while len(done) < len(ends):
        for m in c.consume(10_000, timeout=1.0):
            if m.error():
                continue
            value, offset, partition = m.value(), m.offset(), m.partition()
            assert value is not None and offset is not None and partition is not None
            reader(io.BytesIO(value[5:]), schema)
            n += 1
            if offset + 1 >= ends[partition]:
                done.add(partition)
    c.close()
    return n, cpu_now() - cpu, time.perf_counter() - wall


def child_reader(args: ChildArgs) -> tuple[int, float, float]:
    import pyarrow as pa

    from streamslice.kafka.reader import KafkaSplitReader
    from streamslice.kafka.split import KafkaSplit
    from streamslice.reading.decode import Decoder
    pa.array([0])  # pyarrow imports pandas once per process
    import confluent_kafka.schema_registry  # noqa: F401 - and the registry client (httpx…)
    decoder = Decoder.from_dict(args["decode"], {"schema.registry.url": args["url"]})
    props = {"bootstrap.servers": args["bootstrap"], **BIG}
    n, cpu, wall = 0, cpu_now(), time.perf_counter()
    for p, end in args["ends"].items():
        split = KafkaSplit(int(p), TOPIC, int(p), 0, end)
        reader = KafkaSplitReader(split, properties=props, decoder=decoder,
                                  include_headers=False)
        n += sum(b.num_rows for b in reader.batches())
    return n, cpu_now() - cpu, time.perf_counter() - wall


def pipeline(bootstrap: str, url: str, out_dir: Path) -> PipelineConfig:
    from streamslice.config import parse_pipeline
    return parse_pipeline(f"""
mode: incremental
kafka:
  bootstrap_servers: {bootstrap}
  topics: [{TOPIC}]
  properties: {{receive.message.max.bytes: {BIG["receive.message.max.bytes"]}}}
format:
  value: avro
  registry: {{url: "{url}"}}
  subject: {TOPIC}-value
output:
  path: {out_dir}
""")


def end_to_end(cfg: PipelineConfig, url: str) -> tuple[int, float]:
    from streamslice.commit.protocol import staging_for
    from streamslice.commit.verify import verify
    from streamslice.planning.planner import plan_run
    from streamslice.spark.job import run_read
    from streamslice.spark.session import spark_session
    spark = spark_session()
    start = time.perf_counter()
    props = {**cfg.source.client_properties(), "schema.registry.url": url}
    plan = plan_run(cfg.source, pipeline="bench", mode="incremental", decode=cfg.decode,
                    output=cfg.output.target(cfg.name), properties=props)
    staging = staging_for(plan, f"avro-{time.time_ns()}")
    run_read(spark, plan, staging.uri, properties=props)
    elapsed = time.perf_counter() - start
    n = verify(plan, staging).records
    shutil.rmtree(staging.root, ignore_errors=True)
    return n, elapsed


def main() -> None:
    args = parse_args({"raw": child_raw, "reader": child_reader}, records=500_000)
    if args is None:
        return
    from devtools.services import SchemaRegistry
    from streamslice.planning.planner import plan_run
    with local_broker("streamslice-bench-avro-") as (work, broker):
        registry = SchemaRegistry().start()
        try:
            print(f"producing {args.records:,} Avro records into {args.partitions} partitions ...",
                  flush=True)
            produce(broker.bootstrap, registry.url, args.records, args.partitions)
            ends = partition_ends(args.records, args.partitions)
            cfg = pipeline(broker.bootstrap, registry.url, work / "out")
            decode = plan_run(cfg.source, pipeline="bench", mode="incremental", decode=cfg.decode,
                              properties={**cfg.source.client_properties(),
                                          "schema.registry.url": registry.url}).decode
            base = {"bootstrap": broker.bootstrap, "ends": ends, "url": registry.url,
                    "decode": decode}
            runs: dict[str, list[Measured]] = {"raw": [], "reader": []}
            e2e: list[tuple[int, float]] = []
            if args.end_to_end:
                end_to_end(cfg, registry.url)  # not measured: starts the JVM, warms the workers
            for i in range(args.repeat):  # interleaved, so drift in the machine's load hits all
                for kind in runs:
                    runs[kind].append(run_child(__file__, kind, base))
                if args.end_to_end:
                    e2e.append(end_to_end(cfg, registry.url))
                print(f"  round {i + 1}/{args.repeat} done", flush=True)
            report(runs, e2e, args)
        finally:
            registry.stop()


def report(runs: dict[str, list[Measured]], e2e: list[tuple[int, float]],
           args: argparse.Namespace) -> None:
    import os
    med = statistics.median
    print(f"\nmedians of {args.repeat} runs, {args.records:,} Avro records, "
          f"{args.partitions} partitions; load average at the end {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    raw_rate = med(n / w for n, _, w, _ in runs["raw"])
    raw_cpu = med(c / n * 1e6 for n, c, _, _ in runs["raw"])
    print(f"{'':<34}{'records':>10}{'rec/s':>11}{'CPU s/M':>9}{'rec/s vs raw':>14}")
    figures: dict[str, Any] = {}
    for kind, rs in runs.items():
        rate, cpu = med(n / w for n, _, w, _ in rs), med(c / n * 1e6 for n, c, _, _ in rs)
        label = {"raw": "raw loop + schemaless_reader", "reader": "split reader (avro)"}[kind]
        figures[kind] = {"cpu_s_per_m": round(cpu, 2), "records_per_s": round(rate),
                         "rate_ratio": round(rate / raw_rate, 2),
                         "cpu_ratio": round(cpu / raw_cpu, 2)}
        print(f"{label:<34}{rs[0][0]:>10,}{rate:>11,.0f}{cpu:>9.2f}{rate / raw_rate:>13.2f}x"
              f"   (CPU {cpu / raw_cpu:.2f}x)")
    if e2e:
        rate = med(n / s for n, s in e2e)
        figures["e2e"] = {"records_per_s": round(rate), "rate_ratio": round(rate / raw_rate, 2)}
        print(f"{'end to end (Spark, Parquet)':<34}{e2e[0][0]:>10,}{rate:>11,.0f}{'':>9}"
              f"{rate / raw_rate:>13.2f}x")
    figures["load"] = round(os.getloadavg()[0], 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
