"""The Streamslice page: a FastAPI app mounted by the Airflow api-server at ``/streamslice``
and a navigation entry (external view) in the Airflow UI. Every request is authenticated by
Airflow (its JWT cookie or bearer token) and authorized per DAG by Airflow's auth manager."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..timeutil import parse_iso
from ..ui import pages
from ..ui.model import coverage
from . import ui_data

if TYPE_CHECKING:
    from ..sources import PageSection

log = logging.getLogger("streamslice")
PREFIX = "/streamslice"
_BEARER = HTTPBearer(auto_error=False)
app = FastAPI(title="Streamslice", docs_url=None, redoc_url=None, openapi_url=None)


async def user(request: Request,
               bearer: HTTPAuthorizationCredentials | None = Depends(_BEARER)):
    """Airflow's own authentication: a bearer token or its UI session cookie; 401 without."""
    from airflow.api_fastapi.core_api.security import get_user
    return await get_user(request, None, bearer)


def _readable(current) -> set[str]:
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
def overview(request: Request, current=Depends(user)) -> str:
    from airflow.utils.session import create_session
    base, airflow = _links(request)
    with create_session() as session:
        rows = ui_data.pipelines(session, _readable(current))
        for row in rows:
            model = ui_data.asset(session, row.dag_id)
            last = ui_data.runs(session, row.dag_id, model, limit=1)
            row.last = last[0] if last else None
            row.alerts = ui_data.alerts(session, model, recent=0)[0]
    return pages.overview(rows, base, airflow)


@app.get("/pipelines/{dag_id}", response_class=HTMLResponse)
def pipeline(request: Request, dag_id: str, start: str | None = Query(None),
             end: str | None = Query(None), current=Depends(user)) -> str:
    from airflow.utils.session import create_session
    if dag_id not in _readable(current):
        raise HTTPException(status_code=404, detail=f"no streamslice pipeline {dag_id!r} "
                            "that you may read")
    base, airflow = _links(request)
    with create_session() as session:
        found = ui_data.pipelines(session, {dag_id})
        if not found:
            raise HTTPException(status_code=404, detail=f"{dag_id!r} is not a streamslice "
                                "pipeline")
        row = found[0]
        model = ui_data.asset(session, dag_id)
        recent = list(reversed(ui_data.runs(session, dag_id, model, limit=ui_data.RECENT)))
        row.last = recent[-1] if recent else None
        row.alerts, alerts = ui_data.alerts(session, model)
        since = until = None
        if row.mode == "interval":
            since, until = _range(session, dag_id, row.last, start, end)
            shown = ui_data.runs(session, dag_id, model, since=since, until=until)
            cells = coverage(shown, ui_data.expected_intervals(session, dag_id, since, until))
        else:
            cells = coverage(recent, None)
        view = pages.PipelineView(
            row=row, cells=cells, recent=recent, range_start=since, range_end=until,
            checkpoint=ui_data.state(session, model, "checkpoint"),
            plan_splits=ui_data.latest_plan_splits(session, dag_id,
                                                   row.last.run_id if row.last else None),
            output=model.uri if model is not None else "-",
            alerts=alerts)
        extra = dict(model.extra or {}) if model is not None else {}
    view.sections = _sections(extra)
    return pages.pipeline(view, base, airflow)


def _range(session, dag_id: str, newest, start: str | None,
           end: str | None) -> tuple[int, int]:
    since, until = ui_data.default_range(session, dag_id, newest, int(time.time() * 1000))
    try:
        since = parse_iso(start) if start else since
        until = parse_iso(end) if end else until
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=f"start/end: {exc}") from None
    if until <= since:
        raise HTTPException(status_code=400, detail="end must be after start")
    return since, until


def _sections(extra: dict[str, Any]) -> list[PageSection]:
    """What only the pipeline's source can show (``Source.page_sections``), asked with the
    pipeline's own connection. A pipeline file that no longer loads shows none."""
    from ..config import load_pipeline
    from .hooks import source_properties
    if not extra.get("pipeline_file"):
        return []
    try:
        cfg = load_pipeline(extra["pipeline_file"])
    except Exception as exc:  # the page still shows everything else
        log.warning("streamslice page: %s", exc)
        return []
    return cfg.source.page_sections(lambda: source_properties(cfg.source))


class StreamslicePlugin(AirflowPlugin):
    """Loaded by Airflow through ``plugins/streamslice_ui.py``."""
    name = "streamslice"
    fastapi_apps = [{"app": app, "url_prefix": PREFIX, "name": "Streamslice"}]
    external_views = [{"name": "Streamslice", "href": f"{PREFIX}/", "destination": "nav",
                       "url_route": "streamslice", "nav_top_level": True,
                       "icon": f"{PREFIX}/icon.svg"}]
