"""The same job through other tools and streamslice's runners: N JSON records in 4 Kafka
partitions landed as Parquet, exactly once, each run a process of its own, at several sizes.

  raw           a hand-written confluent-kafka loop: consume to the ends, ``json.loads``
                each value, columns into one Parquet file per partition with pyarrow
  dlt           dlt's Kafka verified source (``bench/vendor/dlt_kafka``, Apache 2.0) with a
                message processor that parses the JSON, into dlt's filesystem destination as
                Parquet; dlt from PyPI in a virtual environment of its own (made on first use
                under ``.venv/peers/``)
  local-jvm     streamslice, runner local with ``local_server: false``: a JVM in the run's
                process (the default before the kept server)
  local-cold    streamslice, runner local (the default): this run starts the worker's kept
                Spark Connect server (stopped before it)
  local-warm    the same, the next run, on the server the cold one left running
  connect       runner connect, on a Spark Connect server started before the runs (after
                one unmeasured run: its first session starts the server's Python workers)
  spark-submit  runner spark-submit to a Spark standalone master and worker started before

A streamslice run is plan + read + commit (verify, publish, checkpoint) with no Airflow.
Each figure is the run's wall time and the CPU of every process it used (``CpuMeter``: the
run's process tree, JVMs and Python workers included, and the kept server's keeper, JVM and
workers; the servers and the cluster started before the runs are the bench's children and
count while they work for a run), against dlt's in the same go. Every output is read back:
its rows must be the N ids, each once. Prints a table; asserts nothing.
  python bench/peers.py [--sizes 10000,300000,3000000] [--tools raw,dlt,local-jvm,...]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

if TYPE_CHECKING:
    from devtools.cpu_meter import CpuMeter

TOOLS = ("raw", "dlt", "local-jvm", "local-cold", "local-warm", "connect", "spark-submit")
PARTITIONS = 4
DLT = ("dlt[parquet]==1.31.0", "confluent-kafka==2.16.1", "pyarrow==26.0.1")
DDL = "id BIGINT NOT NULL, user STRING, amount DOUBLE, ts TIMESTAMP"
BIG = {"receive.message.max.bytes": 2_147_483_647}  # as bench/kafka_bounded_read.py says
# pyspark's daemon leaves its forked workers to the kernel, so a worker's CPU counts as it
# was at its last sample: up to this much of it a worker is missed
SAMPLE_S = 0.1
WARMED: list[str] = []  # the tools whose unmeasured first run is done


def record(i: int) -> bytes:
    return b'{"id":%d,"user":"user-%d","amount":%d.%02d,"ts":"2024-05-01T00:%02d:%02dZ"}' % (
        i, i % 1000, i % 997, i % 100, i // 60 % 60, i % 60)


@dataclass(frozen=True)
class Row:
    size: int
    tool: str
    wall: float
    cpu: float
    exact: str  # "yes", or what is wrong with the output
    detail: str = ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,300000,3000000")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](json.loads(args.child[1]))))
        return
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")]
    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        ap.error(f"unknown tools {sorted(unknown)}: choose from {', '.join(TOOLS)}")
    rows = run_all(sizes, tools)
    report(rows, tools)


def run_all(sizes: list[int], tools: list[str]) -> list[Row]:
    from bench.children import local_broker
    from devtools.cpu_meter import CpuMeter, Root
    from devtools.services import SparkConnect, SparkStandalone
    python = dlt_python() if "dlt" in tools else ""
    rows: list[Row] = []
    with local_broker("streamslice-peers-") as (work, broker):
        meter = CpuMeter({os.getpid(): Root("bench", "tools"), broker.pid: Root("broker")},
                         match=lambda cmd: "tools" if "local_server" in cmd else None,
                         every=SAMPLE_S).start()
        os.environ["STREAMSLICE_LOCAL_SERVER_DIR"] = str(work / "servers")
        connect = SparkConnect(work / "connect").start() if "connect" in tools else None
        cluster = SparkStandalone(work / "standalone").start() \
            if "spark-submit" in tools else None
        try:
            for size in sizes:
                topic = f"peers-{size}"
                t = time.perf_counter()
                produce(broker.bootstrap, topic, size)
                print(f"{size:,} records produced in {time.perf_counter() - t:.1f}s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
                for tool in tools:
                    job: dict[str, Any] = {"bootstrap": broker.bootstrap, "topic": topic,
                                           "size": size,
                           "out": str(work / f"{tool}-{size}"), "python": python,
                           "remote": connect.remote if connect else "",
                           "master": cluster.master if cluster else ""}
                    rows.append(measure(meter, tool, job))
                    print(f"  {tool:13} {rows[-1].wall:7.1f} s wall {rows[-1].cpu:7.1f} CPU s "
                          f"exact: {rows[-1].exact} {rows[-1].detail}", flush=True)
                    shutil.rmtree(job["out"], ignore_errors=True)
        finally:
            from streamslice.spark import local_server
            for folder in (work / "servers").glob("*/keeper.pid"):
                local_server._kill_group(int(folder.read_text()))
            if connect:
                connect.stop()
            if cluster:
                cluster.stop()
            meter.stop()
    return rows


def measure(meter: CpuMeter, tool: str, job: dict[str, Any]) -> Row:
    if tool == "local-cold":
        stop_kept_servers(Path(os.environ["STREAMSLICE_LOCAL_SERVER_DIR"]))
    if tool == "connect" and not WARMED:  # its first session starts the server's workers
        WARMED.append(tool)
        measure(meter, tool, job)
        shutil.rmtree(job["out"], ignore_errors=True)
    python = job["python"] if tool == "dlt" else sys.executable  # dlt: in its own venv
    cmd = [python, __file__, "--child", tool, json.dumps(job)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    env.pop("STREAMSLICE_SPARK_CONF", None)
    before, start = meter.snapshot(), time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=job["out"]
                         if os.path.isdir(job["out"]) else None)
    wall = time.perf_counter() - start
    usage = meter.since(before)
    if out.returncode != 0:
        return Row(job["size"], tool, wall, usage.components.get("tools", 0.0),
                   "failed", (out.stderr or out.stdout).strip().splitlines()[-1][:200])
    detail = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return Row(job["size"], tool, wall, usage.components.get("tools", 0.0),
               exact(Path(job["out"]), job["size"]), detail)


def stop_kept_servers(folder: Path) -> None:
    from streamslice.spark import local_server
    for pid_file in folder.glob("*/keeper.pid"):
        local_server._kill_group(int(pid_file.read_text()))
        (pid_file.parent / "server.json").unlink(missing_ok=True)


def exact(out: Path, size: int) -> str:
    """The output's Parquet rows (data files only, not the tools' working folders: dlt's
    ``_dlt``, streamslice's ``_streamslice``): the ids 0..size-1, each once."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    files = [p for p in out.rglob("*.parquet")
             if not any(part.startswith("_") for part in p.relative_to(out).parts)]
    if not files:
        return "no Parquet"
    ids = [pq.read_table(f, columns=[id_column(f)]).column(0) for f in files]
    import pyarrow as pa
    column = pa.chunked_array([c.combine_chunks() for c in ids]).cast(pa.int64())
    n, distinct = len(column), pc.count_distinct(column).as_py()
    low, high = pc.min(column).as_py(), pc.max(column).as_py()
    if n == size and distinct == size and low == 0 and high == size - 1:
        return "yes"
    return f"NO: {n} rows, {distinct} ids"


