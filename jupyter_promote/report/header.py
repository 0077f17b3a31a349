"""The report's header: the facts of a finished job as HTML, every value escaped (job output is data)."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable
from typing import Any

#: The header's own look: scoped to its class so nbconvert's styles and its own never meet.
STYLE = """
.jp-Promote-report{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;
 background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;margin:16px;padding:12px 16px}
.jp-Promote-report h1{font-size:20px;margin:0 0 8px}
.jp-Promote-report h2{font-size:15px;margin:14px 0 4px}
.jp-Promote-report table{border-collapse:collapse;margin:2px 0}
.jp-Promote-report th,.jp-Promote-report td{text-align:left;padding:2px 10px 2px 0;vertical-align:top}
.jp-Promote-report .state-succeeded,.jp-Promote-report .ok{color:#1a7f37}
.jp-Promote-report .state-failed,.jp-Promote-report .fail{color:#cf222e}
.jp-Promote-report .state-cancelled{color:#6e7781}
.jp-Promote-report code{font-family:ui-monospace,monospace;font-size:13px}
.jp-Promote-report .note{color:#6e7781}
"""


def esc(value: Any) -> str:
    """``value`` as HTML text: ``<script>`` is shown, never run."""
    return html.escape(str(value), quote=True)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ts)) if ts else "-"


def _show(value: Any) -> str:
    """A metric as ``parity.txt`` shows it."""
    return "-" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))


def _rows(pairs: Iterable[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    return f"<table>{body}</table>"


def _verdict(parity: dict[str, Any] | None, summary: dict[str, Any] | None) -> str:
    """The parity table (``parity.json``), as ``jupyter promote run`` prints it; else what the record says."""
    if parity is None:
        verdict = (summary or {}).get("verdict")
        if not verdict:
            return '<p class="note">not judged (only a succeeded job is compared with its notebook\'s baseline)</p>'
        failed = ", ".join((summary or {}).get("failed") or [])
        return f"<p>{esc(str(verdict).upper())}" + (f": failed {esc(failed)}" if failed else "") + "</p>"
    verdict = str(parity.get("verdict", "?"))
    css = "ok" if verdict == "pass" else "fail" if verdict in ("fail", "error") else "note"
    parts = [f'<p class="{css}"><b>{esc(verdict.upper())}</b>']
    if parity.get("error"):
        parts.append(f": {esc(parity['error'])}")
    parts.append("</p>")
    rows = parity.get("metrics") or []
    if rows:
        head = "<tr><th>metric</th><th>baseline</th><th>job</th><th>tolerance</th><th></th></tr>"
        body = ""
        for row in rows:
            ok = bool(row.get("ok"))
            if row.get("within_seed_band"):
                said = f"ok: beyond {row.get('tolerance')}, within the seed-variance band"
            else:
                said = "ok" if ok else f"FAIL: {row.get('problem', '')}"
            cells = (row.get("metric"), _show(row.get("baseline")), _show(row.get("job")), row.get("tolerance"))
            body += (
                "<tr>"
                + "".join(f"<td>{esc(c)}</td>" for c in cells)
                + f'<td class="{"ok" if ok else "fail"}">{esc(said)}</td></tr>'
            )
        parts.append(f"<table>{head}{body}</table>")
    if parity.get("not_in_baseline"):
        parts.append(f"<p>reported by the job only: {esc(', '.join(map(str, parity['not_in_baseline'])))}</p>")
    return "".join(parts)


def _environment(record: dict[str, Any], card: dict[str, Any] | None) -> str:
    pairs: list[tuple[str, Any]] = []
    if card:
        pairs.append(("python", card.get("python") or "?"))
        pairs.append(("packages", card.get("packages", 0)))
        if card.get("torch"):
            pairs.append(("torch", f"{card['torch']}" + (f" (CUDA {card['cuda']})" if card.get("cuda") else "")))
        key = card.get("key_packages") or {}
        if key:
            pairs.append(("key packages", ", ".join(f"{name} {version}" for name, version in key.items())))
        if card.get("gpu"):
            pairs.append(("gpu", card["gpu"]))
    if record.get("lock_hash"):
        pairs.append(("lock", record["lock_hash"]))
    image = record.get("image") or {}
    if image.get("ref"):
        pairs.append(("image", image["ref"] + (f" ({image['digest']})" if image.get("digest") else "")))
    for name, value in sorted((record.get("env") or {}).items()):
        pairs.append((f"${name}", value))
    return _rows(pairs) if pairs else '<p class="note">no environment lock in the run directory</p>'


def header(
    record: dict[str, Any],
    alerts: list[dict[str, Any]],
    parity: dict[str, Any] | None,
    card: dict[str, Any] | None,
    note: str | None = None,
    drift: dict[str, Any] | None = None,
) -> str:
    """The header of a job's report, a ``<section>`` with its own style.

    Parameters
    ----------
    record
        The job's record as job.json holds it (its final state).
    alerts
        The job's alerts, as its events say (``kind``, ``message``).
    parity
        ``parity.json`` of the run directory, or None when the job was not judged.
    card
        The environment lock's card (:func:`jupyter_promote.freeze.environment_card`), or None.
    note
        Said under the header: why the notebook is not shown below (none: it is).
    drift
        ``drift.json`` of the run directory (a scheduled job against its schedule's runs), or None.
    """
    from .drift import drift_section

    state = str(record.get("state", "?"))
    how = state + (f" ({record['reason']})" if record.get("reason") else "")
    started, finished = record.get("started_at"), record.get("finished_at")
    duration = f"{finished - started:.1f} s" if started and finished else "-"
    facts = [
        ("job", record.get("id", "?")),
        ("notebook", record.get("notebook", "?")),
        ("target", record.get("target", "?")),
        ("kernel", record.get("kernel", "?")),
        ("owner", record.get("owner") or "-"),
    ]
    if (record.get("attempt") or 1) > 1:
        facts.append(("attempt", record["attempt"]))
    metrics = record.get("metrics") or {}
    parameters = record.get("parameters") or {}
    parts = [
        f"<style>{STYLE}</style>",
        '<section class="jp-Promote-report" id="jp-Promote-report">',
        f'<h1>Job {esc(record.get("id", "?"))}: <span class="state-{esc(state)}">{esc(how)}</span></h1>',
    ]
    if record.get("message"):
        parts.append(f"<p>{esc(record['message'])}</p>")
    parts += [_rows(facts), "<h2>Verdict</h2>", _verdict(parity, record.get("parity"))]
    try:  # drift.json is read as found: a field of an unexpected kind costs the section, never the report
        parts.append(drift_section(drift))
    except (TypeError, ValueError, KeyError, AttributeError):
        parts.append('<h2>Drift against the schedule\'s runs</h2><p class="note">drift.json could not be read</p>')
    parts.append("<h2>Alerts</h2>")
    if alerts:
        items = "".join(f"<li><b>{esc(a.get('kind', '?'))}</b>: {esc(a.get('message', ''))}</li>" for a in alerts)
        parts.append(f"<ul>{items}</ul>")
    else:
        parts.append('<p class="note">none</p>')
    if metrics:
        parts += ["<h2>Metrics</h2>", _rows((k, _show(v)) for k, v in metrics.items())]
    parts.append("<h2>Parameters</h2>")
    if parameters:
        parts.append(_rows((k, json.dumps(v, default=str)) for k, v in parameters.items()))
    else:
        parts.append('<p class="note">none (the notebook\'s own values)</p>')
    parts += ["<h2>Environment</h2>", _environment(record, card)]
    times = [
        ("submitted", _when(record.get("created_at"))),
        ("started", _when(started)),
        ("ended", _when(finished)),
        ("duration", duration),
    ]
    parts += ["<h2>Timings</h2>", _rows(times)]
    if note:
        parts.append(f'<h2>Notebook</h2><p class="fail">{esc(note)}</p>')
    parts.append("</section>")
    return "\n".join(parts)
