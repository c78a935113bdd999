"""Many small splits: a bounded read of a topic with many partitions (most holding a few
records, some none), read by Spark local[*] with one Spark task per split against the same
plan with several splits packed into each task, in the same run and the same session.

  per-split   one Spark input partition per split (as before packing)
  packed      several small splits a task (``planning.packing``), each still its own file

Each round reads the same plan both ways, in alternating order; the first read of the run
(not measured) starts the JVM and Spark's Python workers. Prints the wall time of the read job
(``run_read``) and the CPU of Spark's Python workers and JVM, min / median / max over the
rounds, and the ratio packed / per-split, with the load average. Asserts nothing.
  python bench/many_splits.py [--partitions 300] [--records 3000] [--empty 30] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streamslice.planning.plan import ReadPlan

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import local_broker  # noqa: E402
from bench.kafka_bounded_read import BIG  # noqa: E402
from bench.read_cpu import proc_tree_cpu, spark_cpu  # noqa: E402

TOPIC = "many"


def produce(bootstrap: str, partitions: int, records: int, empty: int) -> None:
    """``records`` spread over the partitions but the last ``empty`` ones."""
    from confluent_kafka import Producer

    from devtools.services import create_topic
    create_topic(bootstrap, TOPIC, partitions)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    full = partitions - empty
    for i in range(records):
        p.produce(TOPIC, value=json.dumps({"id": i, "v": "x" * 100}).encode(),
                  key=b"%d" % i, partition=i % full)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(60)


def read_once(spark: SparkSession, plan: ReadPlan, work: Path, packed: bool) -> dict[str, float]:
    from streamslice.commit.protocol import staging_for
    from streamslice.commit.verify import verify
    from streamslice.spark.job import run_read
    staging = staging_for(plan, f"bench-{time.time_ns()}")
    before, start = proc_tree_cpu(), time.perf_counter()
    run_read(spark, plan, staging.uri, properties={"bootstrap.servers": plan_bootstrap(plan),
                                                   **BIG},
             pack=packed)
    wall = time.perf_counter() - start
    python, jvm = spark_cpu(before, proc_tree_cpu())
    records = verify(plan, staging).records
    shutil.rmtree(staging.root, ignore_errors=True)
    return {"wall": wall, "python": python, "jvm": jvm, "records": records}


def plan_bootstrap(plan: ReadPlan) -> str:
    return str(plan.source_info["bootstrap"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=300)
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--empty", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from streamslice.config import parse_pipeline
    from streamslice.planning.planner import plan_run
    from streamslice.spark.session import spark_session
    with local_broker() as (work, broker):
        produce(broker.bootstrap, args.partitions, args.records, args.empty)
        cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: "
                             f"'{broker.bootstrap}', topics: [{TOPIC}]}}\n"
                             f"format: {{value: json, schema: 'id BIGINT, v STRING'}}\n"
                             f"output: {{path: '{work / 'out'}'}}\n", default_name="bench")
        plan = plan_run(cfg.source, pipeline="bench", mode="incremental", decode=cfg.decode,
                        output=cfg.output.target(cfg.name),
                        properties=cfg.source.client_properties())
        plan.source_info["bootstrap"] = broker.bootstrap
        spark = spark_session()
        read_once(spark, plan, work, packed=False)  # JVM, JIT and Python workers warm up
        runs: dict[str, list[dict[str, float]]] = {"per-split": [], "packed": []}
        loads = [os.getloadavg()[0]]
        for i in range(args.rounds):
            order = ["per-split", "packed"] if i % 2 == 0 else ["packed", "per-split"]
            for label in order:
                runs[label].append(read_once(spark, plan, work, label == "packed"))
            loads.append(os.getloadavg()[0])
            print(f"  round {i + 1}/{args.rounds}: " + ", ".join(
                f"{k} {v[-1]['wall']:.1f}s" for k, v in runs.items()), flush=True)
        report(runs, args, plan, loads)


def report(runs: dict[str, list[dict[str, float]]], args: argparse.Namespace, plan: ReadPlan,
           loads: list[float]) -> None:
    from streamslice.planning.packing import pack_splits
    from streamslice.sources import source_class

    def mmm(values: list[float]) -> list[float]:
        return [round(min(values), 2), round(statistics.median(values), 2),
                round(max(values), 2)]
    split = source_class(plan.source).serializer().from_dict
    tasks = len(pack_splits([split(s.to_dict()).size for s in plan.splits],
                            os.cpu_count() or 1))
    print(f"\n{args.records:,} records in {args.partitions} partitions ({args.empty} empty), "
          f"{len(plan.splits)} splits; {args.rounds} rounds; load average "
          f"{min(loads):.1f}-{max(loads):.1f}; min / median / max")
    print(f"{'':<11}{'tasks':>7}{'wall s':>22}{'Python workers CPU s':>26}{'JVM CPU s':>22}")
    for label, rs in runs.items():
        assert all(r["records"] == args.records for r in rs)
        n = len(plan.splits) if label == "per-split" else tasks
        print(f"{label:<11}{n:>7}" + "".join(
            f"{' / '.join(f'{v:.2f}' for v in mmm([r[k] for r in rs])):>{w}}"
            for k, w in (("wall", 22), ("python", 26), ("jvm", 22))))
    ratio = [p["wall"] / s["wall"] for p, s in zip(runs["packed"], runs["per-split"])]
    print(f"packed / per-split wall time, per round: {' / '.join(f'{v:.2f}x' for v in mmm(ratio))}")


if __name__ == "__main__":
    main()
