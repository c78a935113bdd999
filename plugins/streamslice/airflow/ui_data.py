"""The Streamslice page's rows, read from Airflow's metadata database in a few bounded SQL
queries: DAGs tagged ``streamslice``, their runs in the shown range, the commit's asset events
(metrics), failed task instances, and the asset state (checkpoint, alerts)."""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, or_, select

from ..commit.checkpoint import Checkpoint
from ..errors import RecordError
from ..monitoring.alerts import SentAlert
from ..monitoring.metrics import RunMetrics
from ..sources import SOURCES
from ..timestamps import from_ms, to_ms
from ..ui.model import Overview, Run, schedule_words
from .alerting import ALERT_PREFIX, RECENT_ALERTS
from .checkpoint_store import KEY

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow.models.asset import AssetModel
    from airflow.serialization.definitions.dag import SerializedDAG
    from airflow.timetables.base import Timetable
    from sqlalchemy.orm import Session

log = logging.getLogger("streamslice")
MAX_CELLS = 1000  # intervals in one coverage strip
RECENT = 50  # runs in the charts and the run table
DEFAULT_INTERVALS = 48
FAILURE_LOOKBACK = 200  # latest alerts searched for why a run in view failed


def _ms(dt: datetime | None) -> int | None:
    return to_ms(dt) if dt is not None else None


def pipelines(session: Session, dag_ids: set[str] | None) -> list[Overview]:
    """Every streamslice DAG (of ``dag_ids`` when given: the user's readable DAGs)."""
    from airflow.models.dag import DagModel, DagTag
    query = select(DagModel).join(DagTag, DagTag.dag_id == DagModel.dag_id) \
        .where(DagTag.name == "streamslice").order_by(DagModel.dag_id)
    if dag_ids is not None:
        query = query.where(DagModel.dag_id.in_(dag_ids))
    rows = []
    for dag in session.scalars(query):
        tags = {t.name for t in dag.tags}
        summary = dag.timetable_summary if dag.timetable_summary not in (None, "None") \
            else "manual"
        rows.append(Overview(
            dag_id=dag.dag_id, source=next((k for k in SOURCES if k in tags), "-"),
            mode=next((m for m in ("interval", "incremental") if m in tags), "-"),
            schedule=summary, schedule_text=schedule_words(
                summary, dag.timetable_description or "") if summary != "manual" else "manual",
            paused=bool(dag.is_paused),
            description=dag.description or "", config_error="config-error" in tags,
            next_due=_ms(dag.next_dagrun_create_after)))
    return rows


def asset(session: Session, dag_id: str) -> AssetModel | None:
    from airflow.models.asset import AssetModel
    return session.scalar(select(AssetModel).where(AssetModel.name == f"streamslice/{dag_id}"))


def state(session: Session, asset_model: AssetModel | None, key: str) -> Any:
    from airflow.state import AssetScope, get_state_backend
    if asset_model is None:
        return None
    raw = get_state_backend().get(AssetScope(asset_id=asset_model.id), key, session=session)
    return json.loads(raw) if raw else None


def checkpoint(session: Session, asset_model: AssetModel | None) -> Checkpoint | None:
    """The pipeline's checkpoint; one this release cannot read is shown as none and logged
    (one pipeline's checkpoint from a newer release must not take the page down)."""
    try:
        return Checkpoint.saved(state(session, asset_model, KEY))
    except RecordError as exc:
        log.warning("the Streamslice page cannot read a checkpoint: %s", exc)
        return None


def alerts(session: Session, asset_model: AssetModel | None,
           recent: int = RECENT_ALERTS) -> tuple[int, list[SentAlert]]:
    """How many alerts the pipeline sent and the latest ``recent`` of them, newest last (one
    asset state row each, ``alerting.record``; Airflow's own metastore state backend)."""
    from airflow.models.asset_state_store import AssetStateStoreModel as Row

    if asset_model is None:
        return 0, []
    where = (Row.asset_id == asset_model.id, Row.key.startswith(ALERT_PREFIX, autoescape=True))
    count = session.scalar(select(func.count()).select_from(Row).where(*where)) or 0
    if not recent:
        return count, []
    latest = session.scalars(select(Row.value).where(*where).order_by(Row.key.desc())
                             .limit(recent)).all()
    return count, [a for a in (_sent(v) for v in reversed(latest)) if a is not None]


def _sent(value: str) -> SentAlert | None:
    """One kept alert; one this release cannot read is left out of the list and logged."""
    try:
        return SentAlert.from_dict(json.loads(value))
    except RecordError as exc:
        log.warning("the Streamslice page cannot read a sent alert: %s", exc)
        return None


