"""Start-up cost of a pipeline run, end to end through Airflow: one DAG run (``dag.test()``:
plan → read → commit) in a fresh process, as an Airflow worker runs a task, for an empty
interval and for an interval of 1,000 records, with the read on

* ``local``: Spark local[*] inside the task process (``local_server: false``), so every run
  starts a JVM;
* ``connect``: a Spark Connect server started once before the runs (``spark.runner:
  connect``); the first run on it also starts the server's Python workers for the session.

and, as the baseline of what Airflow itself costs, the same DAG with tasks that do nothing.
Prints the wall time of each run's process, of ``dag.test()`` and of each task, then the
medians and the ratios connect / local and against the baseline. The runs use a snapshot of
the package, so edits made meanwhile do not give the server a new session. Asserts nothing.
  python bench/run_overhead.py [--repeat 3] [--records 1000]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def environment(work: Path) -> tuple[dict[str, str], Path]:
    """Airflow on SQLite in ``work``; the session's DAGs folder runs the real DAG factory."""
    dags = work / "dags"
    (dags / "pipelines").mkdir(parents=True)
    shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", dags)
    plugins = work / "plugins"
    shutil.copytree(ROOT / "plugins", plugins, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, AIRFLOW_HOME=str(work / "airflow"),
               AIRFLOW__CORE__DAGS_FOLDER=str(dags),
               AIRFLOW__CORE__PLUGINS_FOLDER=str(plugins),
               AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW__LOGGING__LOGGING_LEVEL="WARNING",
               AIRFLOW__CORE__UNIT_TEST_MODE="False", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([str(plugins), str(ROOT)]),
               PYTHONWARNINGS="ignore")
    for key in ("SPARK_REMOTE", "STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_CONF",
                "STREAMSLICE_INJECT_FAULT"):
        env.pop(key, None)
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], env=env,
                   check=True, capture_output=True)
    return env, dags / "pipelines"


def pipeline(folder: Path, name: str, bootstrap: str, topic: str, spark_block: str,
             output: Path) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"""
mode: interval
schedule: "@hourly"
start_date: "2024-05-01T00:00:00Z"
retries: 0
kafka:
  bootstrap_servers: {bootstrap}
  topics: [{topic}]
spark:
{spark_block}
output:
  path: {output}
""")
    return path


def run(env: dict[str, str], path: Path, hour: int, noop: bool = False) -> dict[str, float]:
    """One DAG run in a fresh process; the run's interval is [hour, hour + 1)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "devtools.dag_run", str(path),
                          f"2024-05-01T{hour + 1:02d}:00:00+00:00", *(["--noop"] * noop)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"run of {path.name} for hour {hour} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    tasks: dict[str, float] = {k: v["seconds"] for k, v in result["tasks"].items()}
    return {"wall": wall, "dag_test": result["dag_test_seconds"], **tasks,
            "tasks": sum(tasks.values())}


def show(label: str, r: dict[str, float]) -> None:
    print(f"  {label:<34}{r['wall']:>7.2f}{r['dag_test']:>10.2f}{r['plan']:>7.2f}"
          f"{r['read']:>7.2f}{r['commit']:>8.2f}{r['tasks']:>8.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--records", type=int, default=1000)
    args = ap.parse_args()

    from devtools.services import KafkaBroker, SparkConnect, create_topic
    from devtools.taxi import produce, trips
    work = Path(tempfile.mkdtemp(prefix="streamslice-bench-overhead-"))
    broker = KafkaBroker(work / "kafka").start()
    server = SparkConnect(work / "spark-connect")
    try:
        print("starting the Spark Connect server (once, before any run) …", flush=True)
        started = time.perf_counter()
        server.start()
        print(f"  server up in {time.perf_counter() - started:.1f}s", flush=True)
        env, folder = environment(work)
        topic = "trips"
        create_topic(broker.bootstrap, topic, 4)
        # even hours are empty, odd hours hold --records each: every run reads its own interval
        for k in range(args.repeat + 1):
            produce(broker.bootstrap, topic, trips(T0 + (2 * k + 1) * HOUR, hours=1,
                                                   per_hour=args.records, seed=k, late_share=0))
        files = {
            "local": pipeline(folder, "overhead_local", broker.bootstrap, topic,
                              "  runner: local\n  local_server: false", work / "lake"),
            "connect": pipeline(folder, "overhead_connect", broker.bootstrap, topic,
                                f"  runner: connect\n  remote: {server.remote}", work / "lake"),
            "noop": pipeline(folder, "overhead_noop", broker.bootstrap, topic,
                             "  runner: local\n  local_server: false", work / "lake")}
        print(f"  load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        print(f"\n  {'run (fresh process each)':<34}{'wall s':>7}{'dag.test':>10}{'plan':>7}"
              f"{'read':>7}{'commit':>8}{'tasks':>8}")
        first = run(env, files["connect"], 2 * args.repeat)  # a new session on the server
        show("connect, first run of a session", first)
        # interleaved, so a change in the machine's load hits every case alike
        cases = [("noop", "Airflow alone (no-op tasks)", 0)]
        cases += [(runner, f"{runner}, {case}", offset) for runner in ("local", "connect")
                  for case, offset in (("empty", 0), (f"{args.records} records", 1))]
        rows: dict[str, list[dict[str, float]]] = {label: [] for _, label, _ in cases}
        for k in range(args.repeat):
            for key, label, offset in cases:
                rows[label].append(run(env, files[key], 2 * k + offset, noop=key == "noop"))
                show(f"{label} #{k + 1}", rows[label][-1])
        results = {label: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                   for label, runs in rows.items()}
        floor = results.pop("Airflow alone (no-op tasks)")
        print(f"\n  medians of {args.repeat}:")
        show("Airflow alone (no-op tasks)", floor)
        for label, r in results.items():
            show(label, r)
        print("\n  connect / local (medians); 'over Airflow' = minus the same figure for three "
              "no-op tasks (goal for connect: plan+read+commit over Airflow <= 3 s):")
        for case in ("empty", f"{args.records} records"):
            c, loc = results[f"connect, {case}"], results[f"local, {case}"]
            print(f"  {case:<16} run wall {c['wall']:.2f}s / {loc['wall']:.2f}s = "
                  f"{c['wall'] / loc['wall']:.2f}x (over Airflow {c['wall'] - floor['wall']:.2f}s"
                  f" / {loc['wall'] - floor['wall']:.2f}s); read task {c['read']:.2f}s / "
                  f"{loc['read']:.2f}s = {c['read'] / loc['read']:.2f}x; plan+read+commit "
                  f"{c['tasks']:.2f}s / {loc['tasks']:.2f}s (over Airflow "
                  f"{c['tasks'] - floor['tasks']:.2f}s / {loc['tasks'] - floor['tasks']:.2f}s)")
        print(f"  load average at end: {os.getloadavg()[0]:.1f}")
    finally:
        server.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
