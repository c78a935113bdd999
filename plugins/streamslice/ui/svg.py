"""Server-side SVG: the coverage strip, the records bars and the lag lines, drawn on one set
of columns (one per interval or batch) so that a column reads straight down through all three.
Each has a time axis in the pipeline's time zone and a value axis with its unit; the page's
script adds hover values and selection (every mark also carries ``data-*`` attributes)."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from ..splits import lag_text
from . import axis
from .model import STATES, Cell, LagChart

if TYPE_CHECKING:
    from datetime import tzinfo

COLORS = {"published": "#2e7d32", "late": "#f9a825", "empty": "#b0bec5", "failed": "#c62828",
          "running": "#1e88e5", "missing": "#fdecea"}
PALETTE = ("#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41",
           "#3949ab")
OTHERS = "#90a4ae"


@dataclass
class Columns:
    """Where column ``i`` is drawn: ``gutter`` on the left holds the value axis."""
    n: int
    width: float = 840.0
    gutter: float = 56.0
    most: float = 56.0  # a column is never wider than this: three runs stay three columns

    def __post_init__(self) -> None:
        self.pitch = min(self.most, self.width / max(1, self.n))

    def x(self, i: int) -> float:
        return self.gutter + i * self.pitch

    def mid(self, i: int) -> float:
        return self.gutter + (i + 0.5) * self.pitch

    @property
    def right(self) -> float:
        return self.x(self.n)


def _svg(cols: Columns, height: float, body: str, label: str, kind: str) -> str:
    width = int(cols.right + 30)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="cols {kind}" '
            f'aria-label="{escape(label)}" data-gutter="{cols.gutter}" '
            f'data-pitch="{cols.pitch:.3f}" data-n="{cols.n}" width="{width}" '
            f'height="{height:.0f}" viewBox="0 0 {width} {height:.0f}">{body}</svg>')


def _time_axis(cols: Columns, starts: list[int | None], tz: tzinfo, top: float,
               grid_from: float | None = None) -> str:
    out = [f'<line x1="{cols.gutter}" x2="{cols.right:.1f}" y1="{top:.1f}" y2="{top:.1f}" '
           'class="base"/>']
    for i, clock, day in axis.time_ticks(starts, tz, cols.right - cols.gutter):
        x = cols.x(i)
        if grid_from is not None:
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{grid_from:.1f}" '
                       f'y2="{top:.1f}" class="grid"/>')
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{top + 4:.1f}" '
                   'class="base"/>')
        out.append(f'<text x="{x:.1f}" y="{top + 15:.1f}" class="tick">{clock}</text>')
        if day:
            out.append(f'<text x="{x:.1f}" y="{top + 28:.1f}" class="tick day">{day}</text>')
    return "".join(out)


def strip(cells: list[Cell], cols: Columns, tz: tzinfo) -> str:
    """One square per interval or batch, coloured by state; a missing interval is a pale,
    dashed square: a hole in the data. (The page's script shows what each one holds.)"""
    if not cells:
        return '<p class="none">No intervals in this range.</p>'
    size = f"{max(2.0, cols.pitch - (2 if cols.pitch > 6 else 0.5)):.1f}"
    marks = []
    for i, cell in enumerate(cells):
        marks.append(  # colours come from the page's style, by state (st-<state>)
            f'<rect class="cell st-{cell.status}" data-i="{i}" data-status="{cell.status}" '
            f'data-start="{cell.start if cell.start is not None else ""}" '
            f'tabindex="0" role="button" aria-label="{escape(cell.status)}" '
            f'x="{cols.x(i):.1f}" y="2" width="{size}" height="30"/>')
    body = "".join(marks) + _time_axis(cols, [c.start for c in cells], tz, 36)
    return _svg(cols, 70, body, "interval coverage", "strip")


def state_style() -> str:
    """The fill of each state's marks (strip cells, bars, legend keys)."""
    return "".join(f".st-{s}{{fill:{c}}}" for s, c in COLORS.items()) + \
        ".cell.st-missing{stroke:#c62828;stroke-dasharray:3 2;stroke-width:1.2}"


def legend(counts: dict[str, int]) -> str:
    items = "".join(f'<span class="key k-{s}" data-state="{s}"><i style="background:'
                    f'{COLORS[s]}"></i>{s} <b>{counts.get(s, 0)}</b></span>' for s in STATES)
    return f'<div class="legend">{items}</div>'


def _value_axis(cols: Columns, top: float, height: float, unit: str, y0: float) -> str:
    out = []
    for frac in (0, 0.5, 1):
        y = y0 + height - height * frac
        label = axis.duration(top * frac) if unit == "ms" else axis.compact(top * frac)
        out.append(f'<line x1="{cols.gutter}" x2="{cols.right:.1f}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" class="{"base" if frac == 0 else "grid"}"/>'
                   f'<text x="{cols.gutter - 6}" y="{y + 4:.1f}" class="tick num">{label}'
                   '</text>')
    return "".join(out)


def bars(cells: list[Cell], cols: Columns, tz: tzinfo, height: float = 110) -> str:
    """Records per interval or batch; a failed or running one is a short tick of its colour,
    a missing one nothing."""
    if not any(c.run for c in cells):
        return '<p class="none">No runs yet.</p>'
    top = axis.nice_top(max([c.records or 0 for c in cells] or [1]), least=10)
    y0 = 8.0
    marks = [_value_axis(cols, top, height, "records", y0)]
    width = max(1.0, cols.pitch - (3 if cols.pitch > 8 else 1))
    for i, cell in enumerate(cells):
        if cell.run is None:
            continue
        value = cell.records
        h = height * (value or 0) / top if value is not None else 4
        marks.append(f'<rect class="bar st-{cell.status}" data-value="'
                     f'{value if value is not None else ""}" x="{cols.x(i) + 0.5:.1f}" '
                     f'y="{y0 + height - h:.1f}" width="{width:.1f}" height="{max(h, 1):.1f}"/>')
    marks.append(_time_axis(cols, [c.start for c in cells], tz, y0 + height, y0))
    return _svg(cols, y0 + height + 34, "".join(marks), "records per interval", "bars")


def lines(chart: LagChart | None, cols: Columns, starts: list[int | None], tz: tzinfo,
          height: float = 110) -> str:
    """One line per named partition/shard over a grey band that holds all the others; a lone
    point is drawn as a dot so that it shows."""
    if chart is None:
        return '<p class="none">No lag recorded yet.</p>'
    values = [v for vs in (*chart.lines.values(), chart.high) for v in vs if v is not None]
    top = axis.nice_top(max(values, default=1), least=1000 if chart.unit == "ms" else 10)
    y0 = 8.0

    def y(v: float) -> float:
        return y0 + height - height * v / top
    marks = [_value_axis(cols, top, height, chart.unit, y0)]
    if chart.others_count:
        for segment in _segments(chart.high):
            dx = cols.pitch / 4 if len(segment) == 1 else 0  # a lone column: a short bar
            edge = [(cols.mid(i) - dx, y(v)) for i, v in segment] + \
                [(cols.mid(i) + dx, y(v)) for i, v in segment] if dx else \
                [(cols.mid(i), y(v)) for i, v in segment]
            edge += [(cols.mid(i) + side * dx, y(chart.low[i] or 0.0))
                     for i, _ in reversed(segment) for side in ((1, -1) if dx else (0,))]
            marks.append(f'<polygon class="others" points="'
                         f'{" ".join(f"{x:.1f},{yy:.1f}" for x, yy in edge)}" fill="{OTHERS}" '
                         'fill-opacity=".35" stroke="none"/>')
    for n, (key, series) in enumerate(chart.lines.items()):
        color = PALETTE[n % len(PALETTE)]
        marks.append(f'<g class="lag" data-split="{escape(key)}" stroke="{color}" '
                     f'fill="{color}">')
        points = []
        for segment in _segments(series):  # a column without a figure breaks the line
            points += [(cols.mid(i), y(v)) for i, v in segment]
            path = " ".join(f"{cols.mid(i):.1f},{y(v):.1f}" for i, v in segment)
            marks.append(f'<polyline points="{path}" fill="none" stroke-width="2"/>')
        if len(points) <= 40:
            marks.extend(f'<circle cx="{x:.1f}" cy="{yy:.1f}" r="2.5"/>' for x, yy in points)
        marks.append("</g>")
    marks.append(_time_axis(cols, starts, tz, y0 + height, y0))
    return _svg(cols, y0 + height + 34, "".join(marks), "lag per partition", "lines")


def _segments(values: list[float | None]) -> list[list[tuple[int, float]]]:
    out: list[list[tuple[int, float]]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if out[-1]:
                out.append([])
        else:
            out[-1].append((i, v))
    return [s for s in out if s]


def lag_legend(chart: LagChart | None, name: str) -> str:
    """The named lines with their value at the last plan (``LagChart.at_latest``), then
    "others" with how many it folds."""
    if chart is None:
        return ""

    def latest(values: list[float | None]) -> str:
        assert chart is not None
        return lag_text(chart.at_latest(values), chart.unit)
    rows = [f'<li><i style="background:{PALETTE[n % len(PALETTE)]}"></i>'
            f'<span class="k" title="{escape(key)}">{escape(key)}</span>'
            f'<span class="v">{latest(values)}</span></li>'
            for n, (key, values) in enumerate(chart.lines.items())]
    if chart.others_count:
        rows.append(f'<li class="others"><i style="background:{OTHERS}"></i><span class="k">'
                    f'{chart.others_count} other {name} (band: lowest to highest)</span>'
                    f'<span class="v">≤ {latest(chart.high)}</span></li>')
    how = "worst" if chart.unit == "ms" else "sum"
    rows.append(f'<li class="total"><i></i><span class="k">all {name} ({how})</span>'
                f'<span class="v">{latest(chart.total)}</span></li>')
    head = '<li class="head"><span class="k"></span><span class="v">at the last plan</span></li>'
    return f'<ul class="lag-legend">{head}{"".join(rows)}</ul>'
