"""Server-side SVG: the coverage strip, a bar chart and a line chart. No scripts and nothing
fetched by the browser; every mark carries a ``<title>`` tooltip and ``data-*`` attributes."""
from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from .model import STATES, Cell

if TYPE_CHECKING:
    from collections.abc import Callable

COLORS = {"published": "#2e7d32", "late": "#f9a825", "empty": "#b0bec5", "failed": "#c62828",
          "running": "#1e88e5", "missing": "#ffffff"}
PALETTE = ("#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41",
           "#3949ab")


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">{body}</svg>')


def strip(cells: list[Cell], describe: Callable[[Cell], str],
          link: Callable[[Cell], str | None], width: int = 960) -> str:
    """One square per interval or batch, coloured by state; missing intervals are hollow."""
    if not cells:
        return '<p class="none">No intervals in this range.</p>'
    step = max(3.0, min(24.0, width / len(cells)))
    size = max(2.0, step - 1)
    marks = []
    for i, cell in enumerate(cells):
        rect = (f'<rect x="{i * step:.1f}" y="0" width="{size:.1f}" height="28" '
                f'fill="{COLORS[cell.status]}" stroke="#78909c" stroke-width="0.5">'
                f'<title>{escape(describe(cell))}</title></rect>')
        target = link(cell)
        if target:
            rect = f'<a href="{escape(target)}">{rect}</a>'
        marks.append(f'<g class="cell" data-status="{cell.status}" '
                     f'data-start="{cell.start if cell.start is not None else ""}">{rect}</g>')
    return _svg(int(len(cells) * step) + 1, 30, "".join(marks), "interval coverage")


def legend() -> str:
    items = "".join(f'<span class="key"><i style="background:{COLORS[s]}"></i>{s}</span>'
                    for s in STATES)
    return f'<div class="legend">{items}</div>'


def bars(values: list[tuple[str, int | None, str]], width: int = 960, height: int = 160) -> str:
    """``(label, value, state)`` per bar; a failed or unknown value is a short red tick."""
    if not values:
        return '<p class="none">No runs yet.</p>'
    top = max([v for _, v, _ in values if v] or [1])
    step = min(40.0, width / len(values))
    marks = [f'<text x="0" y="10" class="axis">{top:,}</text>']
    for i, (label, value, state) in enumerate(values):
        h = (height - 20) * (value or 0) / top
        color = COLORS.get(state, COLORS["published"])
        if value is None:
            h, color = 4, COLORS["failed"] if state == "failed" else COLORS["running"]
        marks.append(f'<rect class="bar" data-value="{value if value is not None else ""}" '
                     f'x="{i * step + 1:.1f}" y="{height - h:.1f}" '
                     f'width="{max(1.0, step - 2):.1f}" height="{h:.1f}" fill="{color}">'
                     f'<title>{escape(label)}: {value if value is not None else state}'
                     f'</title></rect>')
    return _svg(width, height, "".join(marks), "records per run")


def lines(series: dict[str, list[tuple[int, float]]], runs: int, width: int = 960,
          height: int = 160) -> str:
    """One polyline per partition/shard over the recent runs."""
    if not series:
        return '<p class="none">No lag recorded yet.</p>'
    top = max(v for points in series.values() for _, v in points) or 1
    span = max(1, runs - 1)
    marks = [f'<text x="0" y="10" class="axis">{top:,.0f}</text>']
    keys = []
    for n, (key, points) in enumerate(sorted(series.items())):
        color = PALETTE[n % len(PALETTE)]
        path = " ".join(f"{(width - 10) * x / span + 5:.1f},"
                        f"{height - 5 - (height - 20) * y / top:.1f}" for x, y in points)
        marks.append(f'<polyline class="lag" data-split="{escape(key)}" points="{path}" '
                     f'fill="none" stroke="{color}" stroke-width="2">'
                     f'<title>{escape(key)}</title></polyline>')
        keys.append(f'<span class="key"><i style="background:{color}"></i>{escape(key)}</span>')
    return _svg(width, height, "".join(marks), "lag per split") + \
        f'<div class="legend">{"".join(keys)}</div>'
