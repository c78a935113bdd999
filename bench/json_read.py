"""Nested JSON values: streamslice against a hand-written job, in the same run.

  raw+json.loads  a plain confluent-kafka loop (bench/kafka_bounded_read.py's) that calls
                  json.loads on every value, in a process of its own: the baseline
  reader          streamslice's split reader with ``format.value: json`` and the nested DDL
                  below (msgspec + pyarrow into nested Arrow columns), no Spark, in a process
                  of its own
  e2e             plan + Spark local[*] + the readers writing the Parquet, one split per
                  partition: records/s of the whole read against the baseline's

Records are about 300 bytes: a struct with an array, a decimal, a date, a timestamp, a map,
varied per record. Each figure is the median of --repeat runs, interleaved; CPU is user +
system of the whole measured process (getrusage). Prints ratios; asserts nothing.
  python bench/json_read.py [--records 500000] [--partitions 4] [--repeat 3] [--end-to-end]
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from bench.children import ChildArgs
    from streamslice.config.pipeline import Decoding

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import (  # noqa: E402
    cpu_now,
    local_broker,
    parse_args,
    partition_ends,
    run_child,
)
from bench.kafka_bounded_read import BIG, confluent_loop  # noqa: E402

TOPIC = "bench-json"
DDL = ("order_id BIGINT, customer STRUCT<id: BIGINT, name: STRING, tags: ARRAY<STRING>>, "
       "amount DECIMAL(12,2), currency STRING, day DATE, placed_at TIMESTAMP, "
       "attributes MAP<STRING, STRING>, quantity INT, express BOOLEAN")


def record(i: int) -> dict[str, Any]:
    return {"order_id": i, "customer": {"id": i % 9973, "name": f"customer-{i % 9973}",
                                        "tags": ["vip", "eu", "b2b"][:i % 4]},
            "amount": f"{(i * 37) % 100000 / 100:.2f}", "currency": "EUR",
            "day": f"2024-05-{1 + i % 28:02d}",
            "placed_at": f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.{i % 1000:03d}Z",
            "attributes": {"channel": ["web", "app", "shop"][i % 3], "campaign": f"c{i % 50}"},
            "quantity": 1 + i % 9, "express": i % 5 == 0}


def produce(bootstrap: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    from devtools.services import create_topic
    create_topic(bootstrap, TOPIC, partitions)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                  "batch.num.messages": 100_000, "queue.buffering.max.messages": 2_000_000,
                  "enable.idempotence": False})
    for i in range(n):
        value = json.dumps(record(i)).encode()
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%08d" % i, partition=i % partitions,
                          timestamp=1_714_521_600_000 + i)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(300)


def decoding() -> Decoding:
    from streamslice.config.pipeline import Decoding
    from streamslice.formats import FormatSpec
    return Decoding(value=FormatSpec("json", DDL))


def child_raw(args: ChildArgs) -> tuple[int, float, float]:
    cpu, wall = cpu_now(), time.perf_counter()
    n, _ = confluent_loop(args["bootstrap"], len(args["ends"]),
                          {int(p): e for p, e in args["ends"].items()}, TOPIC, json.loads)
    return n, cpu_now() - cpu, time.perf_counter() - wall


def child_reader(args: ChildArgs) -> tuple[int, float, float]:
    import pyarrow as pa

    from streamslice.kafka.reader import KafkaSplitReader
    from streamslice.kafka.split import KafkaSplit
    from streamslice.reading.decode import Decoder
    pa.array([0])  # pyarrow's first array imports pandas: once per process, not per record
    decoder = Decoder.from_dict(decoding().to_dict())
    props = {"bootstrap.servers": args["bootstrap"], **BIG}
    n, dead, cpu, wall = 0, 0, cpu_now(), time.perf_counter()
    for p, end in args["ends"].items():
        reader = KafkaSplitReader(KafkaSplit(int(p), TOPIC, int(p), 0, end),
                                  properties=props, decoder=decoder)
        n += sum(b.num_rows for b in reader.batches())
        dead += reader.stats.summary.dead_letters
    assert dead == 0, f"{dead} dead letters"
    return n, cpu_now() - cpu, time.perf_counter() - wall


def decode_alone(n: int = 20_000) -> tuple[float, float]:
    """(ours, json.loads): CPU µs per record over the same values, best of 7."""
    from streamslice.reading.decode import Decoder
    values = [json.dumps(record(i)).encode() for i in range(n)]
    decoder = Decoder.from_dict(decoding().to_dict())

    def best(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(7):
            cpu = time.process_time()
            fn()
            times.append(time.process_time() - cpu)
        return min(times) / n * 1e6
    ours = best(lambda: decoder.decode_values(values))
    return ours, best(lambda: [json.loads(v) for v in values])


def end_to_end(bootstrap: str, out_dir: Path) -> tuple[int, float]:
    """Two reads back to back; the second (Spark's Python workers running) is measured."""
    from bench.kafka_bounded_read import streamslice_read
    for _ in range(2):
        n, secs, _, _ = streamslice_read(bootstrap, "confluent-kafka", out_dir, topic=TOPIC,
                                         decode=decoding())
    return n, secs


def main() -> None:
    args = parse_args({"raw": child_raw, "reader": child_reader}, records=500_000)
    if args is None:
        return
    with local_broker() as (work, broker):
        print(f"producing {args.records:,} nested JSON records into {args.partitions} "
              "partitions ...", flush=True)
        produce(broker.bootstrap, args.records, args.partitions)
        ends = partition_ends(args.records, args.partitions)
        base = {"bootstrap": broker.bootstrap, "ends": ends}
        runs: dict[str, list[Any]] = {"raw+json.loads": [], "reader": [], "e2e": []}
        if args.end_to_end:  # not measured: starts the JVM and lets its JIT warm up
            end_to_end(broker.bootstrap, work / "out")
        for i in range(args.repeat):  # interleaved, so drift in the machine's load hits all
            runs["raw+json.loads"].append(run_child(__file__, "raw", base))
            runs["reader"].append(run_child(__file__, "reader", base))
            if args.end_to_end:
                runs["e2e"].append(end_to_end(broker.bootstrap, work / "out"))
            print(f"  round {i + 1}/{args.repeat} done", flush=True)
        report(runs, args, decode_alone())


def report(runs: dict[str, list[Any]], args: argparse.Namespace,
           alone: tuple[float, float]) -> None:
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"\nmedians of {args.repeat} runs, {args.records:,} nested JSON records, "
          f"{args.partitions} partitions; load average at the end {load:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"{'process':<16}{'records':>10}{'CPU s/M rec':>13}{'rec/s':>11}{'CPU vs base':>13}"
          f"{'rec/s vs base':>15}")
    base = runs["raw+json.loads"]
    base_cpu = med(c / n * 1e6 for n, c, _, _ in base)
    base_rate = med(n / w for n, _, w, _ in base)
    figures: dict[str, Any] = {}
    for label in ("raw+json.loads", "reader"):
        rs = runs[label]
        cpu = med(c / n * 1e6 for n, c, _, _ in rs)
        rate = med(n / w for n, _, w, _ in rs)
        figures[label] = {"cpu_s_per_m": round(cpu, 2), "records_per_s": round(rate),
                          "rate_ratio": round(rate / base_rate, 2),
                          "cpu_ratio": round(cpu / base_cpu, 2)}
        print(f"{label:<16}{rs[0][0]:>10,}{cpu:>13.2f}{rate:>11,.0f}{cpu / base_cpu:>12.2f}x"
              f"{rate / base_rate:>14.2f}x")
    if runs["e2e"]:
        rate = med(n / s for n, s in runs["e2e"])
        figures["e2e"] = {"records_per_s": round(rate), "rate_ratio": round(rate / base_rate, 2)}
        print(f"\nend to end (plan + Spark local[*] + the readers writing Parquet, "
              f"{args.partitions} splits): {rate:,.0f} records/s = {rate / base_rate:.2f}x "
              f"the baseline's {base_rate:,.0f}")
    ours, loads = alone
    figures["decode_alone"] = {"ours_us": round(ours, 2), "json_loads_us": round(loads, 2)}
    figures["load"] = round(load, 1)
    print(f"\ndecode alone (in memory, CPU per record, best of 7): ours {ours:.2f} µs into "
          f"nested Arrow, json.loads {loads:.2f} µs into dicts: {ours / loads:.2f}x")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
