"""The report's "Drift against the schedule's runs" section: each metric's verdict (``drift.json``) with a
sparkline of its value over the schedule's runs, this run the last point, highlighted. Inline SVG built as
text (no script): the report stays one file that opens anywhere, under the server's sandbox too."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..analysis.drift import environment_changes, show

WIDTH, HEIGHT, PAD = 160, 32, 4
_LINE, _POINT, _MEDIAN, _OK, _DRIFTED = "#57606a", "#8c959f", "#d0d7de", "#1a7f37", "#cf222e"


def esc(value: Any) -> str:
    """``value`` as HTML text (the header's rule: job output is data)."""
    return html.escape(str(value), quote=True)


def sparkline(history: Sequence[float], value: float, median: float | None = None, drifted: bool = False) -> str:
    """An SVG line of ``history`` then ``value`` (oldest first), the last point larger and coloured (red when
    it drifted), the median a dashed line; its title says what it shows."""
    values = [float(v) for v in history] + [float(value)]
    low, high = min(values), max(values)
    if median is not None:
        low, high = min(low, median), max(high, median)
    span = high - low

    def y(v: float) -> float:
        return HEIGHT / 2 if span == 0 else PAD + (high - v) / span * (HEIGHT - 2 * PAD)

    step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
    points = [(PAD + i * step, y(v)) for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{py:.1f}" for x, py in points)
    title = f"{len(history)} earlier runs, then this run: {show(float(value))}" + (
        f" (median {show(median)})" if median is not None else ""
    )
    parts = [
        f'<svg class="jp-Promote-sparkline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{esc(title)}"><title>{esc(title)}</title>'
    ]
    if median is not None:
        parts.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(median):.1f}" y2="{y(median):.1f}" '
            f'stroke="{_MEDIAN}" stroke-dasharray="3 2"/>'
        )
    parts.append(f'<polyline points="{path}" fill="none" stroke="{_LINE}" stroke-width="1.2"/>')
    parts += [f'<circle cx="{x:.1f}" cy="{py:.1f}" r="1.6" fill="{_POINT}"/>' for x, py in points[:-1]]
    x, py = points[-1]
    colour = _DRIFTED if drifted else _OK
    parts.append(f'<circle class="this-run" cx="{x:.1f}" cy="{py:.1f}" r="3.2" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)


def drift_section(drift: dict[str, Any] | None) -> str:
    """The section (empty when the job was not judged against a schedule's runs)."""
    if not drift:
        return ""
    verdict = str(drift.get("verdict", "?"))
    css = "fail" if verdict == "drift" else "ok" if verdict == "steady" else "note"
    parts = [
        "<h2>Drift against the schedule's runs</h2>",
        f'<p class="{css}"><b>{esc(verdict.upper())}</b> '
        f'<span class="note">(the last {esc(drift.get("runs", 0))} succeeded runs of schedule '
        f"{esc(drift.get('schedule', '?'))}; robust z beyond {esc(drift.get('threshold'))} is drift)</span></p>",
    ]
    body = ""
    for row in drift.get("metrics") or []:
        if row.get("basis") == "history":
            said, chart = str(row.get("problem") or ""), ""
        else:
            z = f"robust z {row['z']:.1f}" if row.get("z") is not None else f"{row.get('basis')}: no spread before"
            said = ("DRIFTED" if row.get("drifted") else "ok") + f" ({z})"
            chart = sparkline(row.get("history") or [], row["value"], row.get("median"), bool(row.get("drifted")))
        cells = (row.get("metric"), show(row.get("value")), show(row.get("median")))
        css = "fail" if row.get("drifted") else "ok" if row.get("basis") != "history" else "note"
        body += (
            "<tr>"
            + "".join(f"<td>{esc(c)}</td>" for c in cells)
            + f'<td class="{css}">{esc(said)}</td><td>{chart}</td></tr>'
        )
    if body:
        head = "<tr><th>metric</th><th>this run</th><th>median</th><th>verdict</th><th>over the runs</th></tr>"
        parts.append(f"<table>{head}{body}</table>")
    env = drift.get("environment")
    if env:
        if env.get("drifted"):
            parts.append(
                f'<p class="fail">environment: changed since {esc(env.get("against"))}: '
                f"{esc(environment_changes(env))}</p>"
            )
        else:
            said = env.get("problem") or f"unchanged since {env.get('against')}"
            parts.append(f'<p class="note">environment: {esc(said)}</p>')
    return "".join(parts)
