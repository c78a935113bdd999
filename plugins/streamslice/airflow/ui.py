"""The Streamslice page: a FastAPI app mounted by the Airflow api-server at ``/streamslice``
and a navigation entry (external view) in the Airflow UI. Every request is authenticated by
Airflow (its JWT cookie or bearer token) and authorized per DAG by Airflow's auth manager."""
from __future__ import annotations

import logging
import time
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

# FastAPI reads the routes' annotations at run time: BaseUser must be importable here.
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser  # noqa: TC002
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from ..monitoring.alerts import complete_to
from ..sources import HasPageSections, split_noun
from ..timestamps import parse_iso, to_ms
from ..ui import axis, pages
from ..ui.model import AssetExtra, ExtraValue, coverage, explain_failures, needs_attention
from . import ui_data
from .alerting import RECENT_ALERTS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from airflow.models.asset import AssetModel
    from sqlalchemy.orm import Session

    from ..config.pipeline import PipelineConfig
    from ..sources import PageSection
    from ..ui.model import Overview, Run

log = logging.getLogger("streamslice")
PREFIX = "/streamslice"
_BEARER = HTTPBearer(auto_error=False)
app = FastAPI(title="Streamslice", docs_url=None, redoc_url=None, openapi_url=None)


async def user(request: Request,
               bearer: HTTPAuthorizationCredentials | None = Depends(_BEARER)) -> BaseUser:
    """Airflow's own authentication: a bearer token or its UI session cookie; 401 without."""
    from airflow.api_fastapi.core_api.security import get_user
    return await get_user(request, None, bearer)


def dag_access(method: str) -> Callable[..., None]:
    """A route dependency that authorizes the user on the DAG in the path exactly as Airflow's
    own routes do (its ``requires_access_dag``, on the DAG's runs): 403 when refused."""
    def check(request: Request, current: BaseUser = Depends(user)) -> None:
        from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
        from airflow.api_fastapi.core_api.security import requires_access_dag
        requires_access_dag(method, DagAccessEntity.RUN)(request, current)  # type: ignore[arg-type]
    return check


def audited(event: str) -> Callable[..., Awaitable[None]]:
    """A route dependency that writes the request to Airflow's audit log (its event log), as
    Airflow's own routes that change things do (``action_logging``)."""
    async def record(request: Request, current: BaseUser = Depends(user)) -> None:
        from airflow.api_fastapi.logging.decorators import action_logging
        from airflow.utils.session import create_session
        with create_session() as session:
            await action_logging(event)(request, session, current)
    return record