def id_column(path: Path) -> str:
    import pyarrow.parquet as pq
    names = pq.read_schema(path).names
    return "id" if "id" in names else next(n for n in names if n.endswith("id"))


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    from devtools.services import create_topic
    create_topic(bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                  "batch.num.messages": 100_000, "queue.buffering.max.messages": 2_000_000,
                  "enable.idempotence": False})
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=record(i), key=b"%d" % i, partition=i % PARTITIONS,
                          timestamp=1_714_521_600_000 + i)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(300)


def dlt_python() -> str:
    """dlt's own virtual environment (made once, from PyPI); its interpreter."""
    venv = Path(os.path.realpath(ROOT / ".venv")) / "peers" / "dlt-1.31.0"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import dlt, confluent_kafka, pyarrow"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python)
    print(f"installing {', '.join(DLT)} into {venv} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *DLT], check=True)
    return str(python)


# ---- the children: each runs one tool's job and prints a JSON line of its own figures

def child_raw(job: dict[str, Any]) -> dict[str, Any]:
    """consume() to each partition's end, json.loads, one Parquet file per partition."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": job["bootstrap"], "group.id": "peers",
                  "enable.auto.commit": False, **BIG})
    topic, out = job["topic"], Path(job["out"])
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p))[1] for p in range(PARTITIONS)}
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    cols: dict[int, dict[str, list[Any]]] = {
        p: {k: [] for k in ("id", "user", "amount", "ts", "partition", "offset")}
        for p in range(PARTITIONS)}
    done = {p for p, e in ends.items() if e == 0}
    while len(done) < PARTITIONS:
        for m in c.consume(10_000, timeout=1.0):
            partition, offset = m.partition(), m.offset()
            if m.error() or partition is None or offset is None or offset >= ends[partition]:
                continue
            value = json.loads(m.value() or b"{}")
            col = cols[partition]
            for k in ("id", "user", "amount", "ts"):
                col[k].append(value.get(k))
            col["partition"].append(partition)
            col["offset"].append(offset)
            if offset == ends[partition] - 1:
                done.add(partition)
    c.close()
    out.mkdir(parents=True, exist_ok=True)
    for p, col in cols.items():
        ts = pa.array(col["ts"]).cast(pa.timestamp("us", "UTC"))
        table = pa.table(col).set_column(3, "ts", ts)
        pq.write_table(table, out / f"part-{p}.parquet")
    return {}


def child_dlt(job: dict[str, Any]) -> dict[str, Any]:
    """dlt's Kafka verified source (vendored unchanged) from the topic's start to its end,
    each JSON value parsed by the message processor, into the filesystem destination as
    Parquet. Runs in dlt's own virtual environment: imports nothing of streamslice."""
    out = Path(job["out"])
    out.mkdir(parents=True, exist_ok=True)
    os.environ["DLT_DATA_DIR"] = str(out / "_dlt")  # its working state: not the output
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    sys.path.insert(0, str(ROOT / "bench" / "vendor"))
    import dlt
    from confluent_kafka import Consumer
    from dlt_kafka import kafka_consumer

    def processor(msg: Any) -> dict[str, Any]:
        row: dict[str, Any] = json.loads(msg.value())
        # where it came from, as dlt's own processor keeps it (the table is named by topic)
        row["_kafka"] = {"topic": msg.topic(), "partition": msg.partition(),
                         "offset": msg.offset()}
        return row

    consumer = Consumer({"bootstrap.servers": job["bootstrap"], "group.id": "peers-dlt",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **BIG})
    pipeline = dlt.pipeline(pipeline_name="peers", destination=dlt.destinations.filesystem(
        bucket_url=(out / "data").as_uri()), dataset_name="peers",
        pipelines_dir=str(out / "_dlt" / "pipelines"))
    # batch_timeout: the source stops at the first empty consume(); the local broker answers
    # a fetch with the whole rest of the log, which takes longer than its 3 s default at 3M
    info = pipeline.run(kafka_consumer(job["topic"], credentials=consumer,
                                       msg_processor=processor, batch_timeout=120),
                        loader_file_format="parquet")
    return {"loads": len(info.loads_ids)}


def child_streamslice(job: dict[str, Any], spark: str) -> dict[str, Any]:
    """plan + read (the pipeline's runner) + verify, publish and checkpoint; no Airflow."""
    from streamslice.commit.checkpoint import Checkpoint, advance
    from streamslice.commit.protocol import publish_once, staging_for
    from streamslice.config import parse_pipeline
    from streamslice.planning.planner import plan_run
    from streamslice.runners import RunRequest
    started = time.perf_counter()
    cfg = parse_pipeline(f"""
mode: incremental
kafka:
  bootstrap_servers: {job["bootstrap"]}
  topics: [{job["topic"]}]
  properties: {{receive.message.max.bytes: {BIG["receive.message.max.bytes"]}}}
format:
  value: json
  schema: "{DDL}"
output:
  path: {job["out"]}
spark: {spark}
""", default_name="peers")
    state = Path(job["out"]) / "checkpoint.json"
    current = Checkpoint.saved(json.loads(state.read_text())) if state.exists() else None
    props = cfg.source.client_properties()
    plan = plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                    output=cfg.output.target(cfg.name), checkpoint=current, run_id="r1",
                    properties=props)
    planned = time.perf_counter()
    staging = staging_for(plan, f"try-{time.time_ns()}")
    cfg.spark.run(RunRequest(cfg, plan, staging.uri, props, cfg.source.read_options({})))
    read = time.perf_counter()
    now = int(time.time() * 1000)
    publish_once(plan, staging, run_id="r1", now_ms=now)
    after = advance(current, plan, now_ms=now, run_id="r1")
    state.write_text(json.dumps(after.to_dict() if after else None))
    end = time.perf_counter()
    return {"plan": round(planned - started, 2), "read": round(read - planned, 2),
            "commit": round(end - read, 2)}


