"""What history costs: a backfill of N hourly intervals through the real Airflow components
(api-server, scheduler with the LocalExecutor, dag-processor, triggerer; PostgreSQL as in
docker-compose.yml, or ``--database sqlite``) reading on a
Spark Connect server started once, against one run reading the same records at once, in the
same go:

* ``hourly``: an ``@hourly`` interval pipeline, backfilled over the N hours with
  ``streamslice backfill`` (one DAG run per interval, ``max_active_runs`` of them at a time);
* ``single``: the same topic through a pipeline whose one interval is the N hours, backfilled
  the same way, before and after the hourly backfill (the first one also starts the server's
  Python workers; the ratio is taken to the second, warm one, and the first is printed).

Both are measured in each task layout given (``--tasks``, all three by default, one after
the other in the same go): ``separate`` (plan, read and commit each a task), ``combined``
(the three steps in one task, without reading ahead: ``read_ahead: 0``) and ``ahead`` (one
task that also reads the queued runs' intervals in its job: Spark Connect's default,
``tasks: combined`` with ``read_ahead`` at its default).

Each is timed twice: the CLI's wall (which also imports Airflow, creates the backfill and
polls every 0.5 s: a fixed cost of some seconds) and the runs' own time, first run start to
last run end in Airflow's records; the ratio is printed for both.

Every interval's manifest count and its Parquet rows (distinct partition/offset pairs) are
checked against what was produced; a wrong count ends the run with an error. Then where the
time went, summed over the hourly runs and divided by N, from the task instances' queued,
start and end times (Airflow's REST API) and the task logs' own timestamps:

* ``scheduler``: a run's time with none of its tasks queued or running (run start → first
  task queued, one task's end → the next one queued, last task's end → run end);
* ``queued``: task queued → started (the executor picking it up, the task's supervisor);
* ``start-up``: task started → the task process has parsed the DAG file (Airflow logs
  "Worker startup parse complete"): process start-up and imports;
* ``callable:plan|read|commit``: our own work, until the callable returned ("Done." in the log);
  in the combined task split at its own log lines (the plan logged, the read's "Read N
  splits", the commit's "Committed"); a run that commits what another run read ahead for it
  has no plan or read: its ``plan`` is its look for the claim and its wait for the reader;
* ``finish``: Airflow's own after the callable (XCom, outlet events, state) until the task's end.

And where the CPU went during each command's wall (``devtools/cpu_meter.py``, by process
tree, short-lived processes in full): per interval for each component (the task processes:
the scheduler's descendants, the LocalExecutor's workers and each task's supervisor and task
process; the scheduler, dag-processor, api-server and triggerer; the Connect server's JVM
and its Python workers; the broker; PostgreSQL's backends of the benchmark's database; the
CLI: ``streamslice backfill`` and the ``airflow`` commands it starts), what they add up to
(the deployment's), this script's own (its sampling), the rest of the machine's (its busy
CPU in ``/proc/stat`` less all of these: other load) and the cores' worth the machine used
(CPU s / wall s), so a CPU-bound backfill shows as such. The ratio to the single read is
also printed by CPU.

The load average is printed with each figure: on a shared machine single figures vary, the
ratio in one go less so. Asserts nothing about time.
  python bench/backfill.py [--intervals 48] [--records 300] [--max-active-runs 4]
                          [--tasks separate,combined,ahead]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devtools.cpu_meter import CpuMeter, Usage
    from devtools.services import AirflowServices, KafkaBroker, SparkConnect

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
STEPS = ("plan", "read", "commit")
LAYOUTS = ("separate", "combined", "ahead")
# each layout's lines in the pipeline file
LAYOUT_YAML = {"separate": "tasks: separate", "combined": "tasks: combined\nread_ahead: 0",
               "ahead": "tasks: combined"}
TASKS, SCRIPT, REST = "task processes", "this script", "rest of the machine"
# where the CPU goes, in the order printed; the bench's own (its sampling) and the rest of the
# machine's are printed apart, after what the deployment used
COMPONENTS = (TASKS, "scheduler", "dag-processor", "api-server", "triggerer", "Connect JVM",
              "Spark Python workers", "broker", "PostgreSQL", "CLI")


def utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def pipeline(folder: Path, name: str, schedule: str, last_start: int, tasks: str, bootstrap: str,
             topic: str, remote: str, output: Path, max_active_runs: int) -> None:
    (folder / f"{name}.yaml").write_text(f"""
