"""The HTML of the overview and pipeline pages: server-rendered, with inline SVG, one small
stylesheet and one small script (``page.css``, ``page.js``: hover values, selecting intervals
on the strip, and the actions, which call Airflow's own REST API as the signed-in user)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import timezone, tzinfo
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict
from urllib.parse import quote

from ..monitoring.alerts import duration_text
from ..sources import lag_unit
from ..splits import lag_text
from . import axis, svg
from .model import (
    Cell,
    Headline,
    LagChart,
    Overview,
    Run,
    checkpoint_rows,
    complete_until,
    headline,
    lag_chart,
    positions_text,
    scheduler_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..commit.checkpoint import Checkpoint
    from ..monitoring.alerts import SentAlert
    from ..monitoring.metrics import RunMetrics
    from ..sources import PageAction, PageSection
    from ..splits import Positions, PositionText

_HERE = Path(__file__).parent
CSS = (_HERE / "page.css").read_text()
SCRIPT = (_HERE / "page.js").read_text()
POSITIONS_SHOWN = 12  # rows of the positions table before "show all"
RUNS_SHOWN = 12  # rows of the runs table before "show all"


class StripColumn(TypedDict):
    """One column of the strip as the page's script reads it (short keys: a 1,000-interval
    strip sends 1,000 of these): status, start and end (epoch ms), then what its run has."""

    s: str
    t: int | None  # None where the column has none
    e: int | None
    run: NotRequired[str]
    n: NotRequired[int | None]  # records
    late: NotRequired[int]
    why: NotRequired[str]  # why it failed
    ld: NotRequired[int]  # its logical date, where that is not its start
    lag: NotRequired[list[float | int | None]]  # per named line (``lag_keys``)
    lo: NotRequired[float | int | None]  # the others' band
    hi: NotRequired[float | int | None]
    tot: NotRequired[float | int | None]


class PageData(TypedDict):
    """What the pipeline page's script gets (``_data``)."""

    dag_id: str
    mode: str
    paused: bool
    api: str
    airflow: str
    base: str
    can_run: bool
    can_clear: bool
    tz: str
    cols: list[StripColumn]
    lag_keys: list[str]
    lag_unit: str
    others_count: int
    splits_name: str


def _page(title: str, body: str, data: PageData | None = None) -> str:
    script = ""
    if data is not None:  # no "<" inside the JSON: nothing in it can end or open a tag
        blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
        script = (f'<script type="application/json" id="page-data">{blob}</script>'
                  f"<script>{SCRIPT}</script>")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>'
            f'{escape(title)}</title><meta name="viewport" content="width=device-width">'
            f'<style>{CSS}{svg.state_style()}</style></head><body>{body}{script}</body>'
            '</html>')


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else "-"


def _run_link(airflow: str, dag_id: str, run_id: str, task: str | None = None) -> str:
    url = f"{airflow}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
    return f"{url}/tasks/{quote(task, safe='')}" if task else url


def _stale(row: Overview) -> str | None:
    """``939 d 6 h old, past its freshness limit of 2 h``, or None while fresh."""
    now = int(time.time() * 1000)
    if not row.stale(now) or row.freshness is None:
        return None
    return (f"{duration_text(row.data_age(now) or 0)} old, past its freshness limit of "
            f"{duration_text(row.freshness)}")


def _age(row: Overview, now: int, tz: tzinfo) -> str:
    """How old the newest complete data is, with up to when and the limit on hover; in red
    past the pipeline's ``alerts.freshness``."""
    age = row.data_age(now)
    if age is None or row.complete_to is None:
        return '<span class="none" title="nothing published yet">-</span>'
    limit = f"; freshness limit {duration_text(row.freshness)}" if row.freshness else \
        "; no freshness limit (alerts.freshness)"
    title = f"complete to {axis.when(row.complete_to, tz)}{limit}"
    bad = ' class="bad"' if row.stale(now) else ""
    return f'<span{bad} data-age="{age}" title="{escape(title)}">{duration_text(age)}</span>'


def _mark(what: str, row: Overview, tz: tzinfo) -> str:
    """One thing that needs a person (``Overview.attention``), as a badge."""
    title = ""
    if what == "overdue" and row.overdue_since is not None:
        title = (f' title="Airflow was due to start the next run at '
                 f'{axis.when(row.overdue_since, tz)} and has not: is its scheduler running?"')
    return f'<span class="badge s-failed"{title}>{escape(what)}</span> '