def alerts_since(session: Session, asset_model: AssetModel | None, since: int) -> int:
    """How many alerts the pipeline sent since ``since`` (epoch ms): the keys begin with the
    time they were sent (``alerting.record``), so this is a range of keys."""
    from airflow.models.asset_state_store import AssetStateStoreModel as Row
    if asset_model is None:
        return 0
    return session.scalar(select(func.count()).select_from(Row).where(
        Row.asset_id == asset_model.id, Row.key.startswith(ALERT_PREFIX, autoescape=True),
        Row.key >= f"{ALERT_PREFIX}{since:015d}")) or 0


def scheduler_stopped(session: Session) -> int | None:
    """When Airflow's scheduler was last heard from, if it is not running now (its newest job
    is not alive, as Airflow's own health check decides); None while one runs, and where no
    scheduler ever ran against this database (nothing to say of one)."""
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    job = SchedulerJobRunner.most_recent_job(session=session)
    if job is None or job.is_alive():
        return None
    return _ms(job.latest_heartbeat)


def running(session: Session, dag_id: str, states: tuple[str, ...] = ("queued", "running")
            ) -> frozenset[str]:
    """The ids of the DAG's runs in ``states`` (queued or running)."""
    from airflow.models.dagrun import DagRun
    return frozenset(session.scalars(select(DagRun.run_id).where(
        DagRun.dag_id == dag_id, DagRun.state.in_(states))))


def runs(session: Session, dag_id: str, model: AssetModel | None, *,
         since: int | None = None, until: int | None = None,
         limit: int | None = None) -> list[Run]:
    """Runs of one DAG, newest first: with a data interval starting in ``[since, until)``, or
    the latest ``limit``. Each with its commit's metrics (events of the asset ``model``) and
    failed tasks."""
    from airflow.models.dagrun import DagRun
    cols = (DagRun.run_id, DagRun.state, DagRun.data_interval_start, DagRun.data_interval_end,
            DagRun.start_date, DagRun.end_date, DagRun.run_after, DagRun.logical_date)
    query = select(*cols).where(DagRun.dag_id == dag_id)
    if since is not None:
        query = query.where(DagRun.data_interval_start >= from_ms(since))
    if until is not None:
        query = query.where(DagRun.data_interval_start < from_ms(until))
    query = query.order_by(DagRun.run_after.desc()).limit(limit or MAX_CELLS * 4)
    found = [Run(run_id=r[0], state=str(r[1]), start=_ms(r[2]), end=_ms(r[3]),
                 started_at=_ms(r[4]) or _ms(r[6]), ended_at=_ms(r[5]), logical_date=_ms(r[7]))
             for r in session.execute(query)]
    _attach(session, dag_id, model, found)
    return found


def _attach(session: Session, dag_id: str, model: AssetModel | None, found: list[Run]) -> None:
    from airflow.models.asset import AssetEvent
    from airflow.models.taskinstance import TaskInstance
    by_id = {r.run_id: r for r in found}
    ids = list(by_id)
    for chunk in (ids[i:i + 500] for i in range(0, len(ids), 500)):
        if model is not None:
            events = select(AssetEvent.source_run_id, AssetEvent.extra).where(
                AssetEvent.asset_id == model.id, AssetEvent.source_dag_id == dag_id,
                AssetEvent.source_run_id.in_(chunk)).order_by(AssetEvent.timestamp)
            for run_id, extra in session.execute(events):
                by_id[run_id].metrics = _metrics(extra)  # the latest event of a run wins
        failed = [i for i in chunk if by_id[i].state == "failed"]
        if failed:
            tis = select(TaskInstance.run_id, TaskInstance.task_id, TaskInstance.state,
                         TaskInstance.start_date).where(
                TaskInstance.dag_id == dag_id, TaskInstance.run_id.in_(failed),
                TaskInstance.state.in_(("failed", "upstream_failed"))
            ).order_by(TaskInstance.task_id)
            for run_id, task_id, state, started in session.execute(tis):
                run = by_id[run_id]
                if state == "upstream_failed":  # never ran: no error, no log
                    run.upstream_failed.append(task_id)
                    continue
                run.failed_tasks.append(task_id)
                if started is not None:
                    run.logged.append(task_id)


def _metrics(extra: Any) -> RunMetrics | None:
    """A commit's asset event extra; one this release cannot read counts as none, logged."""
    if not extra:
        return None
    try:
        return RunMetrics.from_dict(extra)
    except RecordError as exc:
        log.warning("the Streamslice page cannot read a run's metrics: %s", exc)
        return None


def serialized_dag(session: Session, dag_id: str) -> SerializedDAG | None:
    from airflow.models.serialized_dag import SerializedDagModel
    return SerializedDagModel.get_dag(dag_id, session=session)


