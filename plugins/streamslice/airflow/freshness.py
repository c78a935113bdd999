"""The freshness watchdog: a small DAG of its own (``streamslice_freshness``) that the factory
adds when a pipeline sets ``alerts.freshness``. It checks every such pipeline's newest complete
data against its limit and sends a ``stale`` alert (through the pipeline's own notifiers,
kept in its asset state) once per stale stretch.

Why a DAG apart: a pipeline whose DAG is paused, failing or whose runs hang makes no runs, so
no check inside its own runs would ever fire. The watchdog runs on its own schedule, whatever
the pipelines' DAGs do. It needs Airflow's scheduler like every DAG: for a stopped scheduler,
``streamslice freshness`` (the CLI) runs the same ``check`` from outside Airflow (cron, a
Kubernetes CronJob), on the metadata database directly, and exits non-zero while a pipeline
is stale.

One alert per stale stretch, even when the watchdog and the command check at the same
moment: whoever alerts a stretch first claims it (``stale_alert/<complete_to>`` in the output
asset's state), and only the holder of the claim sends. Airflow's asset state store has no
compare-and-set for a task, so the watchdog's claim is a read, then a write; the command,
on the database, claims atomically (an insert, or an update of the value it read), then
waits out a watchdog task that is running and reads the claim again: a watchdog that read
before the command's claim wrote its own before it ended, and the command leaves the stretch
to it; one that reads after sees the command's. Watchdog runs never overlap
(``max_active_runs=1``). A claim not marked sent after ``LEASE`` was left by a check that died
before sending: the next check takes it over, so a stretch is not left unalerted."""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ..commit.checkpoint import Checkpoint
from ..config import load_pipeline
from ..monitoring.alerts import Alert, complete_to, stale
from ..timestamps import iso
from .alerting import dag_link, send
from .checkpoint_store import KEY, output_asset

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.pipeline import PipelineConfig

log = logging.getLogger("streamslice")
WATCHDOG = "streamslice_freshness"
EVERY = timedelta(minutes=5)
CLAIM = "stale_alert/"  # asset state: + the complete_to value of the stretch; who alerts it
LEASE = timedelta(minutes=10)  # a claim unsent this long was left by a check that died


class StoredClaim(TypedDict):
    """A ``Claim`` as the asset's state keeps it."""

    by: str
    id: str
    at: int
    sent: bool


@dataclass(frozen=True)
class Claim:
    """Who alerts a stretch (``check``), as kept in the asset's state under ``CLAIM``."""

    by: str  # watchdog | command
    id: str  # this check's own, to tell its claim from another's
    at: int  # ms, when it was claimed
    sent: bool = False

    def to_dict(self) -> StoredClaim:
        return StoredClaim(by=self.by, id=self.id, at=self.at, sent=self.sent)

    @classmethod
    def stored(cls, value: Any) -> Claim | None:
        """The claim as the state holds it (leniently: a field missing counts as unset)."""
        if value is None:
            return None
        return cls(by=str(value.get("by", "")), id=str(value.get("id", "")),
                   at=int(value.get("at", 0)), sent=bool(value.get("sent")))


class Claims(Protocol):
    """How a check claims a stretch before alerting it (``check``): True when this check
    holds the claim now and so sends the alert."""

    def take(self, state: Any, key: str, claim: Claim) -> bool: ...


def free(held: Claim | None, now: int) -> bool:
    """Whether a stretch's claim may be taken: none yet, or one left unsent past ``LEASE``."""
    return held is None or (not held.sent and
                            now - held.at >= LEASE.total_seconds() * 1000)


class TaskClaims:
    """In the watchdog's task: a read, then a write (the task's asset state store offers no
    more). Runs of the watchdog never overlap, and the command's claim waits out this one."""

    def take(self, state: Any, key: str, claim: Claim) -> bool:
        if not free(Claim.stored(state.get(key)), claim.at):
            return False
        state.set(key, claim.to_dict())
        return True


class CommandClaims:
    """Outside Airflow's scheduler (``streamslice freshness``): an atomic claim on the
    database (``store.OfflineAssetState.claim``); then, while a watchdog task is running
    (``running``), wait for it to end, and read the claim again: send only if it is still
    ours. A watchdog task still running after ``wait`` seconds keeps the stretch (the claim
    stays unsent, so a later check takes it over after ``LEASE`` if that task never sends)."""

    def __init__(self, wait: float = 600.0, poll: float = 1.0,
                 running: Callable[[], bool] | None = None) -> None:
        self.wait, self.poll = wait, poll
        self.running = running or watchdog_running

    def take(self, state: Any, key: str, claim: Claim) -> bool:
        if not state.claim(key, claim.to_dict(),
                           lambda held: free(Claim.stored(held), claim.at)):
            return False
        deadline = time.monotonic() + self.wait
        while self.running():
            if time.monotonic() > deadline:
                log.warning("freshness: a %s task is still running after %.0f s; it keeps "
                            "%s", WATCHDOG, self.wait, key)
                return False
            time.sleep(self.poll)
        held = Claim.stored(state.get(key))
        return held is not None and held.id == claim.id