def _schedule(row: Overview) -> str:
    """The schedule in words, with Airflow's own expression on hover."""
    words = row.schedule_text or row.schedule
    if words == row.schedule:
        return f'<span class="schedule">{escape(words)}</span>'
    return f'<span class="schedule" title="{escape(row.schedule)}">{escape(words)}</span>'


def _badge(state: str) -> str:
    return f'<span class="badge s-{escape(state)}">{escape(state)}</span>'


def overview(rows: list[Overview], base: str, airflow: str,
             tz: tzinfo = timezone.utc, now: int | None = None,
             scheduler_stopped: int | None = None) -> str:
    """``scheduler_stopped``: the last heartbeat of Airflow's scheduler when it is not running
    now, said above the table."""
    now = now if now is not None else int(time.time() * 1000)
    head = ("<tr><th>Pipeline</th><th>Source</th><th>Mode</th><th>Schedule</th>"
            f"<th>Last run ({axis.zone_label(tz)})</th><th class=n>Records</th>"
            "<th class=n>Data age</th><th class=n>Lag at plan</th><th class=n>Dead letters</th>"
            "<th class=n>Alerts</th>"
            "<th></th></tr>")
    body = []
    for row in rows:
        last = row.last
        state = '<span class="none">never run</span>'
        if last:
            href = escape(_run_link(airflow, row.dag_id, last.run_id))
            state = (f'<a href="{href}">{_badge(last.status)}</a> '
                     f"{axis.when(last.started_at, tz)}")
        if row.config_error:
            state = '<span class="bad">invalid pipeline file: open the DAG for the error</span>'
        marks = "".join(_mark(what, row, tz) for what in row.attention
                        if what != "invalid pipeline file")
        needs = f'<div class="needs">{marks}</div>' if marks else ""
        body.append(
            f'<tr data-pipeline="{escape(row.dag_id)}"'
            f'{" class=attention" if row.attention else ""}><td>{needs}<a class="name" '
            f'href="{base}/'
            f'pipelines/{quote(row.dag_id, safe="")}">{escape(row.dag_id)}</a>'
            f'<div class="desc">{escape(row.description)}</div></td>'
            f'<td>{escape(row.source)}</td><td>{escape(row.mode)}</td>'
            f'<td>{_schedule(row)}</td><td>{state}</td>'
            f'<td class="n">{_num(last.records if last else None)}</td>'
            f'<td class="n">{_age(row, now, tz)}</td>'
            f'<td class="n">{escape(last.lag_text) if last else "-"}</td>'
            f'<td class="n">{_num(last.dead_letters if last else None)}</td>'
            f'<td class="n">{row.alerts}</td>'
            f'<td>{_badge("paused") if row.paused else ""}</td></tr>')
    table = f"<table class=wide>{head}{''.join(body)}</table>" if body else \
        '<p class="none">No streamslice pipelines you may see.</p>'
    scheduler = "" if scheduler_stopped is None else \
        (f'<p id="scheduler" class="headline h-bad">'
         f"{escape(scheduler_text(axis.short(scheduler_stopped, tz)))}</p>")
    return _page("Streamslice", f"<h1>Streamslice pipelines</h1>{scheduler}{table}")


@dataclass
class PipelineView:
    row: Overview
    cells: list[Cell]
    recent: list[Run]  # oldest first
    checkpoint: Checkpoint | None
    plan_splits: list[dict[str, Any]]
    range_start: int | None
    range_end: int | None
    output: str
    alerts: list[SentAlert] = field(default_factory=list)
    tz: tzinfo = timezone.utc
    can_run: bool = False  # may create runs (a backfill): Airflow's POST on the DAG's runs
    can_clear: bool = False  # may clear runs (a re-run): Airflow's PUT on the DAG's runs
    split_noun: tuple[str, str] = ("partition", "partitions")  # the source's (Source)
    overdue: int | None = None  # since when the next scheduled run is overdue (Overview)
    scheduler_stopped: int | None = None  # the stopped scheduler's last heartbeat (epoch ms)

    @property
    def splits_name(self) -> str:
        return self.split_noun[1]