def time_zone(dag: SerializedDAG | None) -> str:
    """The pipeline's time zone: its timetable's (UTC when it names none)."""
    timetable = getattr(dag, "timetable", None)
    try:
        return str((timetable.serialize() if timetable is not None else {}).get("timezone")
                   or "UTC")
    except Exception:  # noqa: BLE001 - a timetable that does not serialize its zone
        return "UTC"


def expected_intervals(session: Session, dag: SerializedDAG | None, since: int,
                       until: int, due_by: int | None = None) -> list[tuple[int, int]]:
    """The data intervals the DAG's timetable schedules in ``[since, until)`` (at most
    MAX_CELLS). Airflow places the first (start date, alignment); the rest are stepped here,
    because Airflow's own iteration re-parses the cron expression for every interval (~2 ms
    each: 1,000 intervals took 2 s). Without catchup, Airflow skips every interval before the
    first run on purpose: those are not expected (later ones it skipped are holes). With
    ``due_by`` (now), an interval not over by then is not expected yet."""
    if dag is None:
        return []
    if getattr(dag, "catchup", True) is False:
        from airflow.models.dagrun import DagRun
        first = session.scalar(select(func.min(DagRun.data_interval_start))
                               .where(DagRun.dag_id == dag.dag_id))
        since = max(since, to_ms(first)) if first is not None else until
    found = intervals_of(dag, since, until)
    return found if due_by is None else [(s, e) for s, e in found if e <= due_by]


def intervals_of(dag: SerializedDAG, since: int, until: int) -> list[tuple[int, int]]:
    if dag.start_date is not None:  # nothing is scheduled before it
        since = max(since, to_ms(dag.start_date))
    infos = dag.iter_dagrun_infos_between(from_ms(since), from_ms(until - 1))
    first = next((i for i in infos if i.data_interval is not None), None)
    if first is None or first.data_interval is None:
        return []
    start, end = to_ms(first.data_interval.start), to_ms(first.data_interval.end)
    following = _stepper(dag.timetable, start, end)
    last = to_ms(dag.end_date) if dag.end_date is not None else None
    out: list[tuple[int, int]] = []
    while start < until and len(out) < MAX_CELLS and (last is None or start <= last):
        out.append((start, end))
        if following is None:  # a timetable of another kind: ask Airflow for each
            nxt = next((i for i in infos if i.data_interval is not None), None)
            if nxt is None or nxt.data_interval is None:
                break
            start, end = to_ms(nxt.data_interval.start), to_ms(nxt.data_interval.end)
        else:
            start, end = end, following(end)
    return out


def _stepper(timetable: Timetable, start: int, end: int) -> Callable[[int], int] | None:
    """The next interval's end from this one's, for the timetables the DAG factory uses
    (cron in UTC, or a fixed delta); None for any other."""
    from airflow.timetables.interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
    if isinstance(timetable, DeltaDataIntervalTimetable):
        return lambda at: at + (end - start)
    spec = timetable.serialize() if isinstance(timetable, CronDataIntervalTimetable) else {}
    if spec.get("timezone") in ("UTC", "Etc/UTC"):
        from croniter import croniter
        cron = croniter(spec["expression"], start_time=from_ms(end).replace(tzinfo=None))

        def step(at: int) -> int:
            return to_ms(cron.get_next(datetime).replace(tzinfo=timezone.utc))
        return step
    return None


def default_range(session: Session, dag_id: str, newest: Run | None,
                  now_ms: int) -> tuple[int, int]:
    """The latest DEFAULT_INTERVALS intervals (as wide as the ``newest`` run's) up to now, so
    a pipeline that stopped running shows the intervals it has missed since (the strip holds
    only intervals already over: ``expected_intervals``' ``due_by``)."""
    width = (newest.end - newest.start) if newest and newest.start is not None \
        and newest.end else 3_600_000
    return now_ms - DEFAULT_INTERVALS * max(width, 1000), now_ms


def latest_plan_splits(session: Session, dag_id: str, run_id: str | None) -> list[dict[str, Any]]:
    if run_id is None:
        return []
    from airflow.models.xcom import XComModel

    from .factory import COMBINED
    # the plan task's return value, or the combined task's XCom "plan" (tasks: combined)
    value = session.scalar(select(XComModel.value).where(
        XComModel.dag_id == dag_id, XComModel.run_id == run_id, or_(
            and_(XComModel.task_id == "plan", XComModel.key == "return_value"),
            and_(XComModel.task_id == COMBINED, XComModel.key == "plan"))).limit(1))
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    return list((value or {}).get("splits") or [])
