"""CPU per record of the Kafka read path, from the OS, against a raw confluent-kafka loop over
the same records in the same run.

  raw     a plain confluent-kafka consumer loop (bench/kafka_bounded_read.py's baseline:
          consume(10 000), key/value/timestamp of each record), in a process of its own
  reader  streamslice's split reader (KafkaSplitReader.batches(): bounds, decoding, Arrow
          batches, summary), one split per partition, no Spark, in a process of its own;
          ``reader+interval`` is the same in interval mode (on-time/late masks)
  e2e     (--end-to-end) plan + Spark local[*] + Parquet with one split per partition, on
          both write paths: the readers write the Parquet (``direct``, the default) and Spark
          writes it (``spark``, as before): records/s against the raw loop's, and the CPU of
          Spark's Python workers, its JVM and the driver, measured on the second of two reads
          back to back: with Spark's Python workers running, as a long-lived Spark has them
          (Spark stops them after a minute idle)

CPU is user + system seconds of the whole process (every thread, librdkafka's included) from
getrusage over the read alone, after imports; ``/proc/<pid>/stat`` for Spark's processes. Each
figure is the median of --repeat runs. Prints ratios; asserts nothing.
  python bench/read_cpu.py [--records 1000000] [--size 200] [--partitions 4] [--repeat 3]
                           [--end-to-end]
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

    from bench.children import ChildArgs, Measured

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import (  # noqa: E402
    cpu_now,
    local_broker,
    parse_args,
    partition_ends,
    run_child,
)
from bench.kafka_bounded_read import BIG, TOPIC, confluent_loop, produce  # noqa: E402

T0 = 1_714_521_600_000  # produce() stamps record i with T0 + i
# One end-to-end read: records, seconds, CPU s of Spark's Python workers, of its JVM, of the driver
Read = tuple[int, float, float, float, float]


def child_raw(args: ChildArgs) -> tuple[int, float, float]:
    cpu, wall = cpu_now(), time.perf_counter()
    n, _ = confluent_loop(args["bootstrap"], len(args["ends"]),
                          {int(p): e for p, e in args["ends"].items()})
    return n, cpu_now() - cpu, time.perf_counter() - wall


def child_reader(args: ChildArgs) -> tuple[int, float, float]:
    from streamslice.kafka.reader import KafkaSplitReader
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import Interval
    from streamslice.reading.decode import Decoder
    from streamslice.reading.staging import Staging
    warm_up()
    total = sum(args["ends"].values())
    interval = Interval(T0, T0 + total) if args["interval"] else None
    staging = Staging(args["staging"])
    props = {"bootstrap.servers": args["bootstrap"], **BIG}
    n, cpu, wall = 0, cpu_now(), time.perf_counter()
    for p, end in args["ends"].items():
        split = KafkaSplit(int(p), TOPIC, int(p), 0, end, late_from=0 if interval else None,
                           owned_until=end if interval else None)
        reader = KafkaSplitReader(split, properties=props, decoder=Decoder(), interval=interval,
                                  staging=staging)
        n += sum(b.num_rows for b in reader.batches())
    return n, cpu_now() - cpu, time.perf_counter() - wall


def warm_up() -> None:
    """What a Spark Python worker pays once, not per record: pyarrow imports pandas on its
    first ``pa.array`` (about 0.4 s of CPU; the whole-process column includes it)."""
    import pyarrow as pa
    pa.array([0])


def proc_tree_cpu(root: int | None = None) -> dict[int, tuple[str, float]]:
    """{pid: (name, CPU s)} of every descendant of ``root``, reaped children included."""
    root = root or os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        stats[int(entry)] = (int(fields[1]), name, sum(int(x) for x in fields[11:15]) / tick)
    kids: dict[int, list[int]] = {}
    out: dict[int, tuple[str, float]] = {}
    for pid, (ppid, _, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = stats[pid][1:]
        todo += kids.get(pid, [])
    return out


def spark_cpu(before: dict[int, tuple[str, float]],
              after: dict[int, tuple[str, float]]) -> tuple[float, float]:
    """CPU of Spark's Python workers and of its JVM between two ``proc_tree_cpu`` snapshots."""
    python = jvm = 0.0
    for pid, (name, cpu) in after.items():
        used = cpu - before.get(pid, (name, 0.0))[1]
        if name.startswith("python"):
            python += used
        elif name == "java":
            jvm += used
    return python, jvm