def pipeline(view: PipelineView, base: str, airflow: str) -> str:
    row, dag, tz, cells = view.row, view.row.dag_id, view.tz, view.cells
    interval = row.mode == "interval"

    def span(cell: Cell) -> str:
        if interval:
            return axis.span(cell.start, cell.end, tz)
        return axis.when(cell.start, tz, seconds=True)

    chart = lag_chart(cells)
    cols = svg.Columns(len(cells))
    counts = {s: sum(c.status == s for c in cells) for s in svg.COLORS}
    top = headline(cells, row.mode, row.paused, lambda c: axis.short(c.start, tz),
                   manual=row.schedule == "manual",
                   overdue=axis.short(view.overdue, tz) if view.overdue is not None else None,
                   stale=_stale(row), scheduler=None if view.scheduler_stopped is None
                   else axis.short(view.scheduler_stopped, tz))
    zone = axis.zone_label(tz, view.range_end)
    what = "interval" if interval else "batch"
    unit = chart.unit if chart else lag_unit(row.source)
    lag_title = ("Lag when each run was planned" +
                 (" <small>(time behind the tip of the stream)</small>" if unit == "ms" else
                  " <small>(records behind the high watermark)</small>"))
    parts = [
        _header(view, base, airflow, zone),
        _headline(top, view.can_run),
        _tiles(view, chart, span),
        '<section id="timeline"><div class="sec-head"><h2>Coverage</h2>',
        _range_form(view, zone) if interval else "",
        '</div>',
        f'<div id="coverage">{svg.strip(cells, cols, tz)}</div>',
        svg.legend(counts) if cells else "",
        _actions(view) if cells else "",
        f"<h3>Records per {what} <small>(records published)</small></h3>",
        svg.bars(cells, cols, tz),
        f"<h3>{lag_title}</h3>",
        '<div class="lagbox">', svg.lines(chart, cols, [c.start for c in cells], tz),
        svg.lag_legend(chart, view.splits_name), "</div></section>",
        "<section><h2>Positions</h2>", _checkpoint(view), _history(view), "</section>",
        "<section><h2>Runs</h2>", _runs(view, airflow), "</section>",
        "<section><h2>Alerts</h2>", _alerts(view), "</section>"]
    if view.row.source != "-":  # the source's own parts, asked of it after the page is shown
        parts.append(f'<div id="sections" data-url="{base}/pipelines/'
                     f'{quote(dag, safe="")}/sections"><p class="none">Asking the source…</p>'
                     '</div>')
    parts.append('<dialog id="confirm"><h3 class="title"></h3><div class="what"></div>'
                 '<div class="answer" role="status"></div><form method="dialog" '
                 'class="buttons"><button type="button" class="confirm">Confirm</button>'
                 '<button value="cancel" class="cancel">Cancel</button></form></dialog>'
                 '<div id="tip" hidden></div>')
    return _page(f"Streamslice: {dag}", "".join(parts), _data(view, base, airflow, chart))


def _header(view: PipelineView, base: str, airflow: str, zone: str) -> str:
    row = view.row
    dag_url = f"{airflow}/dags/{quote(row.dag_id, safe='')}"
    facts = " · ".join([escape(row.source), escape(row.mode), _schedule(row)])
    paused = f" {_badge('paused')}" if row.paused else ""
    return (f'<header><div class="crumbs"><a href="{base}/">All pipelines</a></div>'
            f'<h1>{escape(row.dag_id)}{paused}</h1>'
            f'<p class="facts">{facts} · times in <b>{escape(zone)}</b> · output '
            f'<code class="output">{escape(_where(view.output, view.can_clear))}</code> · '
            f'<a href="{escape(dag_url)}" target="_top">open the DAG in Airflow</a></p>'
            f'<p class="desc">{escape(row.description)}</p></header>')


def _headline(top: Headline, can_run: bool) -> str:
    text = escape(top.text)
    if top.level == "bad" and not can_run:
        text += (" <i>Your Airflow role may read this pipeline but not run it: ask someone "
                 "who may.</i>")
    return f'<p id="headline" class="headline h-{top.level}">{text}</p>'


