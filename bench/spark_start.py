"""A Spark driver's start and first query with and without the class-data-sharing archive
the test suite uses (``devtools.spark_cds``), each in a process of its own, in turn; prints
each side's median CPU seconds (the JVM's included: the child waits for it) and the ratio.

  python bench/spark_start.py [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.children import ChildArgs

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import run_child, serve_child  # noqa: E402
from devtools.spark_cds import QUICK_JVM, java_options  # noqa: E402


def start_and_query(args: ChildArgs) -> list[int]:
    from pyspark import SparkContext

    from streamslice.spark.session import spark_session
    spark = spark_session("local[*]", conf={"spark.driver.extraJavaOptions": args["options"],
                                            "spark.ui.enabled": "false"})
    total = spark.range(100).selectExpr("sum(id)").collect()[0][0]
    spark.stop()
    gateway = SparkContext._gateway
    assert gateway is not None and gateway.proc is not None, "the session's JVM gateway"
    gateway.proc.stdin.close()  # the JVM exits on it; waiting puts its CPU in ours
    gateway.proc.wait(timeout=300)
    return [total]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        serve_child(args.child, {"start": start_and_query})
        return
    sides = {"with the archive": java_options(QUICK_JVM), "without": QUICK_JVM}
    if sides["with the archive"] == QUICK_JVM:
        sys.exit("no class archive could be made here")
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.repeat):
        for side, options in sides.items():
            total, seconds = run_child(__file__, "start", {"options": options})
            assert total == 4950, total
            cpu[side].append(seconds)
    medians = {side: statistics.median(s) for side, s in cpu.items()}
    print(json.dumps({"cpu_s": cpu, "median_cpu_s": medians,
                      "ratio": medians["with the archive"] / medians["without"]}, indent=1))


if __name__ == "__main__":
    main()
