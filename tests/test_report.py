"""report.html: every finished job's report, for real: notebooks run by papermill on the local target, the
report written as they end, served by a real Jupyter server under a sandbox."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import CLI, NOTEBOOKS
from tornado.httpclient import HTTPClientError

from jupyter_promote.job.cells import injected
from jupyter_promote.models import JobRecord
from jupyter_promote.report import write_report
from jupyter_promote.rundir import RunDir
from jupyter_promote.runtime.report import REPORT_MIMETYPE
from jupyter_promote.server.store import JobStore

KERNEL = json.loads((NOTEBOOKS / "success.ipynb").read_text())["metadata"]
SCRIPT = "<script>alert(1)</script>"


def code(source: str, tags: list[str] | None = None, outputs: list[dict] | None = None) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": tags or []},
        "outputs": outputs or [],
        "source": source,
    }


def write_notebook(path: Path, *cells: dict) -> Path:
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"
    path.write_text(json.dumps({"cells": list(cells), "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}))
    return path


def header_of(page: str) -> str:
    """The report's header: from its section's start to its end."""
    start = page.index('id="jp-Promote-report"')
    return page[start : page.index("</section>", start)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two real jobs: one that succeeds (parity judged against a saved baseline, an alert, a parameter,
    output that looks like HTML) and one that fails in a cell."""
    tmp = tmp_path_factory.mktemp("report")
    baseline = {"output_type": "display_data", "metadata": {}, "data": {REPORT_MIMETYPE: {"metrics": {"b": 2, "c": 4}}}}
    good = write_notebook(
        tmp / "good.ipynb",
        code("lr = 0.1", tags=["parameters"]),
        code("lr = 0.2"),  # assigns the parameter again: a parameter_overridden alert
        code(f"print({SCRIPT!r} + '</html>')"),
        code(f"from IPython.display import HTML\nHTML({SCRIPT!r} + '<b>bold</b>')"),
        code("import jupyter_promote as promote\npromote.report(b=2, c=3)", outputs=[baseline]),
    )
    bad = write_notebook(tmp / "bad.ipynb", code("print('before')"), code(f"raise ValueError({SCRIPT!r})"))
    cli = CLI(tmp)
    good_run = cli("run", str(good), "--target", "local", "-p", "lr", "0.3")
    assert good_run.returncode == 3, good_run.stderr  # succeeded, parity failed (c)
    first = next(cli.runs.iterdir())
    bad_run = cli("run", str(bad), "--target", "local")
    assert bad_run.returncode == 1, bad_run.stderr
    second = next(p for p in cli.runs.iterdir() if p != first)
    return {"cli": cli, "good": first, "bad": second, "good_stderr": good_run.stderr}


def test_a_succeeded_job_gets_a_report_without_its_injected_cells(runs):
    # Given a job that succeeded, When its report is read
    run = runs["good"]
    page = (run / "report.html").read_text()
    output = json.loads((run / "output.ipynb").read_text())
    # Then the notebook's own cells are in it and the cells jupyter-promote and papermill injected are not
    own = [cell for cell in output["cells"] if not injected(cell)]
    assert len(own) < len(output["cells"])  # the job notebook had injected cells (setup, parameters, finish)
    assert len(re.findall(r'<div class="jp-Cell ', page)) == len(own)
    assert "# Parameters" not in page and "jupyter_promote.runtime" not in page
    assert "report: " + str(run / "report.html") in runs["good_stderr"]  # the run's last lines name it


def test_the_header_states_verdict_alerts_parameters_environment_and_timings(runs):
    record = json.loads((runs["good"] / "job.json").read_text())
    head = header_of((runs["good"] / "report.html").read_text())
    assert f"Job {record['id']}" in head and "succeeded" in head and "local" in head
    # the verdict per metric: baseline, job, tolerance
    assert "<b>FAIL</b>" in head
    assert "<td>b</td><td>2</td><td>2</td><td>exact</td>" in head
    assert "<td>c</td><td>4</td><td>3</td><td>exact</td>" in head and "FAIL: differs by -1" in head
    assert "<b>parameter_overridden</b>" in head and "lr" in head
    assert "<tr><th>lr</th><td>0.3</td></tr>" in head
    assert "<th>python</th>" in head and "<th>packages</th>" in head and record["lock_hash"] in head
    for fact in ("submitted", "started", "ended", "duration"):
        assert f"<th>{fact}</th>" in head


def test_job_output_that_looks_like_html_never_runs(runs):
    # Given jobs that printed a <script> and </html>, one whose error message is one
    for name in ("good", "bad"):
        page = (runs[name] / "report.html").read_text()
        # Then no live script tag of theirs is in the page, and the header has no script at all
        assert SCRIPT not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<script" not in header_of(page).lower()
        assert page.rstrip().endswith("</html>") and page.count("</html>") == 1


def test_a_failed_job_gets_a_report_that_says_how_it_failed(runs):
    run = runs["bad"]
    head = header_of((run / "report.html").read_text())
    assert "failed (error)" in head and "ValueError" in head
    assert "not judged" in head
    # status lists it
    cli: CLI = runs["cli"]  # type: ignore[assignment]
    record = json.loads((run / "job.json").read_text())
    status = cli("status", record["id"])
    assert status.returncode == 0, status.stderr
    assert f"  report:   {run / 'report.html'}" in status.stdout.splitlines()


