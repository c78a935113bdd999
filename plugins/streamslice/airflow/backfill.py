"""``streamslice backfill``: Airflow's own backfill, for people who think in timestamps.

The range is turned into the pipeline's intervals, ``airflow backfill create`` is asked for
them (re-running intervals already done, which replaces their partitions), and progress is
followed in the metadata database until every interval has finished."""
import subprocess
import sys
import time
from pathlib import Path

from ..commit.manifest import read_manifest
from ..config.schedule import intervals_between
from ..errors import ConfigError, StreamsliceError
from ..planning.planner import partition_name
from ..timeutil import from_ms, iso

FINISHED = {"success", "failed"}
SWEEP_WAIT_S = 240


def backfill(cfg, start_ms, end_ms, *, wait=True, on_progress=None, reprocess="completed",
             max_active_runs=None, unpause=False, poll_s=2.0, timeout_s=6 * 3600):
    if cfg.mode != "interval":
        raise ConfigError(f"{cfg.name} is an incremental pipeline: replay it by resetting its "
                          f"checkpoint (streamslice offsets reset {cfg.name} --to TIMESTAMP); "
                          "backfill by time range is for interval pipelines")
    try:
        intervals = intervals_between(cfg, start_ms, end_ms)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_dag(cfg.name, unpause)
    _create(cfg.name, intervals, reprocess, max_active_runs or cfg.max_active_runs)
    runs = {iv.start: "queued" for iv in intervals}
    if wait:
        deadline = time.monotonic() + timeout_s
        while True:
            runs.update(_states(cfg.name, list(runs)))
            done = sum(1 for s in runs.values() if s in FINISHED)
            if on_progress:
                on_progress(done, len(runs), f"backfill {cfg.name}")
            if done == len(runs):
                break
            if time.monotonic() > deadline:
                raise StreamsliceError(f"backfill of {cfg.name} did not finish in "
                                       f"{timeout_s}s: {done}/{len(runs)} intervals done")
            time.sleep(poll_s)
    dataset = cfg.output.dataset(cfg.name)
    rows = []
    for iv in intervals:
        manifest = read_manifest(dataset, partition_name("interval", iv)) \
            if runs[iv.start] == "success" else None
        rows.append({"interval": f"{iso(iv.start)} → {iso(iv.end)}", "state": runs[iv.start],
                     "records": manifest["records"] if manifest else None})
    states = set(runs.values())
    state = "created" if not wait else ("success" if states == {"success"} else "failed")
    return {"pipeline": cfg.name, "state": state, "runs": rows}


def _check_dag(dag_id, unpause):
    from airflow.models.dag import DagModel
    model = DagModel.get_dagmodel(dag_id)
    if model is None:
        raise ConfigError(f"Airflow does not know DAG {dag_id!r} yet: is the dag-processor "
                          "running over this pipelines folder?")
    if model.is_paused:
        if not unpause:
            raise ConfigError(f"DAG {dag_id} is paused, so its backfill runs would wait forever: "
                              f"unpause it (airflow dags unpause {dag_id}) or pass --unpause")
        _airflow("dags", "unpause", dag_id)


def _create(dag_id, intervals, reprocess, max_active_runs):
    # Backfill dates are logical dates, which for data-interval timetables are interval starts.
    args = ["backfill", "create", "--dag-id", dag_id,
            "--from-date", from_ms(intervals[0].start).isoformat(),
            "--to-date", from_ms(intervals[-1].start).isoformat(),
            "--reprocess-behavior", reprocess, "--max-active-runs", str(max_active_runs)]
    # A finished backfill is only marked complete by the scheduler's sweep (every 30 s), so
    # one whose runs have all ended still blocks a new one for a while: wait that out, but
    # fail at once if it really has runs in flight.
    deadline = time.monotonic() + SWEEP_WAIT_S
    while True:
        out = _airflow(*args, check=False)
        if out.returncode == 0:
            return
        text = out.stderr + out.stdout
        if "AlreadyRunningBackfill" in text:
            busy = _open_backfill_runs(dag_id)
            if busy:
                raise StreamsliceError(
                    f"another backfill of {dag_id} is still running ({busy} runs queued or "
                    "running); wait for it or cancel it (Airflow UI → Backfills, or the REST API)")
            if time.monotonic() > deadline:
                raise StreamsliceError(
                    f"the last backfill of {dag_id} has finished but the scheduler has not "
                    f"marked it complete in {SWEEP_WAIT_S}s: is the scheduler running?")
        elif "database is locked" not in text or time.monotonic() > deadline:
            raise StreamsliceError(f"airflow backfill create failed: {_error_line(text)}")
        time.sleep(3)


def _open_backfill_runs(dag_id):
    """Queued or running runs of the DAG's backfills that are not marked complete."""
    from airflow.models.backfill import Backfill
    from airflow.models.dagrun import DagRun
    from sqlalchemy import func, select
    query = select(func.count(DagRun.id)).join(Backfill, DagRun.backfill_id == Backfill.id).where(
        Backfill.dag_id == dag_id, Backfill.completed_at.is_(None),
        DagRun.state.in_(["queued", "running"]))
    return _read_db(lambda session: session.scalar(query), 0)


def _error_line(text):
    lines = [ln for ln in text.splitlines()
             if ln.strip() and "[warning" not in ln and "Warning" not in ln]
    return lines[-1] if lines else "no output"


def _airflow(*args, check=True):
    exe = Path(sys.executable).parent / "airflow"
    out = subprocess.run([str(exe) if exe.exists() else "airflow", *args], capture_output=True,
                         text=True)
    if check and out.returncode != 0:
        raise StreamsliceError(f"airflow {' '.join(args[:2])} failed: {out.stderr.strip()[-300:]}")
    return out


def _states(dag_id, starts):
    from airflow.models.dagrun import DagRun
    from sqlalchemy import select
    wanted = {from_ms(s): s for s in starts}
    query = select(DagRun.data_interval_start, DagRun.state).where(
        DagRun.dag_id == dag_id, DagRun.data_interval_start.in_(list(wanted)))
    rows = _read_db(lambda session: session.execute(query).all(), [])
    return {wanted[start]: str(state) for start, state in rows if start in wanted}


def _read_db(ask, default):
    """``ask(session)``, or ``default`` while SQLite is busy (the caller asks again later)."""
    from airflow.utils.session import create_session
    from sqlalchemy.exc import OperationalError
    try:
        with create_session() as session:
            return ask(session)
    except OperationalError:
        return default
