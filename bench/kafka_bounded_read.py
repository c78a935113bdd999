"""Bounded Kafka read throughput: streamslice end to end (plan + Spark + Parquet) against
baselines measured in the same run on the same broker and records.

  (a) one plain confluent-kafka consumer loop over the whole range
  (b) kcat reading the topic (Debian package kcat; skipped if absent)
  (c) one plain kafka-python consumer loop (on a subset: it is slow)
  (d) streamslice: plan + Spark local[*] + Parquet, with each client; JVM start reported apart

Prints records/s and the ratios d/a and d/b. Asserts nothing.
  python bench/kafka_bounded_read.py [--records 2000000] [--size 200] [--subset 200000]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from streamslice.config.pipeline import Decoding

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import cpu_now, local_broker  # noqa: E402

TOPIC, SMALL = "bench", "bench-small"
# noida-db ignores fetch.max.bytes and answers a fetch with the whole remaining log; real Kafka
# caps responses. Every librdkafka client here (baseline and ours) gets the same larger limit.
BIG = {"receive.message.max.bytes": 2_147_483_647}


def produce(bootstrap: str, n: int, size: int, partitions: int, topic: str = TOPIC) -> None:
    from confluent_kafka import Producer

    from devtools.services import create_topic
    create_topic(bootstrap, topic, partitions)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                  "batch.num.messages": 100_000, "queue.buffering.max.messages": 2_000_000,
                  "enable.idempotence": False})
    value = (b"x" * size)
    t0 = 1_714_521_600_000
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, key=b"%08d" % i, partition=i % partitions,
                          timestamp=t0 + i)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(300)


def confluent_loop(bootstrap: str, partitions: int, limit: Mapping[int, int], topic: str = TOPIC,
                   decode: Callable[[bytes], Any] | None = None) -> tuple[int, float]:
    """``decode`` (e.g. json.loads) is applied to each value, as a hand-written job would."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "enable.partition.eof": True, "queued.min.messages": 200_000,
                  "fetch.max.bytes": 64 * 1024 * 1024, **BIG})
    ends = {p: min(limit[p], c.get_watermark_offsets(TopicPartition(topic, p))[1])
            for p in range(partitions)}
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    n, done, start = 0, set[int](), time.perf_counter()
    while len(done) < partitions:
        for m in c.consume(10_000, timeout=1.0):
            if m.error():
                continue
            offset, partition = m.offset(), m.partition()
            assert offset is not None and partition is not None  # a record has both
            if offset < ends[partition]:
                n += 1
                value: Any = m.value()
                if decode is not None:
                    value = decode(value)
                _ = (m.key(), value, m.timestamp())
            if offset >= ends[partition] - 1:
                done.add(partition)
    c.close()
    return n, time.perf_counter() - start


def kafka_python_loop(bootstrap: str, partitions: int, limit: Mapping[int, int],
                      topic: str = SMALL) -> tuple[int, float]:
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning()
    n, start = 0, time.perf_counter()
    left = {tp: limit[tp.partition] for tp in tps}
    while any(v > 0 for v in left.values()):
        for tp, records in c.poll(timeout_ms=1000, max_records=10_000).items():
            for r in records:
                if r.offset < limit[tp.partition]:
                    n += 1
                    left[tp] = limit[tp.partition] - r.offset - 1
    c.close()
    return n, time.perf_counter() - start


def kcat(bootstrap: str, n: int) -> tuple[int, float] | None:
    exe = shutil.which("kcat") or shutil.which("kafkacat")
    if not exe:
        return None
    start = time.perf_counter()
    out = subprocess.run([exe, "-C", "-b", bootstrap, "-t", TOPIC, "-o", "beginning", "-e", "-q",
                          "-X", f"receive.message.max.bytes={BIG['receive.message.max.bytes']}",
                          "-f", "%o\n"], capture_output=True, check=True)
    return out.stdout.count(b"\n"), time.perf_counter() - start


