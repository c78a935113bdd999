"""``streamslice backfill``: Airflow's own backfill, for people who think in timestamps.

The range is turned into the pipeline's intervals, ``airflow backfill create`` is asked for
them (re-running intervals already done, which replaces their partitions), and progress is
followed in the metadata database until every interval has finished.

Airflow lets a DAG have one open backfill at a time (``completed_at`` empty), and nothing but
a timer in the scheduler's loop closes one (``_mark_backfills_complete``: every 30 s at best,
later when the loop is slow), so a finished backfill goes on refusing the next one for a while.
Worse, on SQLite under load ``backfill create`` can fail with "database is locked" after it has
committed the backfill but before its runs (SQLite cannot wait out a write in a transaction
whose read another writer overtook), and Airflow's clean-up then fails the same way: the empty
backfill refuses every new one until the sweep counts it as abandoned, 2 minutes after its
creation, and the next try can leave another. So the wrapper waits on what matters, its runs,
then closes its backfill itself on the scheduler's own condition, in one conditional UPDATE; it
closes a finished backfill that stands in its way the same way and removes an empty one its own
failed try left. A try can also fail on the lock after its runs were committed: a backfill
created since such a try of ours, with runs queued or running, is ours and is followed. Any
other backfill with a run queued or running is never touched: that is refused with a clear
message.

On SQLite a plain ``backfill create`` also commits run by run (``backfill_create`` says why),
so one failing half-way could leave a backfill holding only its first intervals, which the
wrapper then followed and, on a ``--reprocess failed`` re-run, reported the others' old
failed runs as its outcome. The wrapper runs ``backfill_create``, whose runs commit together,
and still checks what the backfill it follows holds: one holding only some of the intervals
is followed, then another is made for the rest."""
from __future__ import annotations

import time
import traceback
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from ..commit.manifest import Manifest, read_manifest
from ..config.schedule import intervals_between
from ..errors import ConfigError, StreamsliceError
from ..planning.planner import partition_name
from ..timestamps import from_ms, iso, to_ms

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.pipeline import PipelineConfig
    from ..planning.plan import Interval

T = TypeVar("T")

FINISHED = {"success", "failed"}
SETUP_WAIT_S = 300
ABANDONED_AFTER = timedelta(minutes=2)  # as the scheduler's sweep counts it
SCHEDULER_SILENT_S = 300


class IntervalOutcome(TypedDict):
    interval: str  # "start → end", ISO-8601
    state: str  # its run's: success, failed, queued…
    records: int | None  # its manifest's, once published


class BackfillReport(TypedDict):
    """What ``backfill`` did (``streamslice backfill --json`` prints it)."""

    pipeline: str
    state: str  # created (not waited on), success, failed
    runs: list[IntervalOutcome]


def backfill(cfg: PipelineConfig, start_ms: int, end_ms: int, *, wait: bool = True,
             on_progress: Callable[[int, int, str], None] | None = None,
             reprocess: str = "completed", max_active_runs: int | None = None,
             unpause: bool = False, poll_s: float = 0.5, timeout_s: float = 6 * 3600,
             say: Callable[[str], None] | None = None) -> BackfillReport:
    """Backfill the intervals overlapping ``[start_ms, end_ms)``; ``on_progress(done, total,
    label)`` follows the runs, ``say(line)`` gets what the wrapper waits on or does for it."""
    if cfg.mode != "interval":
        raise ConfigError(f"{cfg.name} is an incremental pipeline: replay it by resetting its "
                          f"checkpoint (streamslice offsets reset {cfg.name} --to TIMESTAMP); "
                          "backfill by time range is for interval pipelines")
    try:
        intervals = intervals_between(cfg, start_ms, end_ms)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_held_dates(cfg.name, intervals)
    _check_dag(cfg.name, unpause, wait)
    runs = _run(cfg.name, intervals, reprocess, max_active_runs or cfg.max_active_runs,
                wait=wait, poll_s=poll_s, timeout_s=timeout_s, on_progress=on_progress, say=say)
    target = cfg.output.target(cfg.name)
    rows: list[IntervalOutcome] = []
    for iv in intervals:
        folder = target.folder(partition_name("interval", iv), iv)
        manifest = read_manifest(target.dataset, folder, cfg.output.aws) \
            if runs[iv.start] == "success" else None
        rows.append(IntervalOutcome(
            interval=f"{iso(iv.start)} → {iso(iv.end)}", state=runs[iv.start],
            records=Manifest.from_dict(manifest).records if manifest else None))
    states = set(runs.values())
    state = "created" if not wait else ("success" if states == {"success"} else "failed")
    return BackfillReport(pipeline=cfg.name, state=state, runs=rows)


