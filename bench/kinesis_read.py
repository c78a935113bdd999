"""Kinesis read cost: streamslice's polling and Enhanced Fan-Out split readers against a serial
boto3 GetRecords loop over the same records of one stream (8 shards by default) on the local
Kinesis server (kinesis-local behind its proxy, as the tests run it), in the same run.

  loop     one boto3 client, shard after shard: GetShardIterator(TRIM_HORIZON), then
           GetRecords (Limit 10 000) until the shard is caught up, touching every record
  polling  KinesisSplitReader over each shard in turn (GetRecords, the arrival-time bound,
           de-aggregation, Arrow batches, the split's summary), polling.interval 0: the loop
           does not wait between calls either (the default 200 ms would add 0.2 s per call)
  efo      the same reader over SubscribeToShard, with a consumer registered beforehand

Each runs in a process of its own; CPU is user + system seconds of the read alone (every
thread) from getrusage. Prints records/s and CPU per million records, each as a ratio against
the loop (medians of --repeat runs). Asserts nothing.
  python bench/kinesis_read.py [--records 16000] [--shards 8] [--size 200] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.children import ChildArgs, Measured

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from bench.children import cpu_now, run_child, serve_child  # noqa: E402

STREAM = "bench"
CREDENTIALS = {"region": "us-east-1", "access_key_id": "test", "secret_access_key": "test"}


def client(endpoint: str) -> Any:  # a boto3 Kinesis client
    from streamslice.kinesis.client import make_client
    return make_client({**CREDENTIALS, "endpoint_url": endpoint})


def child_loop(args: ChildArgs) -> tuple[int, float, float]:
    kinesis = client(args["endpoint"])
    n, nbytes, cpu, wall = 0, 0, cpu_now(), time.perf_counter()
    for shard in args["shards"]:
        it = kinesis.get_shard_iterator(StreamName=STREAM, ShardId=shard,
                                        ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            resp = kinesis.get_records(ShardIterator=it, Limit=10_000)
            for r in resp["Records"]:
                n += 1
                nbytes += len(r["Data"])
                _ = (r["SequenceNumber"], r["PartitionKey"], r["ApproximateArrivalTimestamp"])
            it = resp.get("NextShardIterator")
            if not resp["Records"] and resp.get("MillisBehindLatest") == 0:
                break
    return n, cpu_now() - cpu, time.perf_counter() - wall


def child_reader(args: ChildArgs) -> tuple[int, float, float]:
    import pyarrow as pa

    from streamslice.kinesis.client import make_client
    from streamslice.kinesis.polling import PollingSettings
    from streamslice.kinesis.reader import KinesisSplitReader
    from streamslice.kinesis.split import KinesisSplit
    pa.array([0])  # pyarrow imports pandas on its first use: once per process, not per record
    props = {**CREDENTIALS, "endpoint_url": args["endpoint"]}
    make_client(props, utc_timestamps=True)  # the readers' client, made once as the loop's is
    n, cpu, wall = 0, cpu_now(), time.perf_counter()
    for i, shard in enumerate(args["shards"]):
        split = KinesisSplit(id=i, stream=STREAM, shard_id=shard, start={"type": "TRIM_HORIZON"},
                             stop_before=args["stop_before"])
        reader = KinesisSplitReader(split, properties=props, consumer_arn=args.get("consumer_arn"),
                                    settings=PollingSettings(interval_ms=0))
        n += sum(b.num_rows for b in reader.batches())
    return n, cpu_now() - cpu, time.perf_counter() - wall


def produce(kinesis: Any, n: int, size: int, shards: int) -> str:
    from tests.support.kinesis import create_stream, put
    arn = create_stream(kinesis, STREAM, shards)
    payload = b"x" * size
    for lo in range(0, n, 10_000):
        def key(i: int, lo: int = lo) -> str:
            return f"k{lo + i}"
        put(kinesis, STREAM, [payload] * min(10_000, n - lo), key=key)
    return arn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=16_000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--size", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        serve_child(args.child, {"loop": child_loop, "reader": child_reader})
        return
    from devtools.services import KinesisLocal
    from streamslice.kinesis.consumers import register
    with KinesisLocal() as server:
        kinesis = client(server.endpoint)
        print(f"putting {args.records:,} records of {args.size} bytes into {args.shards} "
              "shards ...", flush=True)
        t = time.perf_counter()
        arn = produce(kinesis, args.records, args.size, args.shards)
        print(f"  put in {time.perf_counter() - t:.1f}s", flush=True)
        time.sleep(1.0)  # every record arrived before the readers' bound
        shards = [s["ShardId"] for s in kinesis.list_shards(StreamName=STREAM)["Shards"]]
        base = {"endpoint": server.endpoint, "shards": shards,
                "stop_before": int(time.time() * 1000)}
        consumer = register(kinesis, arn, "bench")
        kinds = {"loop": ("loop", base), "polling": ("reader", base),
                 "efo": ("reader", {**base, "consumer_arn": consumer})}
        runs: dict[str, list[Measured]] = {k: [] for k in kinds}
        for i in range(args.repeat):
            for label, (kind, child_args) in kinds.items():
                runs[label].append(run_child(__file__, kind, child_args))
            print(f"  round {i + 1}/{args.repeat} done", flush=True)
    report(runs, args)


def report(runs: dict[str, list[Measured]], args: argparse.Namespace) -> None:
    med = statistics.median
    print(f"\nmedians of {args.repeat} runs, {args.records:,} records x {args.size} B, "
          f"{args.shards} shards, read shard after shard")
    print(f"{'reader':<10}{'records':>10}{'rec/s':>11}{'vs loop':>9}{'CPU s/M rec':>13}"
          f"{'vs loop':>9}")
    rate = {k: med(n / w for n, _, w, _ in rs) for k, rs in runs.items()}
    cpu = {k: med(c / n * 1e6 for n, c, _, _ in rs) for k, rs in runs.items()}
    figures: dict[str, dict[str, float]] = {}
    for label, rs in runs.items():
        print(f"{label:<10}{rs[0][0]:>10,}{rate[label]:>11,.0f}"
              f"{rate[label] / rate['loop']:>8.2f}x{cpu[label]:>13.2f}"
              f"{cpu[label] / cpu['loop']:>8.2f}x")
        figures[label] = {"records_per_s": round(rate[label]),
                          "throughput_ratio": round(rate[label] / rate["loop"], 2),
                          "cpu_s_per_m": round(cpu[label], 2),
                          "cpu_ratio": round(cpu[label] / cpu["loop"], 2)}
    print(json.dumps(figures))


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    main()