def watchdog_running() -> bool:
    """Whether a task of the watchdog DAG is running now, as the metadata database says (its
    state, and a heartbeat within Airflow's own timeout for one)."""
    from airflow.configuration import conf
    from airflow.models.taskinstance import TaskInstance as TI
    from airflow.utils.session import create_session
    from sqlalchemy import func, or_, select
    timeout = conf.getint("scheduler", "task_instance_heartbeat_timeout", fallback=300)
    alive = datetime.now(timezone.utc) - timedelta(seconds=timeout)
    with create_session() as session:
        return bool(session.scalar(select(func.count()).select_from(TI).where(
            TI.dag_id == WATCHDOG, TI.state == "running",
            or_(TI.last_heartbeat_at.is_(None), TI.last_heartbeat_at >= alive))))


def watched(configs: list[PipelineConfig]) -> list[PipelineConfig]:
    return [c for c in configs if c.alerts is not None and c.alerts.freshness is not None]


def build_watchdog(configs: list[PipelineConfig]) -> Any:
    """The watchdog DAG over ``configs`` that set a freshness limit; None when none does."""
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk import DAG, DeltaTriggerTimetable
    found = watched(configs)
    if not found:
        return None
    with DAG(dag_id=WATCHDOG, schedule=DeltaTriggerTimetable(EVERY),
             start_date=datetime(2024, 1, 1, tzinfo=timezone.utc), catchup=False,
             max_active_runs=1, tags=["streamslice-watchdog"],
             description="Sends a stale alert for each pipeline whose newest complete data "
             "is older than its alerts.freshness") as dag:
        PythonOperator(task_id="check_freshness", python_callable=check_freshness,
                       op_kwargs={"pipeline_files": [str(c.file) for c in found]},
                       inlets=[output_asset(c) for c in found])
    return dag


def check_freshness(pipeline_files: list[str], **context: Any) -> dict[str, str]:
    """The watchdog task: ``check`` over the files that still load (a file that no longer
    loads is skipped, its own DAG says why)."""
    configs = []
    for path in pipeline_files:
        try:
            configs.append(load_pipeline(path))
        except Exception as exc:  # noqa: BLE001 - one broken file must not stop the others' check
            log.warning("freshness: %s", exc)
    return check(configs, context)


def check(configs: list[PipelineConfig], context: dict[str, Any],
          claims: Claims | None = None, who: str = "watchdog") -> dict[str, str]:
    """Each pipeline's verdict (``fresh``, ``stale``: alerted now, ``alerted``: stale and
    already told, or being told by another check, ``never published``), sending one ``stale``
    alert per stale stretch through the pipeline's notifiers. ``context`` holds
    ``asset_state_store`` (a task's, or ``checkpoint_store.OfflineAssetStates`` outside Airflow's
    scheduler: ``streamslice freshness``, with its ``claims``); a stretch is alerted only by
    the check that claimed it (the module's docstring says why that is once)."""
    claims = claims or TaskClaims()
    now = int(time.time() * 1000)
    verdicts = {}
    for cfg in watched(configs):
        assert cfg.alerts is not None
        state = context["asset_state_store"][output_asset(cfg)]
        newest = complete_to(Checkpoint.saved(state.get(KEY)))
        message = stale(cfg.alerts.freshness, newest, now)
        if newest is None:
            verdicts[cfg.name] = "never published"
        elif message is None:
            verdicts[cfg.name] = "fresh"
        else:
            key = f"{CLAIM}{newest}"
            claim = Claim(by=who, id=uuid.uuid4().hex, at=now)
            if not claims.take(state, key, claim):
                verdicts[cfg.name] = "alerted"
                continue
            alert = Alert(kind="stale", pipeline=cfg.name, message=message,
                          link=dag_link(cfg.name),
                          details={"complete_to": iso(newest),
                                   "freshness_ms": cfg.alerts.freshness})
            send(cfg, alert, context)
            state.set(key, replace(claim, sent=True).to_dict())
            verdicts[cfg.name] = "stale"
    log.info("freshness: %s", verdicts)
    return verdicts
