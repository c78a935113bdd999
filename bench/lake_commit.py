"""Cost per output format, measured in the same run: the Parquet directory rename (the
baseline), Iceberg (pyiceberg, SQLite catalog, files registered with add_files) and Delta
(delta-rs, staged files rewritten).

1. Commit cost of one interval: staged as the read job would leave it (Parquet files of
   taxi-trip-like rows, a summary per split), then published with streamslice's commit
   protocol (verify, publish, manifest).
2. With --end-to-end, plan + Spark read + commit of the same Kafka range on a local broker,
   per format, and its throughput ratio against the Parquet path.
Prints seconds and ratios. Asserts nothing.
  python bench/lake_commit.py [--records 1000000] [--files 8] [--repeat 3] [--end-to-end]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamslice.planning.plan import OutputTarget, ReadPlan
    from streamslice.reading.staging import Staging
    from streamslice.splits import Split

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]


def stage(root: Path, plan: ReadPlan, records: int, files: int) -> Staging:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamslice.commit.publishers.tables import table_schema
    from streamslice.reading.staging import Staging
    from streamslice.reading.stats import SplitSummary
    schema = table_schema(plan)
    st = Staging(str(root))
    (root / "data").mkdir(parents=True)
    per = records // files
    for i in range(files):
        n = per if i < files - 1 else records - per * (files - 1)
        base = i * per
        cols = {f.name: pa.nulls(n, f.type) for f in schema}
        cols.update(key=pa.array([b"k%d" % (j % 997) for j in range(n)]),
                    trip_id=pa.array([f"trip-{base + j}" for j in range(n)]),
                    fare_amount=pa.array([(j % 5000) / 100 for j in range(n)], pa.float64()),
                    topic=pa.array(["t"] * n), partition=pa.array([i] * n, pa.int32()),
                    offset=pa.array(range(n), pa.int64()),
                    timestampType=pa.array([0] * n, pa.int32()),
                    streamslice_partition=pa.array([plan.partition] * n))
        table = pa.table([cols[f.name].cast(f.type) for f in schema], schema=schema)
        pq.write_table(table, root / "data" / f"part-{i:05d}.parquet")
        st.write_summary(i, SplitSummary(i, f"t:{i}", 0, n, records=n,
                                         reached_stop=True))
    return st


def make_plan(output: OutputTarget, files: int, records: int) -> ReadPlan:
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import Interval, ReadPlan
    per = records // files
    splits: list[Split] = [
        KafkaSplit(i, "t", i, 0, per if i < files - 1 else records - per * (files - 1))
        for i in range(files)]
    return ReadPlan(pipeline="bench", source="kafka", mode="interval",
                    planned_at=time.time_ns(),
                    splits=splits, partition="interval=20240501T000000Z", output=output,
                    interval=Interval(0, 3_600_000),
                    decode={"value": "json", "key": "raw", "on_error": "dead_letter",
                            "schema": [["trip_id", "string"], ["fare_amount", "double"]]},
                    source_info={"include_headers": False})


def publish(fmt: str, work: Path, records: int, files: int) -> float:
    from streamslice.commit.protocol import publish_once
    from streamslice.config import parse_pipeline
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output: {{path: '{work / 'lake'}', format: {fmt}}}\n",
                         default_name="bench")
    plan = make_plan(cfg.output.target("bench"), files, records)
    staging = stage(work / f"staging-{time.time_ns()}", plan, records, files)
    start = time.perf_counter()
    publish_once(plan, staging, run_id="bench", now_ms=0)
    return time.perf_counter() - start


def end_to_end(records: int, partitions: int = 4, size: int = 200) -> None:
    """Plan + Spark read + commit of one Kafka range per format; records/s and ratios."""
    import os

    from bench.kafka_bounded_read import BIG, produce
    from devtools.services import KafkaBroker
    from streamslice.commit.protocol import publish_once, staging_for
    from streamslice.config import parse_pipeline
    from streamslice.planning.planner import plan_run
    from streamslice.spark.job import run_read
    from streamslice.spark.session import spark_session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    broker = KafkaBroker(work / "kafka").start()
    try:
        produce(broker.bootstrap, records, size, partitions)
        spark = spark_session()
        out: dict[str, tuple[int, float]] = {}
        for fmt in ("parquet", "parquet", "iceberg", "delta"):  # the first warms the JVM
            cfg = parse_pipeline(f"""
mode: incremental
kafka:
  bootstrap_servers: {broker.bootstrap}
  topics: [bench]
  properties: {{receive.message.max.bytes: {BIG["receive.message.max.bytes"]}}}
output: {{path: '{work / fmt}', format: {fmt}}}
""", default_name="bench")
            start = time.perf_counter()
            plan = plan_run(cfg.source, pipeline="bench", mode="incremental",
                            output=cfg.output.target("bench"),
                            properties=cfg.source.client_properties())
            staging = staging_for(plan, f"e2e-{time.time_ns()}")
            run_read(spark, plan, staging.uri, properties=cfg.source.client_properties())
            n = publish_once(plan, staging, run_id="bench", now_ms=0).records
            out[fmt] = (n, time.perf_counter() - start)
        base = out["parquet"][0] / out["parquet"][1]
        print(f"\nend to end (plan + Spark read + commit), {records:,} records:")
        for fmt, (n, secs) in out.items():
            print(f"  {fmt:<8} {secs:7.2f} s  {n / secs:>10,.0f} records/s  "
                  f"{n / secs / base:5.2f}x the Parquet path")
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--end-to-end", action="store_true")
    args = ap.parse_args()
    results: dict[str, list[float]] = {}
    for fmt in ("parquet", "iceberg", "delta"):
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:
            # the first commit creates the table; the timed ones replace the interval
            publish(fmt, work, args.records, args.files)
            results[fmt] = [publish(fmt, work, args.records, args.files)
                            for _ in range(args.repeat)]
        finally:
            shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(results["parquet"])
    print(f"commit of one interval: {args.records:,} records in {args.files} staged files "
          f"(verify + publish, replacing the interval; median of {args.repeat})")
    for fmt, secs in results.items():
        med = statistics.median(secs)
        print(f"  {fmt:<8} {med:7.3f} s  (min {min(secs):.3f}, max {max(secs):.3f})  "
              f"{med / base:6.1f}x the Parquet rename")
    if args.end_to_end:
        end_to_end(args.records)


if __name__ == "__main__":
    main()
