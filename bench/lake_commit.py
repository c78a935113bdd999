"""Commit cost per output format for one interval, measured in the same run on the same
staged data: the Parquet directory rename (the baseline), Iceberg (pyiceberg, SQLite catalog,
files registered with add_files) and Delta (delta-rs, staged files rewritten).

The interval is staged as the read job would leave it (Parquet files of taxi-trip-like rows,
with a summary per split), then published with streamslice's commit protocol (verify,
publish, manifest). Prints seconds and the ratios against the rename. Asserts nothing.
  python bench/lake_commit.py [--records 1000000] [--files 8] [--repeat 3]
"""
import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]


def stage(root, plan, records, files):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamslice.commit.publishers.tables import table_schema
    from streamslice.reading.staging import Staging
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
        st.write_summary(i, {"split": i, "start": 0, "stop": n, "records": n,
                             "dead_letters": 0, "reached_stop": True})
    return st


def make_plan(output, files, records):
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import Interval, ReadPlan
    per = records // files
    splits = [KafkaSplit(i, "t", i, 0, per if i < files - 1 else records - per * (files - 1))
              for i in range(files)]
    return ReadPlan(pipeline="bench", source="kafka", mode="interval", planned_at=time.time_ns(),
                    splits=splits, partition="interval=20240501T000000Z", output=output,
                    interval=Interval(0, 3_600_000),
                    decode={"value": "json", "key": "raw", "on_error": "dead_letter",
                            "schema": [["trip_id", "string"], ["fare_amount", "double"]]},
                    source_info={"include_headers": False})


def publish(fmt, work, records, files):
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results = {}
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


if __name__ == "__main__":
    main()