def _run(dag_id: str, intervals: list[Interval], reprocess: str, max_active_runs: int, *,
         wait: bool, poll_s: float, timeout_s: float,
         on_progress: Callable[[int, int, str], None] | None,
         say: Callable[[str], None] | None) -> dict[int, str]:
    """Create the backfill and, to wait, follow its runs to their end; each interval's run
    state by its start. A backfill holding only some of the intervals (a plain ``airflow
    backfill create`` failed half-way) is followed, then another made for the rest: the
    others' runs, never asked to run again, must not count as this backfill's outcome."""
    runs = {iv.start: "queued" for iv in intervals}
    deadline = time.monotonic() + timeout_s
    todo = intervals
    while todo:
        missing = _create(dag_id, todo, reprocess, max_active_runs, say)
        if missing and not wait:
            raise StreamsliceError(
                f"the backfill of {dag_id} holds {len(todo) - len(missing)} of its "
                f"{len(todo)} intervals (creating it failed half-way): run the same command "
                f"again from {iso(missing[0].start)} once its runs have ended")
        if missing:
            _say(say, f"backfill {dag_id}: the backfill holds {len(todo) - len(missing)} of "
                      f"the {len(todo)} intervals (creating it failed half-way); following "
                      f"them, then creating one for the other {len(missing)}")
        if wait:
            _follow(dag_id, runs, [iv.start for iv in todo if iv not in missing], deadline,
                    poll_s, on_progress)
            # Its runs have all ended: close the backfill now so that the next one (ours, the
            # UI's) can start at once instead of after the scheduler's next sweep.
            _close_finished_backfills(dag_id)
        todo = missing
    return runs


def _check_dag(dag_id: str, unpause: bool, wait: bool = False) -> None:
    """The DAG is known and, to wait for its runs, a scheduler runs: checked before --unpause
    changes anything."""
    from airflow.configuration import AIRFLOW_HOME, conf
    from airflow.models.dag import DagModel
    model = DagModel.get_dagmodel(dag_id)
    if model is None:
        raise ConfigError(f"Airflow (AIRFLOW_HOME={AIRFLOW_HOME}) does not know DAG {dag_id!r} "
                          "yet: its dag-processor (`airflow dag-processor`, or once `airflow "
                          "dags reserialize`) parses the DAGs folder "
                          f"{conf.get('core', 'dags_folder')}; is the pipeline's file there?")
    if wait:
        _check_scheduler(dag_id)
    if model.is_paused:
        if not unpause:
            raise ConfigError(f"DAG {dag_id} is paused, so its backfill runs would wait forever: "
                              f"unpause it (airflow dags unpause {dag_id}) or pass --unpause")
        _unpause(dag_id)