mode: interval
{LAYOUT_YAML[tasks]}
schedule: "{schedule}"
start_date: "2024-05-01T00:00:00Z"
end_date: "{utc(last_start):%Y-%m-%dT%H:%M:%SZ}"  # no scheduled run besides the backfill
max_active_runs: {max_active_runs}
retries: 0
kafka:
  bootstrap_servers: {bootstrap}
  topics: [{topic}]
spark:
  runner: connect
  remote: {remote}
output:
  path: {output}
""")


def cpu_meter(airflow: AirflowServices, server: SparkConnect, broker: KafkaBroker,
              database: str | None) -> CpuMeter:
    """The meter of each component by its process tree: the scheduler's descendants are the
    task processes (the LocalExecutor's workers, each task's supervisor and task process),
    the Connect server's its Python workers, this script's the commands it runs (``streamslice
    backfill`` and the ``airflow`` commands it starts); PostgreSQL's backends serving the
    benchmark's database by their command line."""
    from devtools.cpu_meter import CpuMeter, Root
    roots = {pid: Root(name, TASKS if name == "scheduler" else "")
             for name, pid in airflow.pids().items()}
    roots[server.pid] = Root("Connect JVM", "Spark Python workers")
    roots[broker.pid] = Root("broker")
    roots[os.getpid()] = Root(SCRIPT, "CLI")

    def backend(cmdline: str) -> str | None:
        mine = database and cmdline.startswith("postgres:") and f" {database} " in cmdline
        return "PostgreSQL" if mine else None
    return CpuMeter(roots, backend).start()


def deployment(used: Usage) -> float:
    """The CPU the measured components used: the machine's but for this script's own and
    the rest of the machine's."""
    return sum(used.components.get(c, 0.0) for c in COMPONENTS)


def print_cpu(columns: list[tuple[str, int, Usage, str]]) -> None:
    """A column of CPU seconds per interval by component for each measured backfill."""
    cores = os.cpu_count() or 1
    print(f"\n  where the CPU went, CPU s per interval (the single read is one interval) "
          f"during each command's wall, {cores} cores:")
    print(f"  {'':<22}" + "".join(f"{label:>18}" for label, *_ in columns))

    def row(name: str, values: list[float], share: bool = True) -> None:
        cells = [f"{v / n:>12.2f}" + (f"{v / deployment(u):>5.0%} " if share else " " * 6)
                 for v, (_, n, u, _) in zip(values, columns)]
        print(f"  {name:<22}" + "".join(cells))
    for name in COMPONENTS:
        row(name, [u.components.get(name, 0.0) for _, _, u, _ in columns])
    row("the deployment", [deployment(u) for _, _, u, _ in columns], share=False)
    row(SCRIPT + " (sampling)", [u.components.get(SCRIPT, 0.0) for _, _, u, _ in columns],
        share=False)
    row(REST, [u.rest for _, _, u, _ in columns], share=False)
    row("the machine", [u.machine for _, _, u, _ in columns], share=False)
    print(f"  {'wall s':<22}" + "".join(f"{u.wall:>12.1f}{'':6}" for _, _, u, _ in columns))
    print(f"  {'cores used (CPU/wall)':<22}" + "".join(
        f"{u.machine / u.wall:>12.2f}{'':6}" for _, _, u, _ in columns) + f"  of {cores}")
    print(f"  {'load at its end':<22}" + "".join(f"{at:>12}{'':6}" for *_, at in columns))


Measured = tuple[float, float, "Usage"]  # the CLI's wall, the runs' own time, the CPU


