"""``report.html``: the header over the output notebook rendered by nbconvert, written atomically.

The notebook is rendered with its HTML sanitized (nbconvert's ``sanitize_html``: a job's ``<script>`` output
is shown as text), without the cells jupyter-promote or papermill injected (found by their tags, as
:mod:`jupyter_promote.job.cells` names them). The server serves the file under a sandboxing
Content-Security-Policy besides (``GET jobs/{id}/report``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..job.cells import injected
from .header import esc, header

if TYPE_CHECKING:
    from ..events import JobView
    from ..models import JobRecord
    from ..rundir import RunDir

log = logging.getLogger("jupyter_promote")

REPORT_FILE = "report.html"  # RunDir.report
#: nbconvert's own ``<body ...>`` tag, after which the header goes (the template's, before any cell).
_BODY = re.compile(r"<body\b[^>]*>", re.IGNORECASE)


def report_path(run_dir: str | os.PathLike[str]) -> Path:
    """Where a run directory's report is (whether or not it is there yet)."""
    from ..rundir import RunDir

    return Path(RunDir(run_dir).report)


def write_report(run: RunDir, record: JobRecord | None = None, view: JobView | None = None) -> Path | None:
    """Write ``report.html`` into ``run`` for a job in its final state; its path, or None when it could not be
    written (logged: a report never changes how a job ended).

    ``record`` and ``view`` are the caller's when it has them; job.json and the job's events are read
    otherwise (job.json first: it has the job's parity).
    """
    try:
        facts = _facts(run, record, view)
        page = _page(run, facts)
        return _write_atomically(Path(run.report), page)
    except Exception:
        log.exception("jupyter-promote: job in %s: its report could not be written", run.path)
        return None


def _facts(run: RunDir, record: JobRecord | None, view: JobView | None) -> dict[str, Any]:
    from ..analysis import drift
    from ..analysis.parity import PARITY_FILE
    from ..freeze import environment_card, read_lock

    try:  # job.json as the job left it (its parity); else a copy of the caller's record
        record = run.read()
    except Exception:
        if record is None:
            raise
        record = type(record).from_json(record.to_json())
    if view is None:
        from ..events import JobView
        from ..events.authority import job_events

        view = JobView().fold(job_events(run.path))
    if view.seq:
        view.update(record)
    try:
        parity: dict[str, Any] | None = json.loads((run.path / PARITY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        parity = None
    lock = read_lock(run.env_dir)
    return {
        "record": record.to_json(),
        "alerts": list(view.alerts),
        "parity": parity if isinstance(parity, dict) else None,
        "card": environment_card(lock) if lock else None,
        # only a scheduled job is judged against its schedule's runs (a drift.json beside another job's is not ours)
        "drift": drift.read(run.path) if record.schedule else None,
    }


def _page(run: RunDir, facts: dict[str, Any]) -> str:
    """The whole document: nbconvert's page with the header first in its body; or, when the notebook cannot
    be rendered, a page of the header alone that says why."""
    record = facts["record"]
    title = f"jupyter-promote report: job {record.get('id', '?')}"
    if not run.output_notebook.is_file():
        note = "The job left no output notebook (it ended before its notebook ran)."
        return _plain(title, header(**facts, note=note))
    try:
        body = _notebook_html(run.output_notebook, title)
    except Exception as exc:
        log.warning("jupyter-promote: %s: could not be rendered: %s: %s", run.output_notebook, type(exc).__name__, exc)
        why = (str(exc).splitlines() or [""])[0][:300]
        note = f"The output notebook could not be rendered ({type(exc).__name__}: {why}); it is {run.output_notebook}."
        return _plain(title, header(**facts, note=note))
    match = _BODY.search(body)
    if match is None:  # not nbconvert's page as known: the header above it, in a page of its own
        return _plain(title, header(**facts) + body)
    return body[: match.end()] + "\n" + header(**facts) + "\n" + body[match.end() :]


def _notebook_html(path: Path, title: str) -> str:
    """The output notebook as nbconvert's HTML page, its outputs sanitized, its injected cells left out."""
    with _without_uri_grammars():
        import nbformat
        from nbconvert import HTMLExporter

    nb = nbformat.read(str(path), as_version=4)  # type: ignore[no-untyped-call, unused-ignore]  # untyped
    nb.cells = [cell for cell in nb.cells if not injected(cell)]
    nb.metadata["title"] = title  # never the notebook's own: the page's <title> is ours
    exporter = HTMLExporter()  # type: ignore[no-untyped-call, unused-ignore]  # nbconvert ships no types
    exporter.sanitize_html = True
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return str(body)


@contextlib.contextmanager
def _without_uri_grammars() -> Iterator[None]:
    """nbconvert imports nbformat, and nbformat jsonschema, whose format checkers import ``rfc3987_syntax``:
    it compiles some forty grammars at import, about 2 s of a 2.5 s report here (a job's end waits for it).
    A report validates no URI: in a process that has not imported jsonschema yet (the CLI), that module is
    left out while nbconvert loads, and the ``iri``/``uri`` formats go unchecked, as jsonschema does when
    it is not installed. A process that already has jsonschema (the server) is left as it is."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        yield
        return
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        yield
    finally:
        del sys.modules["rfc3987_syntax"]


def _plain(title: str, content: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{esc(title)}</title>\n</head>\n'
        f"<body>\n{content}\n</body>\n</html>\n"
    )


def _write_atomically(path: Path, text: str) -> Path:
    """``path`` replaced by ``text`` at once: a reader sees the old report or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