def _tiles(view: PipelineView, chart: LagChart | None, span: Callable[[Cell], str]) -> str:
    cells, tz = view.cells, view.tz
    tiles = []
    if view.row.mode == "interval":
        done = complete_until(cells)
        tiles.append(("Data complete to", axis.when(done, tz) if done else "—",
                      "no hole or failure before it in view"))
        newest = next((c for c in reversed(cells) if c.run), None)
        tiles.append(("Latest interval run", span(newest) if newest else "—",
                      newest.status if newest else "none in view"))
    else:
        cp = view.checkpoint
        newest = cells[-1] if cells else None
        tiles.append(("Latest batch", f"#{cp.batch}" if cp else "—",
                      f"committed {axis.when(cp.committed_at, tz)}" if cp else
                      "nothing committed yet"))
        tiles.append(("Latest run", span(newest) if newest else "—",
                      newest.status if newest else "none yet"))
    lag = chart.latest_total if chart else None
    when = f", planned {axis.when(chart.measured_at, tz, seconds=True)}" \
        if chart and chart.measured_at else ""
    tiles.append(("Lag at the last plan", lag_text(lag, chart.unit) if chart else "—",
                  ("worst of all " if chart and chart.unit == "ms" else "all ") +
                  view.splits_name + when if chart else "no figures yet"))
    records = sum(c.records or 0 for c in cells)
    tiles.append(("Records in view", _num(records), f"{len(cells)} "
                  f"{'intervals' if view.row.mode == 'interval' else 'batches'}"))
    now = int(time.time() * 1000)
    age = view.row.data_age(now)
    limit = view.row.freshness
    tiles.append(("Data age", duration_text(age) if age is not None else "—",
                  ("STALE: " if view.row.stale(now) else "") +
                  (f"limit {duration_text(limit)}" if limit else "no freshness limit")
                  if age is not None else "nothing published yet"))
    tiles.append(("Alerts sent", _num(view.row.alerts), "see Alerts below"))
    body = "".join(f'<div class="tile"><span>{escape(a)}</span><b>{escape(b)}</b>'
                   f'<small>{escape(c)}</small></div>' for a, b, c in tiles)
    return f'<div class="tiles">{body}</div>'


def _range_form(view: PipelineView, zone: str) -> str:
    if view.range_start is None:
        return ""
    start, end = (axis.when(at, view.tz).replace(" ", "T")
                  for at in (view.range_start, view.range_end or 0))
    return (f'<form method="get" class="range"><label>From <input name="start" value="{start}">'
            f'</label><label> to <input name="end" value="{end}"></label> '
            f'<button>Show</button></form>')


def _actions(view: PipelineView) -> str:
    """The selection panel under the strip; the script fills it in."""
    hint = ("Click an interval for its details; shift-click another to select a range, "
            "then backfill what is missing or failed in it." if view.row.mode == "interval"
            else "Click a batch for its details.")
    return (f'<div id="selection" class="panel"><p class="hint">{hint}</p>'
            '<div class="detail"></div><div class="buttons"></div></div>')


def _checkpoint(view: PipelineView) -> str:
    cp, tz = view.checkpoint, view.tz
    if cp is None:
        return '<p class="none">No checkpoint yet: the first run that publishes writes one.</p>'
    by_id = {r.run_id: r for r in view.recent}
    source = by_id.get(str(cp.run_id))
    if view.row.mode == "interval":
        end = cp.interval_end or (source.end if source else None)
        if source and source.start is not None and end == source.end:
            what = f"Last interval committed: <b>{escape(axis.span(source.start, end, tz))}</b>"
        else:
            what = f"Last interval committed: ending <b>{escape(axis.when(end, tz))}</b>"
    else:
        what = f"Batch <b>#{escape(str(cp.batch))}</b>"
    chart = lag_chart(view.cells)  # the lag of the run planned last, as tile and legend
    measured = view.cells[chart.latest].run if chart and chart.latest is not None else None
    rows = checkpoint_rows(cp, view.plan_splits, view.row.source,
                           measured or (view.recent[-1] if view.recent else None))
    body = "".join(
        f'<tr{" class=more" if i >= POSITIONS_SHOWN else ""}><td>{escape(r["split"])}</td>'
        f'<td>{_position(r["next"])}</td><td>{_position(r["planned_end"])}</td>'
        f'<td class="n">{escape(r["lag_text"])}</td></tr>'
        for i, r in enumerate(rows))
    more = ""
    if len(rows) > POSITIONS_SHOWN:
        more = (f'<button class="link show-all" data-target="checkpoint">Show all {len(rows)} '
                f'{view.splits_name}</button>')
    return (f'<p>{what}, committed {axis.when(cp.committed_at, tz, seconds=True)} by '
            f'<code>{escape(str(cp.run_id))}</code>. Where each of the {len(rows)} '
            f'{view.splits_name} continues, furthest behind first (click a position to copy '
            f'it):</p><table id="checkpoint" class="collapsed"><tr><th>'
            f'{escape(view.split_noun[0].capitalize())}</th>'
            '<th>Next position</th><th>Last plan ended at</th>'
            '<th class=n>Lag (at the last plan)</th>'
            f'</tr>{body}</table>{more}')


