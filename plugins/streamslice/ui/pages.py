"""The HTML of the overview and pipeline pages (no scripts: links, forms and inline SVG)."""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..timeutil import iso
from . import svg
from .model import Cell, Overview, Run, checkpoint_rows, lag_series

if TYPE_CHECKING:
    from ..sources import PageSection
    from ..splits import PositionText

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#1c2833}
h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:22px 0 6px}
table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #e0e0e0;
text-align:left;vertical-align:top}th{background:#f5f7f9}td.n{text-align:right}
.legend{margin:4px 0;font-size:12px}.key{margin-right:12px}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px;border:1px solid #90a4ae}
.axis{font-size:10px;fill:#607d8b}.none{color:#78909c}.bad{color:#c62828}
.state-success{color:#2e7d32}.state-failed{color:#c62828}.state-running{color:#1e88e5}
code{font-size:12px;background:#f5f7f9;padding:1px 3px}form{margin:6px 0}
"""


def _page(title: str, body: str) -> str:
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<style>{CSS}</style></head><body>{body}</body></html>')


def _time(ms: int | None) -> str:
    return iso(ms)[:19].replace("T", " ") if ms is not None else "-"


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, (int, float)) else "-"


def _run_link(airflow: str, dag_id: str, run_id: str, task: str | None = None) -> str:
    url = f"{airflow}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
    return f"{url}/tasks/{quote(task, safe='')}" if task else url


def overview(rows: list[Overview], base: str, airflow: str) -> str:
    head = ("<tr><th>Pipeline</th><th>Source</th><th>Mode</th><th>Schedule</th>"
            "<th>Last run</th><th>Records (last)</th><th>Lag (last plan)</th>"
            "<th>Dead letters (last)</th><th>Alerts sent</th><th>Paused</th></tr>")
    body = []
    for row in rows:
        last = row.last
        state = "never run"
        if last:
            href = escape(_run_link(airflow, row.dag_id, last.run_id))
            state = (f'<a class="state-{last.state}" href="{href}">{escape(last.state)}</a> '
                     f"{_time(last.started_at)}")
        if row.config_error:
            state = '<span class="bad">invalid pipeline file</span>'
        body.append(
            f'<tr data-pipeline="{escape(row.dag_id)}"><td><a href="{base}/pipelines/'
            f'{quote(row.dag_id, safe="")}">{escape(row.dag_id)}</a></td>'
            f'<td>{escape(row.source)}</td><td>{escape(row.mode)}</td>'
            f'<td>{escape(row.schedule)}</td><td>{state}</td>'
            f'<td class="n">{_num(last.records if last else None)}</td>'
            f'<td class="n">{escape(last.lag_text) if last else "-"}</td>'
            f'<td class="n">{_num(last.dead_letters if last else None)}</td>'
            f'<td class="n">{row.alerts}</td><td>{"yes" if row.paused else "no"}</td></tr>')
    table = f"<table>{head}{''.join(body)}</table>" if body else \
        '<p class="none">No streamslice pipelines you may see.</p>'
    return _page("Streamslice", f"<h1>Streamslice pipelines</h1>{table}")


@dataclass
class PipelineView:
    row: Overview
    cells: list[Cell]
    recent: list[Run]  # oldest first
    checkpoint: dict[str, Any] | None
    plan_splits: list[dict[str, Any]]
    range_start: int | None
    range_end: int | None
    output: str
    sections: list[PageSection] = field(default_factory=list)  # the source's own (Source)
    alerts: list[dict[str, Any]] = field(default_factory=list)


def pipeline(view: PipelineView, base: str, airflow: str) -> str:
    row, dag = view.row, view.row.dag_id

    def describe(cell: Cell) -> str:
        when = f"{_time(cell.start)} → {_time(cell.end)}"
        if cell.run is None:
            return f"{when}: never run"
        extra = f", {_num(cell.records)} records" if cell.records is not None else ""
        late = (cell.run.metrics or {}).get("late_records")
        extra += f", {late} late" if late else ""
        return f"{when}: {cell.status}{extra} ({cell.run.run_id})"

    def link(cell: Cell) -> str | None:
        return _run_link(airflow, dag, cell.run.run_id) if cell.run else None

    form = ""
    if view.range_start is not None:
        form = (f'<form method="get">From <input name="start" value="{iso(view.range_start)}">'
                f' to <input name="end" value="{iso(view.range_end or 0)}"> '
                '<button>Show</button></form>')
    counts = {s: sum(c.status == s for c in view.cells) for s in svg.COLORS}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    parts = [f'<p><a href="{base}/">All pipelines</a> · <a href="{escape(airflow)}/dags/'
             f'{quote(dag, safe="")}">DAG</a></p>',
             f"<h1>{escape(dag)}</h1><p>{escape(row.description)}</p>",
             f"<p>{escape(row.source)} · {escape(row.mode)} · {escape(row.schedule)} · output "
             f"<code>{escape(view.output)}</code>{' · paused' if row.paused else ''}</p>",
             "<h2>Coverage</h2>", form,
             f'<div id="coverage">{svg.strip(view.cells, describe, link)}</div>', svg.legend(),
             f'<p class="summary">{escape(summary)}</p>',
             "<h2>Records per run</h2>",
             svg.bars([(r.run_id, r.records, r.status) for r in view.recent]),
             "<h2>Lag per partition / shard</h2>",
             svg.lines(lag_series(view.recent), len(view.recent)),
             "<h2>Checkpoint</h2>", _checkpoint(view), _history(view.recent),
             "<h2>Runs</h2>", _runs(view.recent, dag, airflow),
             "<h2>Alerts</h2>", _alerts(view.alerts)]
    for section in view.sections:
        parts += [f"<h2>{escape(section.title)}</h2>", _section(section)]
    return _page(f"Streamslice: {dag}", "".join(parts))


def _checkpoint(view: PipelineView) -> str:
    cp = view.checkpoint
    if not cp:
        return '<p class="none">No checkpoint yet.</p>'
    rows = "".join(f'<tr><td>{escape(r["split"])}</td>{_position(r["next"])}'
                   f'{_position(r["planned_end"])}<td class="n">{escape(r["lag_text"])}</td>'
                   "</tr>"
                   for r in checkpoint_rows(cp, view.plan_splits, view.row.source,
                                            view.recent[-1] if view.recent else None))
    return (f"<p>Batch {cp.get('batch')}, committed {_time(cp.get('committed_at'))} by "
            f"<code>{escape(str(cp.get('run_id')))}</code></p><table id=\"checkpoint\"><tr>"
            "<th>Partition / shard</th><th>Next position</th><th>Last plan ended at</th>"
            f"<th>Lag (last run)</th></tr>{rows}</table>")


def _position(text: PositionText) -> str:
    """A position cell: the short form, the full value on hover (to copy)."""
    return f'<td title="{escape(text.full)}">{escape(text.short)}</td>'


def _history(runs: list[Run]) -> str:
    rows = [(r, (r.metrics or {}).get("positions")) for r in reversed(runs)]
    rows = [(r, p) for r, p in rows if p][:10]
    if not rows:
        return ""
    body = "".join(f"<tr><td>{_time(r.ended_at)}</td><td><code>{escape(r.run_id)}</code></td>"
                   f"<td>{escape(', '.join(f'{k}={v}' for k, v in sorted(p.items())))}</td></tr>"
                   for r, p in rows)
    return ("<p>History (after each of the latest runs)</p><table><tr><th>Committed</th>"
            f"<th>Run</th><th>Next positions</th></tr>{body}</table>")


def _runs(runs: list[Run], dag: str, airflow: str) -> str:
    body = []
    for r in reversed(runs):
        m = r.metrics or {}
        tasks = " ".join(f'<a href="{escape(_run_link(airflow, dag, r.run_id, t))}">{escape(t)}'
                         f" log</a>" for t in r.failed_tasks)
        dead = _num(r.dead_letters)
        if r.dead_letters and m.get("dead_letter_uri"):
            dead = (f'<a href="{escape(m["dead_letter_uri"])}">{dead}</a>')
        body.append(
            f'<tr data-run="{escape(r.run_id)}"><td><a class="state-{r.state}" href="'
            f'{escape(_run_link(airflow, dag, r.run_id))}">{escape(r.run_id)}</a></td>'
            f"<td>{escape(r.state)} {tasks}</td><td>{_time(r.start)}</td>"
            f'<td class="n">{_num(r.records)}</td><td class="n">{dead}</td>'
            f'<td class="n">{_num(m.get("late_records"))}</td>'
            f"<td>{_published(m)}</td></tr>")
    if not body:
        return '<p class="none">No runs yet.</p>'
    return ("<table><tr><th>Run</th><th>State</th><th>Interval start</th><th>Records</th>"
            "<th>Dead letters</th><th>Late</th><th>Published</th></tr>"
            f"{''.join(body)}</table>")


def _published(metrics: dict[str, Any]) -> str:
    """The run's partition (its URI on hover) and, for a table, the snapshot (Iceberg) or
    version (Delta) that holds exactly this run's state, with how to read it back."""
    where = metrics.get("published") or {}
    uri = where.get("uri")
    title = f' title="{escape(uri)}"' if uri else ""
    cell = f"<code{title}>{escape(str(metrics.get('partition') or '-'))}</code>"
    for key, word in (("snapshot_id", "snapshot"), ("version", "version")):
        if where.get(key) is not None:
            value = escape(str(where[key]))
            cell += (f' <span class="table-version" data-{word}="{value}" title="read this '
                     f'state: SELECT … VERSION AS OF {value}">{word} {value}</span>')
    return cell


def _alerts(alerts: list[dict[str, Any]]) -> str:
    if not alerts:
        return '<p class="none">No alerts sent.</p>'
    body = "".join(f"<tr><td>{_time(a.get('at'))}</td><td>{escape(str(a.get('kind')))}</td>"
                   f"<td>{escape(str(a.get('message'))[:300])}</td></tr>"
                   for a in reversed(alerts))
    return f"<table><tr><th>Sent</th><th>Kind</th><th>Message</th></tr>{body}</table>"


def _section(section: PageSection) -> str:
    if section.error:
        return f'<p class="bad">{escape(section.error)}</p>'
    if not section.rows:
        return f'<p class="none">{escape(section.empty)}</p>'
    head = "".join(f"<th>{escape(c)}</th>" for c in section.columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>"
                   for row in section.rows)
    return f"<table><tr>{head}</tr>{body}</table>"