def print_ratios(figures: dict[str, tuple[Measured, Measured]], cold: Measured) -> None:
    """Each layout's backfill against its warm single read (and the cold one), by time and
    by CPU; and the layouts' backfills against each other."""
    for tasks, (hours, warm) in figures.items():
        print(f"  {tasks}: backfill / single read: {hours[1] / warm[1]:.1f}x by the runs' "
              f"own time, {hours[0] / warm[0]:.1f}x by the CLI's wall (to the cold read: "
              f"{hours[1] / cold[1]:.1f}x, {hours[0] / cold[0]:.1f}x)")
        runs = [deployment(u) - u.components.get("CLI", 0.0) for u in (hours[2], warm[2])]
        print(f"  {tasks}: backfill / single read by CPU: "
              f"{deployment(hours[2]) / deployment(warm[2]):.1f}x the deployment's, "
              f"{runs[0] / runs[1]:.1f}x without the CLI's (its fixed cost), "
              f"{hours[2].machine / warm[2].machine:.1f}x the machine's")
    first, *others = figures
    for other in others:  # each layout's hourly backfill against the first one's
        (before, _), (after, _) = figures[first], figures[other]
        print(f"  {other} / {first}, the hourly backfill: {after[1] / before[1]:.2f}x by "
              f"the runs' own time, {after[0] / before[0]:.2f}x by the CLI's wall, "
              f"{deployment(after[2]) / deployment(before[2]):.2f}x by the deployment's CPU")


def backfill(airflow: AirflowServices, folder: Path, name: str,
             hours: int) -> tuple[float, float, list[str]]:
    """``streamslice backfill`` of the N hours: wall seconds and its per-interval rows."""
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(folder), "backfill",
           name, "--from", str(T0), "--to", str(T0 + hours * HOUR), "--unpause", "--json"]
    started, clock = time.perf_counter(), time.time()
    out = subprocess.run(cli, env=airflow.env, capture_output=True, text=True, timeout=6 * 3600)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"backfill of {name} failed:\n{out.stderr[-3000:]}\n"
                 f"{airflow.log_tail('scheduler')}")
    try:
        result = json.loads(out.stdout)
    except ValueError:
        sys.exit(f"backfill of {name} printed no JSON:\n{out.stdout[:3000]}")
    if result["state"] != "success":
        sys.exit(f"backfill of {name}: {result}")
    waits = [ln for ln in out.stderr.splitlines() if ln.startswith(f"backfill {name}:")]
    return wall, clock, waits


def cli_parts(airflow: AirflowServices, name: str, clock: float,
              wall: float) -> tuple[float, float, float]:
    """Where the command's time outside the runs went: until Airflow had the backfill (the
    command importing Airflow and creating it), from then to the first run's start (the
    scheduler), and from the last run's end to the command's (its polling, closing)."""
    mine = [b for b in airflow.api("GET", f"/api/v2/backfills?dag_id={name}&limit=100")
            ["backfills"] if ts(b["created_at"]) >= clock]
    runs = pages(airflow, f"/api/v2/dags/{name}/dagRuns", "dag_runs")
    first, last = min(ts(r["start_date"]) for r in runs), max(ts(r["end_date"]) for r in runs)
    created = max(ts(b["created_at"]) for b in mine) if mine else first
    return created - clock, first - created, clock + wall - last


def span(airflow: AirflowServices, name: str) -> float:
    """Seconds from the DAG's first run start to its last run end: the runs' own time,
    without the CLI's (creating the backfill in a fresh ``airflow`` process, polling)."""
    runs = pages(airflow, f"/api/v2/dags/{name}/dagRuns", "dag_runs")
    return max(ts(r["end_date"]) for r in runs) - min(ts(r["start_date"]) for r in runs)