CHILDREN = {
    "raw": child_raw,
    "dlt": child_dlt,
    "local-jvm": lambda job: child_streamslice(job, "{runner: local, local_server: false}"),
    "local-cold": lambda job: child_streamslice(job, "{runner: local}"),
    "local-warm": lambda job: child_streamslice(job, "{runner: local}"),
    "connect": lambda job: child_streamslice(
        job, f"{{runner: connect, remote: '{job['remote']}'}}"),
    "spark-submit": lambda job: child_streamslice(
        job, f"{{runner: spark-submit, master: '{job['master']}'}}"),
}


def report(rows: list[Row], tools: list[str]) -> None:
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| records | tool | wall s | records/s | CPU s (all processes) | vs dlt: records/s"
          " | vs dlt: CPU | exact |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sorted({r.size for r in rows}):
        mine = [r for r in rows if r.size == size]
        dlt = next((r for r in mine if r.tool == "dlt" and r.exact == "yes"), None)
        for r in sorted(mine, key=lambda r: tools.index(r.tool)):
            rate = size / r.wall if r.wall else 0.0
            vs_rate = f"{rate / (size / dlt.wall):.2f}x" if dlt else "-"
            vs_cpu = f"{r.cpu / dlt.cpu:.2f}x" if dlt and dlt.cpu else "-"
            print(f"| {size:,} | {r.tool} | {r.wall:.1f} | {rate:,.0f} | {r.cpu:.1f} | "
                  f"{vs_rate} | {vs_cpu} | {r.exact} |")
    raw = {r.size: r for r in rows if r.tool == "raw"}
    for r in rows:
        if r.tool == "local-warm" and r.size in raw and raw[r.size].cpu:
            print(f"local-warm CPU per record against the raw loop at {r.size:,}: "
                  f"{r.cpu / raw[r.size].cpu:.2f}x")


if __name__ == "__main__":
    main()