def _check_held_dates(dag_id: str, intervals: list[Interval]) -> None:
    """A run dated at an interval's start that reads another interval (a manual run: Airflow
    gives it the interval that ends at its date) holds the logical date the interval's own
    run needs. Airflow's backfill takes that run for the interval's, and the interval's run
    would never come: refused, naming the run, before anything is created."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select
    starts = {iv.start: iv for iv in intervals}
    query = select(DagRun.run_id, DagRun.logical_date, DagRun.data_interval_start).where(
        DagRun.dag_id == dag_id, DagRun.logical_date.in_([from_ms(s) for s in starts]))
    with create_session() as session:
        rows = session.execute(query).all()
    for run_id, logical, start in rows:
        if start is None or logical is None or to_ms(start) == to_ms(logical):
            continue
        iv = starts[to_ms(logical)]
        raise ConfigError(
            f"run {run_id} of {dag_id} is dated {iso(to_ms(logical))} but reads the interval "
            f"from {iso(to_ms(start))}: it holds the logical date that the interval "
            f"{iso(iv.start)} → {iso(iv.end)} needs, so Airflow cannot make that interval's "
            "run. Delete that run (the Airflow UI, or DELETE /api/v2/dags/"
            f"{dag_id}/dagRuns/RUN_ID) and backfill again; date manual runs inside an "
            "interval, not at its start")


def _check_scheduler(dag_id: str) -> None:
    """Backfill runs wait for a scheduler: without one, waiting would never end. A scheduler
    counts as running while its job is and its last heartbeat is under SCHEDULER_SILENT_S old
    (more lenient than Airflow's health check: a scheduler slowed by a busy machine still
    runs the backfill; one that stopped cleanly has ended its job)."""
    from airflow.configuration import AIRFLOW_HOME
    from airflow.jobs.job import most_recent_job
    job = most_recent_job("SchedulerJob")
    beat = job.latest_heartbeat if job is not None else None
    if job is not None and job.state == "running" and beat is not None and \
            datetime.now(timezone.utc) - beat < timedelta(seconds=SCHEDULER_SILENT_S):
        return
    since = f" (last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC)" if beat is not None else ""
    raise ConfigError(f"no Airflow scheduler is running for AIRFLOW_HOME={AIRFLOW_HOME}{since}, "
                      f"and the backfill of {dag_id} would wait for one: start `airflow "
                      "scheduler` with that AIRFLOW_HOME, or pass --no-wait to create the "
                      "backfill and return")


def _create(dag_id: str, intervals: list[Interval], reprocess: str, max_active_runs: int,
            say: Callable[[str], None] | None = None) -> list[Interval]:
    """Create the backfill of ``intervals`` (``backfill_create``: its runs all at once, also
    on SQLite), or find the one a try of ours made; returns the intervals it does not hold
    (a backfill made by a plain ``airflow backfill create`` that failed half-way)."""
    # Backfill dates are logical dates, which for data-interval timetables are interval starts.
    dates = (from_ms(intervals[0].start), from_ms(intervals[-1].start))
    # What can stand in the way, and what ends it (see the module docstring): a finished
    # backfill not swept yet (closed here at once), SQLite's lock (seconds; a backfill our own
    # try left without runs is removed here), a backfill without runs that someone else left
    # (Airflow counts it as abandoned 2 minutes after its creation; closed here then).
    deadline = time.monotonic() + SETUP_WAIT_S
    waiting = None
    locked_since = None  # when our first try that met SQLite's lock began
    first = datetime.now(timezone.utc) - timedelta(seconds=1)
    while True:
        since = datetime.now(timezone.utc) - timedelta(seconds=1)
        text = _backfill_create(dag_id, *dates, reprocess, max_active_runs)
        if text is None:
            return _uncovered(dag_id, intervals, first)
        if "AlreadyRunningBackfill" in text:
            busy = _open_backfill_runs(dag_id)
            if busy and locked_since and _open_backfill_runs(dag_id, locked_since):
                # A try of ours failed on the lock after its runs were committed: the backfill
                # in the way is ours, with our range and reprocess behaviour; follow its runs.
                _say(say, f"backfill {dag_id}: the metadata database was busy, but the try "
                          "created its runs; following them")
                return _uncovered(dag_id, intervals, first)
            if busy:
                raise StreamsliceError(
                    f"another backfill of {dag_id} is still running ({busy} runs queued or "
                    "running); wait for it or cancel it (Airflow UI → Backfills, or the REST API)")
            if _close_finished_backfills(dag_id):
                _say(say, f"backfill {dag_id}: the previous backfill had finished; "
                          "marked it complete")
                continue
            now = "another backfill of it has no runs (being created, or left by a failed try)"
        elif "database is locked" in text:
            locked_since = locked_since or since
            # SQLite cannot wait out a write after a read that another writer overtook, so
            # `backfill create` can fail after it committed the backfill but before its runs
            # (and Airflow's clean-up then fails the same way): remove that empty backfill.
            if "_create_runs" in text and _drop_empty_backfills(dag_id, since):
                _say(say, f"backfill {dag_id}: the metadata database was busy; removed the "
                          "empty backfill the failed try left, trying again")
            now = "the metadata database is busy"
        else:
            raise StreamsliceError(f"airflow backfill create failed: {_error_line(text)}")
        if time.monotonic() > deadline:
            raise StreamsliceError(f"could not create the backfill of {dag_id} in "
                                   f"{SETUP_WAIT_S}s: {now}")
        if now != waiting:
            _say(say, f"backfill {dag_id}: waiting, {now}")
            waiting = now
        time.sleep(3)


def _backfill_create(dag_id: str, from_date: datetime, to_date: datetime, reprocess: str,
                     max_active_runs: int) -> str | None:
    """``airflow backfill create``, committing its runs together also on SQLite
    (``backfill_create.create``): None once created, else what Airflow printed meanwhile and
    the error with its traceback (whose frames tell where SQLite's lock struck). What it
    prints (its log lines, a line a run) stays out of the command's output either way."""
    from .backfill_create import captured_output, create
    with captured_output() as printed:
        try:
            create(dag_id, from_date, to_date, reprocess, max_active_runs)
        except Exception:  # noqa: BLE001 - Airflow's errors, read as its command's output was
            return printed() + traceback.format_exc()
    return None


def _uncovered(dag_id: str, intervals: list[Interval], since: datetime) -> list[Interval]:
    """The intervals that the DAG's latest backfill created since ``since`` holds no run or
    reason for (it holds them all unless its creation failed half-way and left it)."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from sqlalchemy import func, select
    latest = select(func.max(Backfill.id)).where(Backfill.dag_id == dag_id,
                                                 Backfill.created_at >= since).scalar_subquery()
    query = select(BackfillDagRun.logical_date).where(BackfillDagRun.backfill_id == latest)
    for _ in range(30):
        dates: list[datetime] | None = _read_db(lambda session: list(session.scalars(query)),
                                                None)
        if dates is not None:
            break
        time.sleep(1)  # SQLite busy
    else:
        raise StreamsliceError(f"could not read the backfill of {dag_id}: the metadata "
                               "database stayed busy")
    held = {to_ms(d) for d in dates}
    missing = [iv for iv in intervals if iv.start not in held]
    if len(missing) == len(intervals):
        raise StreamsliceError(f"airflow backfill create succeeded, but no backfill of {dag_id} "
                               f"created since {since:%Y-%m-%d %H:%M:%S} UTC holds its intervals")
    return missing


def _follow(dag_id: str, runs: dict[int, str], starts: list[int], deadline: float,
            poll_s: float, on_progress: Callable[[int, int, str], None] | None) -> None:
    """Poll the runs of the intervals starting at ``starts`` (their states go into ``runs``)
    until each has finished."""
    while True:
        runs.update(_states(dag_id, starts))
        done = sum(1 for s in runs.values() if s in FINISHED)
        if on_progress:
            on_progress(done, len(runs), f"backfill {dag_id}")
        if all(runs[s] in FINISHED for s in starts):
            return
        if time.monotonic() > deadline:
            raise StreamsliceError(f"backfill of {dag_id} did not finish in time: "
                                   f"{done}/{len(runs)} intervals done")
        time.sleep(poll_s)


def _say(say: Callable[[str], None] | None, line: str) -> None:
    if say:
        say(line)


def _close_finished_backfills(dag_id: str) -> int:
    """Mark the DAG's open backfills that are over complete, on exactly the condition of the
    scheduler's sweep (``SchedulerJobRunner._mark_backfills_complete``): none of its runs is
    queued or running, and it has runs or was created over 2 minutes ago (one without runs
    that is younger may still be being created). One UPDATE, so a run queued meanwhile keeps
    its backfill open. Returns how many were closed (0 also while SQLite is busy)."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.models.dagrun import DagRun
    from sqlalchemy import exists, or_, select, update
    now = datetime.now(timezone.utc)
    statement = (
        update(Backfill)
        .where(Backfill.dag_id == dag_id, Backfill.completed_at.is_(None),
               or_(exists(select(BackfillDagRun.id)
                          .where(BackfillDagRun.backfill_id == Backfill.id)),
                   Backfill.created_at < now - ABANDONED_AFTER),
               ~exists(select(DagRun.id).where(DagRun.backfill_id == Backfill.id,
                                               DagRun.state.in_(["queued", "running"]))))
        .values(completed_at=now)
        .execution_options(synchronize_session=False))
    return _write_db(statement)


def _drop_empty_backfills(dag_id: str, since: datetime) -> int:
    """Delete the DAG's open backfills created since ``since`` that have no runs at all: what
    Airflow's own clean-up of a failed ``backfill create`` deletes when it gets the lock."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.models.dagrun import DagRun
    from sqlalchemy import delete, exists, select
    statement = (
        delete(Backfill)
        .where(Backfill.dag_id == dag_id, Backfill.completed_at.is_(None),
               Backfill.created_at >= since,
               ~exists(select(BackfillDagRun.id).where(BackfillDagRun.backfill_id == Backfill.id)),
               ~exists(select(DagRun.id).where(DagRun.backfill_id == Backfill.id)))
        .execution_options(synchronize_session=False))
    return _write_db(statement)


def _write_db(statement: Any) -> int:
    """Run one UPDATE/DELETE; how many rows it changed, or 0 while SQLite is busy."""
    from airflow.utils.session import create_session
    from sqlalchemy.exc import OperationalError
    try:
        with create_session() as session:
            return int(getattr(session.execute(statement), "rowcount", 0) or 0)
    except OperationalError:
        return 0


def _open_backfill_runs(dag_id: str, created_since: datetime | None = None) -> int:
    """Queued or running runs of the DAG's backfills that are not marked complete (and were
    created since ``created_since``, when given)."""
    from airflow.models.backfill import Backfill
    from airflow.models.dagrun import DagRun
    from sqlalchemy import func, select
    query = select(func.count(DagRun.id)).join(Backfill, DagRun.backfill_id == Backfill.id).where(
        Backfill.dag_id == dag_id, Backfill.completed_at.is_(None),
        DagRun.state.in_(["queued", "running"]))
    if created_since is not None:
        query = query.where(Backfill.created_at >= created_since)
    return _read_db(lambda session: session.scalar(query), 0)


def _error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines()
             if ln.strip() and "[warning" not in ln and "Warning" not in ln]
    return lines[-1] if lines else "no output"


def _unpause(dag_id: str) -> None:
    """What ``airflow dags unpause DAG_ID`` does (set the DAG's ``is_paused``), in this process
    that has imported Airflow already rather than in another that would import it again
    (about 2 CPU s); tried again while SQLite is busy."""
    from airflow.models.dag import DagModel
    from sqlalchemy import update
    statement = update(DagModel).where(DagModel.dag_id == dag_id).values(is_paused=False)
    for _ in range(30):
        if _write_db(statement):
            return
        time.sleep(1)  # SQLite busy
    raise StreamsliceError(f"could not unpause DAG {dag_id}: the metadata database stayed busy")


def _states(dag_id: str, starts: list[int]) -> dict[int, str]:
    """The state of the backfill's own run of each interval starting at ``starts``: the run
    the DAG's latest backfill holds for that logical date, else (an interval the backfill
    left as it was, a run that exists already) the DAG's run at that logical date. Never a
    run found by its data interval alone: a manual run of the same interval is not the
    backfill's, and must not answer for it."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.models.dagrun import DagRun
    from sqlalchemy import func, select
    dates = [from_ms(s) for s in starts]
    latest = select(func.max(Backfill.id)).where(Backfill.dag_id == dag_id).scalar_subquery()
    own = select(BackfillDagRun.logical_date, DagRun.state).join(
        DagRun, DagRun.id == BackfillDagRun.dag_run_id).where(
        BackfillDagRun.backfill_id == latest, BackfillDagRun.logical_date.in_(dates))
    at = select(DagRun.logical_date, DagRun.state).where(DagRun.dag_id == dag_id,
                                                         DagRun.logical_date.in_(dates))
    rows: list[Any] = _read_db(
        lambda session: [*session.execute(at).all(), *session.execute(own).all()], [])
    found = {to_ms(date): str(state) for date, state in rows}  # the backfill's own last
    return {s: found[s] for s in starts if s in found}


def _read_db(ask: Callable[[Any], T], default: T) -> T:
    """``ask(session)``, or ``default`` while SQLite is busy (the caller asks again later)."""
    from airflow.utils.session import create_session
    from sqlalchemy.exc import OperationalError
    try:
        with create_session() as session:
            return ask(session)
    except OperationalError:
        return default