def check_counts(output: Path, name: str, expected: dict[int, int]) -> int:
    """Every partition holds exactly its records: the manifest's count, and as many distinct
    (partition, offset) rows in its Parquet files."""
    import pyarrow.dataset as ds
    for start, want in sorted(expected.items()):
        part = Path(output) / f"pipeline={name}" / \
            f"interval={utc(start):%Y%m%dT%H%M%SZ}"
        manifest = json.loads((part / "_manifest.json").read_text())
        t = ds.dataset(str(part), format="parquet").to_table(columns=["partition", "offset"])
        rows = set(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
        if not manifest["records"] == t.num_rows == len(rows) == want:
            sys.exit(f"{name} {part.name}: manifest {manifest['records']}, {t.num_rows} rows "
                     f"({len(rows)} distinct), expected {want}")
    return len(expected)


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def pages(airflow: AirflowServices, path: str, key: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        sep = "&" if "?" in path else "?"
        got = airflow.api("GET", f"{path}{sep}limit=100&offset={offset}")[key]
        out += got
        if len(got) < 100:
            return out
        offset += 100


STEP_ENDS = {"plan": ("Planned ", "Reusing the plan", "Committing what run"),
             "read": ("Read ", "Committing what run"),
             "commit": ("Committed ",)}


def task_log_times(home: Path, ti: dict[str, Any]
                   ) -> tuple[float | None, float | None, dict[str, float]]:
    """From the task's log: when its process had parsed the DAG file (Airflow's "Worker
    startup parse complete"), when its callable returned ("Done. Returned value …") and when
    each step ended by its own log line (``STEP_ENDS``); None for what the log does not
    hold."""
    path = (Path(home) / "logs" / f"dag_id={ti['dag_id']}" / f"run_id={ti['dag_run_id']}" /
            f"task_id={ti['task_id']}" / f"attempt={ti['try_number']}.log")
    parsed: float | None = None
    done: float | None = None
    steps: dict[str, float] = {}
    for line in path.read_text(errors="replace").splitlines() if path.exists() else ():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        event = str(entry.get("event", ""))
        if not entry.get("timestamp"):
            continue
        at = ts(entry["timestamp"])
        if event.startswith("Worker startup parse complete") and parsed is None:
            parsed = at
        elif event.startswith("Done. Returned value"):
            done = at
        for step, marks in STEP_ENDS.items():
            if step not in steps and event.startswith(marks):
                steps[step] = at
    return parsed, done, steps


def breakdown(airflow: AirflowServices, name: str) -> tuple[dict[str, float], int, int]:
    """Seconds summed over the DAG's runs: scheduler, queued, start-up, the callables per
    task and Airflow's finish after them; and how many task logs lacked a time."""
    runs = {r["dag_run_id"]: r for r in pages(airflow, f"/api/v2/dags/{name}/dagRuns",
                                               "dag_runs")}
    tis = pages(airflow, f"/api/v2/dags/{name}/dagRuns/~/taskInstances", "task_instances")
    by_run: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for ti in tis:
        by_run[ti["dag_run_id"]].append(ti)
    spent: defaultdict[str, float] = defaultdict(float)
    missing = 0
    for run_id, run in runs.items():
        last_end = ts(run["start_date"])
        for ti in sorted(by_run[run_id],
                         key=lambda t: ts(t["start_date"]) if t["start_date"] else 0):
            queued, start, end = (ts(ti["queued_when"]), ts(ti["start_date"]),
                                  ts(ti["end_date"]))
            parsed, done, steps = task_log_times(airflow.home, ti)
            if parsed is None or done is None:
                missing += 1
            parsed = start if parsed is None else parsed
            done = end if done is None else done
            spent["scheduler"] += max(0.0, queued - last_end)
            spent["queued"] += start - queued
            spent["start-up"] += parsed - start
            if ti["task_id"] in STEPS or len(steps) < len(STEPS):
                spent[f"callable:{ti['task_id']}"] += done - parsed
            else:  # the combined task: its steps by their own log lines
                ends = [steps[step] for step in STEPS]
                for step, begin, end_ in zip(STEPS, [parsed, *ends], [*ends[:-1], done]):
                    spent[f"callable:{step}"] += end_ - begin
            spent["finish"] += end - done
            last_end = end
        spent["scheduler"] += max(0.0, ts(run["end_date"]) - last_end)
    return spent, len(runs), missing


def print_breakdown(airflow: AirflowServices, tasks: str, n: int, max_active_runs: int) -> None:
    spent, runs, missing = breakdown(airflow, f"bf_hourly_{tasks}")
    assert runs == n, f"{runs} runs of bf_hourly_{tasks}, expected {n}"
    print(f"\n  {tasks}: where an interval's time goes (hourly runs, sums / {n}; runs overlap "
          f"{max_active_runs} at a time, so they add up to more than wall / N):")
    total = sum(spent.values())
    keys = ["scheduler", "queued", "start-up", *(f"callable:{t}" for t in STEPS), "finish"]
    keys += sorted(k for k in spent if k not in keys)
    for key in keys:
        print(f"  {key:<20}{spent[key] / n:>8.2f}s  {spent[key] / total:>5.0%}")
    print(f"  {'run (sum)':<20}{total / n:>8.2f}s")
    if missing:
        print(f"  ({missing} task logs without the times: counted as callable)")
    single_spent, _, _ = breakdown(airflow, f"bf_single_{tasks}")
    print(f"  {tasks}: the single read's runs (summed): " + ", ".join(
        f"{k} {v:.1f}s" for k, v in sorted(single_spent.items())))


def arguments() -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--intervals", type=int, default=48)
    ap.add_argument("--records", type=int, default=300, help="records per hourly interval")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--max-active-runs", type=int, default=4)
    ap.add_argument("--database", choices=("postgres", "sqlite"), default="postgres",
                    help="Airflow's metadata database (SQLite: one writer at a time)")
    ap.add_argument("--tasks", default=",".join(LAYOUTS),
                    help="task layouts to measure, in this order (separate, combined, ahead)")
    ap.add_argument("--scheduler-idle-sleep", default="0.2",
                    help="[scheduler] scheduler_idle_sleep_time, s (docker-compose.yml: 0.2, "
                         "Airflow's default 1)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (logs)")
    args = ap.parse_args()
    layouts = args.tasks.split(",")
    if not layouts or set(layouts) - set(LAYOUTS):
        ap.error(f"--tasks: a comma-separated list of {', '.join(LAYOUTS)}")
    return args, layouts


def main() -> None:
    args, layouts = arguments()
    n = args.intervals

    from devtools.services import (
        AirflowServices,
        KafkaBroker,
        Postgres,
        SparkConnect,
        create_topic,
    )
    from devtools.taxi import produce, trips
    work = Path(tempfile.mkdtemp(prefix="streamslice-bench-backfill-"))
    # a snapshot of the package, so edits made meanwhile change neither tasks nor the server
    plugins = work / "plugins"
    shutil.copytree(ROOT / "plugins", plugins, ignore=shutil.ignore_patterns("__pycache__"))
    dags = work / "dags"
    (dags / "pipelines").mkdir(parents=True)
    shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", dags)
    broker = KafkaBroker(work / "kafka")
    server = SparkConnect(work / "spark-connect")
    airflow = AirflowServices(work / "airflow", dags, env={
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins), "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)]), "PYTHONWARNINGS": "ignore",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",  # the task logs' times: see breakdown()
        # as docker-compose.yml sets it: a backfill's next runs start soon after the last end
        "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": args.scheduler_idle_sleep})
    for key in ("SPARK_REMOTE", "STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_CONF",
                "STREAMSLICE_INJECT_FAULT"):
        airflow.env.pop(key, None)
    # Airflow on PostgreSQL as deployments run it (docker-compose.yml), in a database of this
    # run's own: a second run on the machine would otherwise drop it, and its scheduler
    # would take this run's tasks
    db = Postgres(f"streamslice_bench_{os.getpid()}") if args.database == "postgres" else None
    if db is not None:
        db.start().recreate()
        airflow.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = db.url
        airflow.env.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS", None)  # SQLite's
    meter: CpuMeter | None = None
    try:
        started = time.perf_counter()
        broker.start()
        server.start()
        airflow.start()
        meter = cpu_meter(airflow, server, broker, db.database if db else None)
        print(f"services up in {time.perf_counter() - started:.0f}s ({load()}, "
              f"{os.cpu_count()} cores)", flush=True)
        topic = "trips"
        create_topic(broker.bootstrap, topic, args.partitions)
        sent = produce(broker.bootstrap, topic, trips(T0, hours=n, per_hour=args.records,
                                                      seed=31, late_share=0))
        hourly: dict[int, int] = Counter(T0 + (t - T0) // HOUR * HOUR for _, _, t in sent)
        print(f"produced {len(sent)} records into {n} hours ({args.partitions} partitions)")
        folder, output = dags / "pipelines", work / "lake"
        common = (broker.bootstrap, topic, server.remote, output, args.max_active_runs)
        for tasks in layouts:
            pipeline(folder, f"bf_hourly_{tasks}", "@hourly", T0 + (n - 1) * HOUR, tasks,
                     *common)
            pipeline(folder, f"bf_single_{tasks}", f"{n}h", T0 + HOUR, tasks, *common)
        for tasks in layouts:
            for name in (f"bf_hourly_{tasks}", f"bf_single_{tasks}"):
                airflow.wait_for_dag(name)

        print(f"\n  {'streamslice backfill of':<44}{'CLI wall s':>11}{'runs s':>8}"
              f"{'runs s/interval':>17}")

        usage: list[tuple[str, int, Usage, str]] = []

        def measure(label: str, short: str, name: str,
                    expected: dict[int, int]) -> tuple[float, float, Usage]:
            before = meter.snapshot()
            wall, clock, waits = backfill(airflow, folder, name, n)
            used = meter.since(before)
            check_counts(output, name, expected)
            runs = span(airflow, name)
            print(f"  {label:<44}{wall:>11.1f}{runs:>8.1f}{runs / len(expected):>17.2f}  "
                  f"{load()}", flush=True)
            print(f"    CPU over the command's wall: the machine's {used.machine:.1f} s "
                  f"({used.machine / used.wall:.2f} of {os.cpu_count()} cores), the "
                  f"deployment's {deployment(used):.1f} s ({deployment(used) / len(expected):.2f}"
                  f" s an interval), the rest of the machine's {used.rest:.1f} s", flush=True)
            usage.append((short, len(expected), used, load().removeprefix("load ")))
            create, first, after = cli_parts(airflow, name, clock, wall)
            print(f"    outside the runs: {create:.1f}s until the backfill existed, "
                  f"{first:.1f}s to its first run's start, {after:.1f}s after the last "
                  "run's end" + "".join(f"\n    ({w})" for w in waits), flush=True)
            return wall, runs, used

        single = {T0: len(sent)}
        # the server's first reads (its Python workers, the package) go to the first layout
        cold = measure(f"all N hours in one run (cold, {layouts[0]})", "single, cold",
                       f"bf_single_{layouts[0]}", single)
        figures: dict[str, tuple[Measured, Measured]] = {}
        for tasks in layouts:
            hours = measure(f"{n} hourly intervals ({tasks})", f"{tasks} hourly",
                            f"bf_hourly_{tasks}", hourly)
            warm = measure(f"all N hours in one run (warm, {tasks})", f"{tasks} single",
                           f"bf_single_{tasks}", single)
            figures[tasks] = hours, warm
        print(f"\n  every interval exact ({n} hourly partitions per layout, and the single "
              "ones)")
        print_ratios(figures, cold)
        print(f"  max_active_runs {args.max_active_runs}, {args.records} records an interval, "
              f"scheduler_idle_sleep_time {args.scheduler_idle_sleep} s")

        print_cpu(usage)
        for tasks in layouts:
            print_breakdown(airflow, tasks, n, args.max_active_runs)
        print(f"  load average at end: {load()}")
    finally:
        if meter is not None:
            meter.stop()
        airflow.stop()
        server.stop()
        broker.stop()
        if db is not None:
            db.drop()
        if args.keep:
            print(f"  kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