def _may(current: BaseUser, method: str, dag_id: str) -> bool:
    """Whether Airflow lets the user do ``method`` on the DAG's runs (POST: create runs, as a
    backfill does; PUT: clear them)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import (
        DagAccessEntity,
        DagDetails,
    )
    from airflow.models.dag import DagModel
    details = DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id))
    return bool(get_auth_manager().is_authorized_dag(
        method=method, access_entity=DagAccessEntity.RUN, details=details,  # type: ignore[arg-type]
        user=current))


def _readable(current: BaseUser) -> set[str]:
    from airflow.api_fastapi.app import get_auth_manager
    return get_auth_manager().get_authorized_dag_ids(user=current, method="GET")


def _links(request: Request) -> tuple[str, str]:
    base = request.scope.get("root_path", "").rstrip("/") or PREFIX
    return base, base[: -len(PREFIX)] if base.endswith(PREFIX) else ""


ICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" '
        'stroke="currentColor" stroke-width="2"><rect x="3" y="6" width="4" height="12"/>'
        '<rect x="10" y="6" width="4" height="12"/><rect x="17" y="6" width="4" height="12"/>'
        '</svg>')


@app.get("/icon.svg")
def icon() -> Response:
    """The navigation icon (public, like Airflow's own static files)."""
    return Response(ICON, media_type="image/svg+xml")


@app.get("/", response_class=HTMLResponse)
def overview(request: Request, current: BaseUser = Depends(user)) -> str:
    from airflow.utils.session import create_session
    base, airflow = _links(request)
    now = int(time.time() * 1000)
    with create_session() as session:
        rows = ui_data.pipelines(session, _readable(current))
        for row in rows:
            model = ui_data.asset(session, row.dag_id)
            last = ui_data.runs(session, row.dag_id, model, limit=1)
            row.last = last[0] if last else None
            row.alerts = ui_data.alerts(session, model, recent=0)[0]
            row.overdue_since = _overdue(session, row)
            _freshness(session, row, model)
            _attention(session, row, model, now)
    # Those that need a person first, then by name (the query's order).
        stopped = ui_data.scheduler_stopped(session)
    rows.sort(key=lambda r: not r.attention)
    return pages.overview(rows, base, airflow, scheduler_stopped=stopped)


def _freshness(session: Session, row: Overview, model: AssetModel | None) -> None:
    """Up to when the pipeline's data is complete (its checkpoint), and its limit."""
    row.complete_to = complete_to(ui_data.checkpoint(session, model))
    row.freshness = AssetExtra.read(model.extra).freshness_ms if model is not None else None


def _attention(session: Session, row: Overview, model: AssetModel | None, now: int) -> None:
    """``row.attention`` over the pipeline's default strip, as its own page shows it."""
    if row.config_error:
        row.attention = needs_attention(row, [], 0, now)
        return
    since, until = ui_data.default_range(session, row.dag_id, row.last, now)
    if row.mode == "interval":
        dag = ui_data.serialized_dag(session, row.dag_id)
        cells = coverage(ui_data.runs(session, row.dag_id, model, since=since, until=until),
                         ui_data.expected_intervals(session, dag, since, until, due_by=now))
    else:  # the latest batches, however long ago: their alerts count from the first
        cells = coverage(ui_data.runs(session, row.dag_id, model,
                                      limit=ui_data.DEFAULT_INTERVALS), None)
        since = min((c.start for c in cells if c.start is not None), default=since)
    row.attention = needs_attention(row, cells, ui_data.alerts_since(session, model, since),
                                    now)


@app.get("/pipelines/{dag_id}", response_class=HTMLResponse,
         dependencies=[Depends(dag_access("GET"))])
def pipeline(request: Request, dag_id: str, start: str | None = Query(None),
             end: str | None = Query(None), current: BaseUser = Depends(user)) -> str:
    from airflow.utils.session import create_session
    base, airflow = _links(request)
    with create_session() as session:
        found = ui_data.pipelines(session, {dag_id})
        if not found:
            raise HTTPException(status_code=404, detail=f"{dag_id!r} is not a streamslice "
                                "pipeline")
        row = found[0]
        model = ui_data.asset(session, dag_id)
        dag = ui_data.serialized_dag(session, dag_id)
        tz = axis.zone(ui_data.time_zone(dag))
        recent = list(reversed(ui_data.runs(session, dag_id, model, limit=ui_data.RECENT)))
        row.last = recent[-1] if recent else None
        row.alerts, alerts = ui_data.alerts(session, model, recent=ui_data.FAILURE_LOOKBACK)
        _freshness(session, row, model)
        since = until = None
        if row.mode == "interval":
            since, until = _range(session, dag_id, row.last, start, end, tz)
            shown = ui_data.runs(session, dag_id, model, since=since, until=until)
            cells = coverage(shown, ui_data.expected_intervals(session, dag, since, until,
                                                               int(time.time() * 1000)))
        else:
            shown = recent
            cells = coverage(recent, None)
        for runs in (shown, recent):
            explain_failures(runs, alerts)
        view = pages.PipelineView(
            row=row, cells=cells, recent=recent, range_start=since, range_end=until,
            checkpoint=ui_data.checkpoint(session, model),
            plan_splits=ui_data.latest_plan_splits(session, dag_id,
                                                   row.last.run_id if row.last else None),
            output=model.uri if model is not None else "-",
            alerts=alerts[-RECENT_ALERTS:], tz=tz, can_run=_may(current, "POST", dag_id),
            can_clear=_may(current, "PUT", dag_id), split_noun=split_noun(row.source),
            overdue=_overdue(session, row),
            scheduler_stopped=ui_data.scheduler_stopped(session))
    return pages.pipeline(view, base, airflow)


@app.get("/pipelines/{dag_id}/sections", response_class=HTMLResponse,
         dependencies=[Depends(dag_access("GET"))])
def sections(request: Request, dag_id: str, current: BaseUser = Depends(user)) -> str:
    """The parts of the page only the pipeline's source can fill (``HasPageSections``),
    asked of the source with the pipeline's own connection; the page loads them after it is
    shown, so a source that is slow or unreachable never holds the page up."""
    base, _ = _links(request)
    parts = _sections(*_asset_extra(dag_id))
    actions = f"{base}/pipelines/{quote(dag_id, safe='')}/actions"
    may_run = _may(current, "POST", dag_id)
    return "".join(pages.section(p, actions, may_run) for p in parts)


class ActionBody(BaseModel):
    target: str


@app.post("/pipelines/{dag_id}/actions/{name}",
          dependencies=[Depends(dag_access("POST")), Depends(audited("streamslice_action"))])
def action(dag_id: str, name: str, body: ActionBody) -> dict[str, str]:
    """A button of a source's section (``PageAction``), pressed and confirmed: for users who
    may run the DAG (Airflow's POST on its runs, as a backfill), which is what the source's own
    lifecycle tasks do. The source checks the target again before it acts."""
    from ..errors import StreamsliceError
    from .hooks import source_properties
    extra, running = _asset_extra(dag_id)
    cfg = _pipeline_of(extra)
    if cfg is None:
        raise HTTPException(status_code=404, detail=f"{dag_id!r}: no pipeline file to act on")
    if not isinstance(cfg.source, HasPageSections):
        raise HTTPException(status_code=404, detail=f"{dag_id!r}: its source has no page actions")
    source = cfg.source
    try:
        done = source.page_action(name, body.target, lambda: source_properties(source), running)
    except StreamsliceError as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the source's own answer, in one line
        raise HTTPException(status_code=502, detail=(str(exc).splitlines() or [""])[0][:300]
                            ) from None
    log.warning("streamslice page: %s on %s: %s", name, dag_id, done)
    return {"message": done}


def _asset_extra(dag_id: str) -> tuple[dict[str, ExtraValue], frozenset[str]]:
    """The pipeline's asset extra (its file) and the ids of its runs queued or running."""
    from airflow.utils.session import create_session
    with create_session() as session:
        model = ui_data.asset(session, dag_id)
        return (dict(model.extra or {}) if model is not None else {},
                ui_data.running(session, dag_id))


def _overdue(session: Session, row: Overview) -> int | None:
    """Since when the DAG's next scheduled run is overdue (``Overview.overdue``)."""
    return row.overdue(int(time.time() * 1000),
                       lambda: bool(ui_data.running(session, row.dag_id, ("running",))))


def _range(session: Session, dag_id: str, newest: Run | None, start: str | None,
           end: str | None, tz: tzinfo) -> tuple[int, int]:
    """The strip's range: the latest intervals by default, else what the user typed (ISO-8601;
    without an offset, in the pipeline's time zone, as the page shows times)."""
    since, until = ui_data.default_range(session, dag_id, newest, int(time.time() * 1000))
    try:
        since = _when(start, tz) if start else since
        until = _when(end, tz) if end else until
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=f"start/end: {exc}") from None
    if until <= since:
        raise HTTPException(status_code=400, detail="end must be after start")
    return since, until