def _position(text: PositionText) -> str:
    """The short form; the full value on hover, and the bare value (a sequence number
    without its ``after``) copied on click."""
    if text.full == text.short:
        return f"<code>{escape(text.short)}</code>"
    return (f'<code class="pos" data-full="{escape(text.to_copy)}" title="{escape(text.full)}'
            f' — click to copy">{escape(text.short)}</code>')


def _history(view: PipelineView) -> str:
    rows = [(r, r.metrics.positions) for r in reversed(view.recent)
            if r.metrics and r.metrics.positions][:10]
    if not rows:
        return ""

    def listed(positions: Positions) -> str:
        shown = positions_text(view.row.source, positions, limit=4)
        text = ", ".join(f"{escape(k)} {_position(t)}" for k, t in shown)
        return text + (f" … and {len(positions) - 4} more" if len(positions) > 4 else "")
    body = "".join(f"<tr><td>{axis.when(r.ended_at, view.tz, seconds=True)}</td>"
                   f"<td><code>{escape(r.run_id)}</code></td><td>{listed(p)}</td></tr>"
                   for r, p in rows)
    return (f"<details><summary>Next positions after each of the latest {len(rows)} runs"
            "</summary><table><tr><th>Committed</th><th>Run</th><th>Next positions</th></tr>"
            f"{body}</table></details>")


def _runs(view: PipelineView, airflow: str) -> str:
    dag, tz, interval = view.row.dag_id, view.tz, view.row.mode == "interval"
    body = []
    # Newest interval first (a backfill of an old one sits with its interval), else newest run.
    order = sorted(view.recent, key=lambda r: (r.start or 0, r.started_at or 0), reverse=True) \
        if interval else list(reversed(view.recent))
    for n, r in enumerate(order):
        m = r.metrics
        logs = " ".join(f'<a href="{escape(_run_link(airflow, dag, r.run_id, t))}" '
                        f'target="_top">{escape(t)} log</a>' for t in r.logged)
        dead = _num(r.dead_letters)
        uri = m.dead_letter_uri if m else None
        if r.dead_letters and uri and _where(uri, view.can_clear) == uri:
            dead = f'<a href="{escape(uri)}">{dead}</a>'
        when = axis.span(r.start, r.end, tz) if interval else axis.when(r.started_at, tz, True)
        why = f'<div class="why">{escape(r.reason)}</div>' if r.reason else ""
        body.append(
            f'<tr data-run="{escape(r.run_id)}"{" class=more" if n >= RUNS_SHOWN else ""}>'
            f'<td>{_badge(r.status)}</td><td>{when}</td>'
            f'<td class="n">{_num(r.records)}</td><td class="n">{dead}</td>'
            f'<td class="n">{_num(m.late_records if m else None)}</td>'
            f'<td>{_published(m, view.can_clear)}</td>'
            f'<td><a href="{escape(_run_link(airflow, dag, r.run_id))}" target="_top">'
            f'{escape(r.run_id)}</a> {logs}{why}</td></tr>')
    if not body:
        return '<p class="none">No runs yet.</p>'
    first = "Interval" if interval else "Ran at"
    more = (f'<button class="link show-all" data-target="runs">Show all {len(body)} runs'
            '</button>' if len(body) > RUNS_SHOWN else "")
    return (f'<table id="runs" class="wide collapsed"><tr><th>State</th><th>{first}</th>'
            "<th class=n>Records</th><th class=n>Dead letters</th><th class=n>Late</th>"
            f"<th>Published</th><th>Run</th></tr>{''.join(body)}</table>{more}")


def _where(uri: str, may_change: bool) -> str:
    """An output location as this reader may see it: a folder on the Airflow server's own
    disk (``file://``) means something only to those who may change the pipeline (Airflow
    lets them clear its runs); others get its last part. Object store and table locations
    are where readers read the data: shown to all."""
    if may_change or not uri.startswith(("file:", "/")):
        return uri
    return f"…/{uri.rstrip('/').rsplit('/', 1)[-1]} (on the Airflow server)"