def end_to_end(bootstrap: str, out_dir: Path, direct: bool) -> list[Read]:
    """Two reads back to back: the first may find Spark's Python workers gone and start
    them; the second finds them running."""
    from bench.kafka_bounded_read import streamslice_read
    runs: list[Read] = []
    for _ in range(2):
        before = proc_tree_cpu()
        n, secs, _, driver = streamslice_read(bootstrap, "confluent-kafka", out_dir,
                                              direct=direct)
        runs.append((n, secs, *spark_cpu(before, proc_tree_cpu()), driver))
    return runs


def per_m(cpu: float, n: int) -> float:
    return cpu / n * 1e6


def main() -> None:
    args = parse_args({"raw": child_raw, "reader": child_reader}, records=1_000_000, size=200)
    if args is None:
        return
    with local_broker() as (work, broker):
        print(f"producing {args.records:,} records of {args.size} bytes into {args.partitions} "
              "partitions ...", flush=True)
        produce(broker.bootstrap, args.records, args.size, args.partitions)
        ends = partition_ends(args.records, args.partitions)
        base: ChildArgs = {"bootstrap": broker.bootstrap, "ends": ends,
                           "staging": str(work / "staging")}
        kinds = {"raw": ("raw", base), "reader": ("reader", {**base, "interval": False}),
                 "reader+interval": ("reader", {**base, "interval": True})}
        runs: dict[str, list[Measured]] = {k: [] for k in kinds}
        e2e: dict[str, list[list[Read]]] = {"direct": [], "spark": []}
        if args.end_to_end:  # not measured: starts the JVM and lets its JIT warm up
            end_to_end(broker.bootstrap, work / "out", direct=False)
        for i in range(args.repeat):  # interleaved, so drift in the machine's load hits all
            for label, (kind, child_args) in kinds.items():
                runs[label].append(run_child(__file__, kind, child_args))
            if args.end_to_end:
                for path, measured in e2e.items():
                    measured.append(end_to_end(broker.bootstrap, work / "out",
                                               direct=path == "direct"))
            print(f"  round {i + 1}/{args.repeat} done", flush=True)
        report(runs, e2e, args)


def report(runs: dict[str, list[Measured]], e2e: dict[str, list[list[Read]]],
           args: argparse.Namespace) -> None:
    med = statistics.median
    print(f"\nmedians of {args.repeat} runs, {args.records:,} records x {args.size} B, "
          f"{args.partitions} partitions")
    print(f"{'process':<18}{'records':>10}{'CPU s/M rec':>13}{'whole proc':>12}{'rec/s':>11}"
          f"{'CPU vs raw':>12}")
    raw_cpu = med(per_m(c, n) for n, c, _, _ in runs["raw"])
    raw_rate = med(n / w for n, _, w, _ in runs["raw"])
    figures: dict[str, dict[str, Any]] = {}
    for label, rs in runs.items():
        cpu = med(per_m(c, n) for n, c, _, _ in rs)
        whole = med(per_m(t, n) for n, _, _, t in rs)
        rate = med(n / w for n, _, w, _ in rs)
        figures[label] = {"cpu_s_per_m": round(cpu, 3), "ratio": round(cpu / raw_cpu, 2)}
        print(f"{label:<18}{rs[0][0]:>10,}{cpu:>13.2f}{whole:>12.2f}{rate:>11,.0f}"
              f"{cpu / raw_cpu:>11.2f}x")
    for path, measured in e2e.items():
        if not measured:
            continue
        warm = [pair[1] for pair in measured]  # the second of each pair: workers running
        rate = med(n / s for n, s, _, _, _ in warm)
        py = med(per_m(p, n) for n, _, p, _, _ in warm)
        jvm = med(per_m(j, n) for n, _, _, j, _ in warm)
        driver = med(per_m(d, n) for n, _, _, _, d in warm)
        total = med(per_m(p + j + d, n) for n, _, p, j, d in warm)
        writer = "the readers" if path == "direct" else "Spark"
        print(f"\nend to end, {writer} writing the Parquet (plan + Spark local[*] + Parquet, "
              f"{args.partitions} splits, Python workers running, median of {len(warm)}): "
              f"{rate:,.0f} records/s = {rate / raw_rate:.2f}x the raw loop's {raw_rate:,.0f}")
        print(f"  CPU s per M records: Spark Python workers {py:.2f} ({py / raw_cpu:.2f}x raw), "
              f"JVM {jvm:.2f}, driver {driver:.2f}; all {total:.2f} ({total / raw_cpu:.2f}x raw)")
        figures[f"e2e_{path}"] = {
            "records_per_s": round(rate), "ratio": round(rate / raw_rate, 2),
            "python_cpu_s_per_m": round(py, 3), "python_ratio": round(py / raw_cpu, 2),
            "jvm_cpu_s_per_m": round(jvm, 3), "driver_cpu_s_per_m": round(driver, 3),
            "all_cpu_s_per_m": round(total, 3)}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