def _when(text: str, tz: tzinfo) -> int:
    parse_iso(text)  # the same error message for anything that is not ISO-8601
    at = datetime.fromisoformat(text.strip())
    return to_ms(at if at.tzinfo else at.replace(tzinfo=tz))


def _pipeline_of(extra: Mapping[str, Any]) -> PipelineConfig | None:
    """The pipeline's config from its file (its asset's extra names it); None when the file
    no longer loads."""
    from ..config import load_pipeline
    file = AssetExtra.read(extra).pipeline_file
    if not file:
        return None
    try:
        return load_pipeline(file)
    except Exception as exc:  # noqa: BLE001 - the page still shows everything else
        log.warning("streamslice page: %s", exc)
        return None


def _sections(extra: Mapping[str, Any],
              running: frozenset[str] = frozenset()) -> list[PageSection]:
    """What only the pipeline's source can show (``HasPageSections``), asked with the
    pipeline's own connection. A pipeline file that no longer loads shows none."""
    from .hooks import source_properties
    cfg = _pipeline_of(extra)
    if cfg is None or not isinstance(cfg.source, HasPageSections):
        return []
    source = cfg.source
    return source.page_sections(lambda: source_properties(source), running)


class StreamslicePlugin(AirflowPlugin):
    """Found by Airflow through the ``airflow.plugins`` entry point (``pyproject.toml``)."""
    name = "streamslice"
    fastapi_apps = [{"app": app, "url_prefix": PREFIX, "name": "Streamslice"}]
    external_views = [{"name": "Streamslice", "href": f"{PREFIX}/", "destination": "nav",
                       "url_route": "streamslice", "nav_top_level": True,
                       "icon": f"{PREFIX}/icon.svg"}]