def _published(metrics: RunMetrics | None, may_change: bool = True) -> str:
    """The run's partition (its URI on hover) and, for a table, the snapshot (Iceberg) or
    version (Delta) that holds exactly this run's state, with how to read it back."""
    where = (metrics.published if metrics else None) or {}
    uri = where.get("uri")
    title = f' title="{escape(_where(uri, may_change))}"' if uri else ""
    cell = f"<code{title}>{escape(metrics.partition if metrics else '-')}</code>"
    for word, found in (("snapshot", where.get("snapshot_id")), ("version", where.get("version"))):
        if found is not None:
            value = escape(str(found))
            cell += (f' <span class="table-version" data-{word}="{value}" title="read this '
                     f'state: SELECT … VERSION AS OF {value}">{word} {value}</span>')
    return cell


def _alerts(view: PipelineView) -> str:
    if not view.alerts:
        return '<p class="none">No alerts sent.</p>'
    body = "".join(f"<tr><td>{axis.when(a.at, view.tz, seconds=True)}</td>"
                   f"<td>{escape(a.kind)}</td>"
                   f"<td>{escape(a.message[:300])}</td></tr>"
                   for a in reversed(view.alerts))
    return f"<table class=wide><tr><th>Sent</th><th>Kind</th><th>Message</th></tr>{body}</table>"


def section(part: PageSection, actions: str = "", may_run: bool = False) -> str:
    """One of the source's own sections (``HasPageSections``), served on its own; a row's
    action (``PageAction``) is a button the page's script confirms and posts to
    ``actions/<name>``, disabled, with why, when it cannot be pressed."""
    if part.error:
        body = f'<p class="error">{escape(part.error)}</p>'
    elif not part.rows:
        body = f'<p class="none">{escape(part.empty)}</p>'
    else:
        buttons = list(part.actions) + [None] * (len(part.rows) - len(part.actions))
        extra = "<th></th>" if any(buttons) else ""
        head = "".join(f"<th>{escape(c)}</th>" for c in part.columns) + extra
        rows = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) +
                       (f"<td>{_button(act, actions, may_run)}</td>" if extra else "") + "</tr>"
                       for row, act in zip(part.rows, buttons))
        body = f"<table>{head and f'<tr>{head}</tr>'}{rows}</table>"
    return f"<section><h2>{escape(part.title)}</h2>{body}</section>"


def _button(act: PageAction | None, actions: str, may_run: bool) -> str:
    if act is None:
        return ""
    why = act.disabled or ("" if may_run else "Your Airflow role may read this DAG but not "
                           "run it")
    state = f' disabled title="{escape(why)}"' if why else ""
    return (f'<button class="quiet" data-action="{escape(actions)}/{quote(act.name)}" '
            f'data-target="{escape(act.target)}" data-title="{escape(act.label)}" '
            f'data-what="{escape(act.confirm)}"{state}>{escape(act.label)}</button>')


def _json_number(value: float | None) -> float | int | None:
    return int(value) if value is not None and value.is_integer() else value


def _data(view: PipelineView, base: str, airflow: str,
          chart: LagChart | None) -> PageData:
    """What the script needs, compact (a 1,000-interval strip sends 1,000 of these): per
    column its start and end (epoch ms, shown in ``tz``), state, run, counts, why it failed,
    and its lag (named lines, the others' band, the total); and what the user may do."""
    keys = list(chart.lines) if chart else []
    return PageData(dag_id=view.row.dag_id, mode=view.row.mode, paused=view.row.paused,
                    api=f"{airflow}/api/v2", airflow=airflow, base=base,
                    can_run=view.can_run, can_clear=view.can_clear, tz=str(view.tz),
                    cols=[_column(cell, i, chart, keys) for i, cell in enumerate(view.cells)],
                    lag_keys=keys, lag_unit=chart.unit if chart else "records",
                    others_count=chart.others_count if chart else 0,
                    splits_name=view.splits_name)


def _column(cell: Cell, i: int, chart: LagChart | None, keys: list[str]) -> StripColumn:
    col = StripColumn(s=cell.status, t=cell.start, e=cell.end)
    run = cell.run
    if run is None:
        return col
    col["run"], col["n"] = run.run_id, cell.records
    if run.late_records:
        col["late"] = run.late_records
    if run.reason:
        col["why"] = run.reason
    if run.logical_date is not None and run.logical_date != cell.start:
        col["ld"] = run.logical_date  # dated otherwise (a manual run: by its end)
    if chart is not None:
        col["lag"] = [_json_number(chart.lines[k][i]) for k in keys]
        low, high, total = chart.low[i], chart.high[i], chart.total[i]
        if low is not None:
            col["lo"] = _json_number(low)
        if high is not None:
            col["hi"] = _json_number(high)
        if total is not None:
            col["tot"] = _json_number(total)
    return col