def streamslice_read(bootstrap: str, client: str, out_dir: str | Path, topic: str = TOPIC,
                     direct: bool = True,
                     decode: Decoding | None = None) -> tuple[int, float, float, float]:
    """(records, seconds, JVM start seconds, driver CPU seconds) of plan + read; ``direct``
    False makes Spark write the Parquet (the path before the readers wrote it)."""
    from streamslice.commit.protocol import staging_for
    from streamslice.commit.verify import verify
    from streamslice.config import parse_pipeline
    from streamslice.planning.planner import plan_run
    from streamslice.spark.job import run_read
    from streamslice.spark.session import spark_session
    cfg = parse_pipeline(f"""
mode: incremental
kafka:
  bootstrap_servers: {bootstrap}
  topics: [{topic}]
  client: {client}
  properties: {{receive.message.max.bytes: {BIG["receive.message.max.bytes"]}}}
output:
  path: {out_dir}
""")
    jvm = time.perf_counter()
    spark = spark_session()
    jvm = time.perf_counter() - jvm
    start, cpu = time.perf_counter(), cpu_now()
    plan = plan_run(cfg.source, pipeline="bench", mode="incremental", decode=decode,
                    output=cfg.output.target(cfg.name),
                    properties=cfg.source.client_properties())
    staging = staging_for(plan, f"{client}-{time.time_ns()}")
    run_read(spark, plan, staging.uri, properties=cfg.source.client_properties(),
             options={"client": client}, direct=direct)
    elapsed, cpu = time.perf_counter() - start, cpu_now() - cpu
    n = verify(plan, staging).records
    shutil.rmtree(staging.root, ignore_errors=True)
    return n, elapsed, jvm, cpu


def rate(n: int, secs: float) -> float:
    return n / secs if secs else float("inf")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--subset", type=int, default=200_000, help="records for kafka-python")
    args = ap.parse_args()
    with local_broker() as (work, broker):
        print(f"producing {args.records:,} records of {args.size} bytes into {args.partitions} "
              "partitions ...", flush=True)
        t = time.perf_counter()
        produce(broker.bootstrap, args.records, args.size, args.partitions)
        print(f"  produced in {time.perf_counter() - t:.1f}s")
        # kafka-python gets a small topic of its own: the local broker answers every fetch with
        # the whole rest of the log, which a pure-Python client cannot wade through.
        produce(broker.bootstrap, args.subset, args.size, args.partitions, SMALL)
        per = args.records // args.partitions
        full = {p: per + (1 if p < args.records % args.partitions else 0)
                for p in range(args.partitions)}
        sub = {p: args.subset // args.partitions + (1 if p < args.subset % args.partitions else 0)
               for p in range(args.partitions)}
        results: dict[str, tuple[int, float]] = {}
        results["a confluent-kafka loop"] = confluent_loop(broker.bootstrap, args.partitions, full)
        k = kcat(broker.bootstrap, args.records)
        if k:
            results["b kcat"] = k
        results["c kafka-python loop (subset)"] = kafka_python_loop(broker.bootstrap,
                                                                    args.partitions, sub)
        runs = []
        for label, client, topic in (("d streamslice confluent-kafka (cold JVM)", "confluent-kafka",
                                      TOPIC),
                                     ("d streamslice confluent-kafka (warm)", "confluent-kafka",
                                      TOPIC),
                                     ("d streamslice kafka-python (subset)", "kafka-python",
                                      SMALL)):
            n, secs, jvm, _ = streamslice_read(broker.bootstrap, client, work / "out", topic)
            results[label] = (n, secs)
            runs.append((label, jvm))
        print(f"\n{'reader':<44}{'records':>11}{'seconds':>9}{'records/s':>12}")
        for label, (n, secs) in results.items():
            print(f"{label:<44}{n:>11,}{secs:>9.2f}{rate(n, secs):>12,.0f}")
        print(f"JVM start (SparkSession): {runs[0][1]:.1f}s, not included above")
        a = rate(*results["a confluent-kafka loop"])
        for label in [r for r in results if r.startswith("d ") and "subset" not in r]:
            d = rate(*results[label])
            line = f"{label}: d/a = {d / a:.2f}"
            if "b kcat" in results:
                line += f", d/b = {d / rate(*results['b kcat']):.2f}"
            print(line)
        c, dk = rate(*results["c kafka-python loop (subset)"]), \
            rate(*results["d streamslice kafka-python (subset)"])
        print(f"kafka-python fallback: d/c = {dk / c:.2f}")
        print(json.dumps({k: {"records": n, "seconds": round(s, 3)}
                          for k, (n, s) in results.items()}))


if __name__ == "__main__":
    main()