def test_a_job_that_ended_unfollowed_gets_its_report_from_status(runs, tmp_path):
    # Given a job that ended with no one following it (detached): job.json still says running, no report yet
    copy = tmp_path / "detached"
    shutil.copytree(runs["bad"], copy)
    (copy / "report.html").unlink()
    record = json.loads((copy / "job.json").read_text())
    (copy / "job.json").write_text(json.dumps({**record, "state": "running", "reason": None, "finished_at": None}))
    # When `status` looks at it
    cli: CLI = runs["cli"]  # type: ignore[assignment]
    status = cli("status", str(copy))
    # Then it is settled as its events say, and its report is written and listed
    assert status.returncode == 0, status.stderr
    assert json.loads((copy / "job.json").read_text())["state"] == "failed"
    assert "failed (error)" in header_of((copy / "report.html").read_text())
    assert f"  report:   {copy / 'report.html'}" in status.stdout.splitlines()


def test_a_missing_or_unreadable_output_notebook_still_gets_a_report(runs, tmp_path):
    # Given copies of a finished run: one without its output notebook, one with a torn one
    for damage in ("missing", "torn"):
        copy = tmp_path / damage
        shutil.copytree(runs["good"], copy)
        (copy / "report.html").unlink()
        if damage == "missing":
            (copy / "output.ipynb").unlink()
        else:
            (copy / "output.ipynb").write_text('{"cells": [')
        # When its report is written
        path = write_report(RunDir(copy))
        # Then the report says why the notebook is not in it, with the header as ever
        head = header_of(path.read_text())
        assert "<b>FAIL</b>" in head
        said = "left no output notebook" if damage == "missing" else "could not be rendered"
        assert said in head


def test_a_run_directory_that_cannot_be_written_is_logged_not_raised(tmp_path, caplog):
    record = JobRecord(id="0123456789ab", notebook="nb.ipynb", target="local", kernel="python3")
    assert write_report(RunDir(tmp_path / "gone"), record) is None
    assert "report could not be written" in caplog.text


# ---- the route -----------------------------------------------------------------------------------------
@pytest.fixture
def jp_server_config(runs, tmp_path, monkeypatch):
    store_path = str(tmp_path / "store" / "jobs.sqlite")
    store = JobStore(store_path)
    for name in ("good", "bad"):
        run = RunDir(runs[name])
        store.put_job(run.read(), str(run.path))
    store.close()
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": store_path},
    }


async def test_the_route_serves_the_report_in_a_sandbox(jp_fetch, runs):
    record = json.loads((runs["good"] / "job.json").read_text())
    response = await jp_fetch("jupyter-promote", "jobs", record["id"], "report")
    assert response.code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    policy = response.headers["Content-Security-Policy"]
    assert policy.startswith("sandbox;") and "default-src 'none'" in policy and "script-src" not in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Disposition"].startswith("inline;")
    assert response.body == (runs["good"] / "report.html").read_bytes()
    saved = await jp_fetch("jupyter-promote", "jobs", record["id"], "report", params={"download": "1"})
    assert saved.headers["Content-Disposition"] == f'attachment; filename="report-{record["id"]}.html"'


@pytest.mark.parametrize(
    ("job", "params", "status", "said"),
    [
        ("0123456789ab", {}, 404, "job 0123456789ab: no such job"),
        ("good", {"download": "yes"}, 400, "download: 'yes' is not 1, true, 0 or false"),
    ],
)
async def test_the_route_refuses_in_one_line(jp_fetch, runs, job, params, status, said):
    job_id = json.loads((runs[job] / "job.json").read_text())["id"] if job in runs else job
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("jupyter-promote", "jobs", job_id, "report", params=params)
    assert info.value.code == status
    body = json.loads(info.value.response.body)
    assert body["message"] == said and "\n" not in body["message"]


async def test_a_job_without_a_report_yet_is_404_not_500(jp_fetch, runs):
    # Given a finished job whose report is not there (removed, as for a job from before reports)
    record = json.loads((runs["bad"] / "job.json").read_text())
    kept = (runs["bad"] / "report.html").read_bytes()
    (runs["bad"] / "report.html").unlink()
    try:
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("jupyter-promote", "jobs", record["id"], "report")
    finally:
        (runs["bad"] / "report.html").write_bytes(kept)
    assert info.value.code == 404
    assert json.loads(info.value.response.body)["message"].startswith(f"job {record['id']}: has no report")


def test_a_notification_of_the_end_names_the_report(runs):
    from jupyter_promote.notify.message import Notice

    job = json.loads((runs["bad"] / "job.json").read_text())
    ended = Notice("failed", job, run_dir=str(runs["bad"]))
    alert = Notice("alert", job, alert={"kind": "nan", "message": "loss is NaN"}, run_dir=str(runs["bad"]))
    assert f"report: {runs['bad'] / 'report.html'}" in ended.text.splitlines()
    assert "report" not in dict(alert.facts())  # an alert comes while the job runs: no report yet


async def test_the_route_refuses_unauthenticated_requests(jp_fetch, runs):
    record = json.loads((runs["good"] / "job.json").read_text())
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("jupyter-promote", "jobs", record["id"], "report", headers={"Authorization": ""})
    assert info.value.code in (401, 403)
