"""Each finished job as an MLflow run: its parameters, its reported and step metrics, its lock and parity
report as artifacts, its tags; a sweep's jobs as the children of one parent run.

Configured by a tracking URI (``c.MlflowExport.tracking_uri``); ``mlflow`` is imported only then, and only in
the exporting thread. Export runs off the job's path: a failure is logged, retried, recorded in the run
directory's ``mlflow.jsonl``, and never changes the job's outcome.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from traitlets import Float, Int, Unicode
from traitlets.config import Configurable

from ..background import Retrying
from ..redact import redact_text, redact_url
from ..runtime.events import read_events

log = logging.getLogger("jupyter_promote")

STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
ARTIFACTS = ("env/promote.lock.json", "parity.txt", "parity.json", "observed_env.json")


class MlflowExport(Configurable):
    """Export of finished jobs to an MLflow tracking server (``pip install "jupyter_promote[mlflow]"``)."""

    tracking_uri = Unicode("", help="MLflow tracking URI, e.g. http://mlflow.example.org:5000; empty: no export.").tag(
        config=True
    )
    experiment = Unicode("jupyter-promote", help="The MLflow experiment the runs go into (made when missing).").tag(
        config=True
    )
    retries = Int(3, help="Attempts after the first when the tracking server fails.").tag(config=True)
    retry_delay_s = Float(2.0, help="Seconds before the first retry; doubled each time.").tag(config=True)


class MlflowExporter:
    """One per door: exports finished jobs in one background thread, in the order they end."""

    def __init__(self, settings: MlflowExport) -> None:
        self.settings = settings
        self._work: Retrying[tuple[dict[str, Any], str]] = Retrying(
            "mlflow", self._attempt, self._outcome, settings.retries, settings.retry_delay_s
        )
        self._run_ids: dict[str, str] = {}  # job id -> its MLflow run, once exported

    @property
    def enabled(self) -> bool:
        return bool(self.settings.tracking_uri)

    def alert(self, job: dict[str, Any], alert: dict[str, Any], run_dir: str | None) -> None:
        """Alerts reach MLflow with the job's events when it ends."""

    def finished(self, job: dict[str, Any], run_dir: str | None) -> None:
        if self.enabled and run_dir:
            self._work.put((job, run_dir))

    def close(self, timeout: float = 60.0) -> None:
        self._work.close(timeout)

    def _attempt(self, item: tuple[dict[str, Any], str]) -> None:
        job, run_dir = item
        self._run_ids[str(job.get("id"))] = export(self.settings, job, Path(run_dir))

    def _outcome(self, item: tuple[dict[str, Any], str], attempt: int, error: str | None, last: bool) -> None:
        job, run_dir = item
        uri = self.settings.tracking_uri
        if error is None:
            run_id = self._run_ids.pop(str(job.get("id")), None)
            _record(run_dir, {"ok": True, "attempt": attempt, "run_id": run_id, "tracking_uri": redact_url(uri)})
            return
        error = redact_text(error, [uri])  # MLflow's messages quote the URI, credentials and all
        giving_up = ", giving up" if last else ""
        message = "jupyter-promote: exporting job %s to MLflow failed (attempt %d%s): %s"
        log.warning(message, job.get("id"), attempt, giving_up, error)
        _record(run_dir, {"ok": False, "attempt": attempt, "error": error, "tracking_uri": redact_url(uri)})


def export(settings: MlflowExport, job: dict[str, Any], run_dir: Path) -> str:
    """One job as one MLflow run (under its sweep's parent run); returns the run's id."""
    # the exporter retries on its own terms: MLflow's client would otherwise retry each call for minutes
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "15")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # stdout is the CLI's (--json)
    from mlflow.entities import Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=settings.tracking_uri)
    experiment = client.get_experiment_by_name(settings.experiment)
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(settings.experiment)
    tags = _tags(job)
    sweep = job.get("sweep") or {}
    if sweep.get("id"):
        tags["mlflow.parentRunId"] = _parent_run(client, experiment_id, sweep["id"], job)
    stem = Path(str(job.get("notebook", "job"))).stem
    started = int(1000 * (job.get("started_at") or job.get("created_at") or time.time()))
    run = client.create_run(experiment_id, start_time=started, tags=tags, run_name=f"{stem}-{job['id']}")
    run_id = run.info.run_id
    params = [Param(str(k)[:250], _text(v)[:6000]) for k, v in (job.get("parameters") or {}).items()]
    metrics = _metrics(job, run_dir)
    for i in range(0, max(len(params), len(metrics), 1), 500):  # MLflow takes at most 1000 items per batch
        client.log_batch(
            run_id,
            metrics=metrics[i : i + 500],
            params=params[i : i + 100] if i == 0 else [],
            tags=[RunTag(k, v) for k, v in tags.items()] if i == 0 else [],
        )
    if len(params) > 100:
        for j in range(100, len(params), 100):
            client.log_batch(run_id, params=params[j : j + 100])
    for name in ARTIFACTS:
        path = run_dir / name
        if path.is_file():
            client.log_artifact(run_id, str(path), artifact_path=str(Path(name).parent) if "/" in name else None)
    ended = int(1000 * (job.get("finished_at") or time.time()))
    client.set_terminated(run_id, status=STATUS.get(str(job.get("state")), "FAILED"), end_time=ended)
    return str(run_id)


def _tags(job: dict[str, Any]) -> dict[str, str]:
    image = job.get("image") or {}
    tags = {
        "promote.job_id": str(job.get("id")),
        "promote.notebook": str(job.get("notebook")),
        "promote.target": str(job.get("target")),
        "promote.state": str(job.get("state")),
        "promote.kernel": str(job.get("kernel")),
        "promote.lock_hash": str(job.get("lock_hash") or ""),
        "mlflow.source.name": str(job.get("notebook")),
        "mlflow.source.type": "NOTEBOOK",
    }
    if job.get("reason"):
        tags["promote.reason"] = str(job["reason"])
    if image.get("digest") or image.get("tag"):
        tags["promote.image"] = str(image.get("digest") or image.get("tag"))
    parity = job.get("parity") or {}
    if parity.get("verdict"):
        tags["promote.parity"] = str(parity["verdict"])
    return tags


def _parent_run(client: Any, experiment_id: str, sweep_id: str, job: dict[str, Any]) -> str:
    """The sweep's parent run: found by its tag, or made (two jobs ending at once may race: the older wins)."""
    query = f"tags.`promote.sweep_id` = '{sweep_id}' and tags.`promote.kind` = 'sweep'"
    found = client.search_runs([experiment_id], filter_string=query, order_by=["attributes.start_time ASC"])
    if found:
        return str(found[0].info.run_id)
    stem = Path(str(job.get("notebook", "sweep"))).stem
    run = client.create_run(
        experiment_id,
        run_name=f"{stem}-sweep-{sweep_id}",
        tags={"promote.sweep_id": sweep_id, "promote.kind": "sweep", "promote.notebook": str(job.get("notebook"))},
    )
    found = client.search_runs([experiment_id], filter_string=query, order_by=["attributes.start_time ASC"])
    return str(found[0].info.run_id if found else run.info.run_id)


def _metrics(job: dict[str, Any], run_dir: Path) -> list[Any]:
    """Reported metrics (each report a step) and the monitor's steps/s at each optimizer step count."""
    from mlflow.entities import Metric

    out = []
    reports = 0
    for event in read_events(str(run_dir / "events.jsonl")):
        ts = int(1000 * event.get("ts", time.time()))
        if event.get("type") == "metric":
            for name, value in (event.get("metrics") or {}).items():
                number = _number(value)
                if number is not None:
                    out.append(Metric(str(name)[:250], number, ts, reports))
            reports += 1
        elif event.get("type") == "step" and event.get("steps_per_s") is not None:
            out.append(Metric("promote.steps_per_s", float(event["steps_per_s"]), ts, int(event.get("steps", 0))))
    return out


def _number(value: Any) -> float | None:
    """A metric value as MLflow takes it (NaN and Inf too: ``promote.report`` records them as strings)."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        return float(value)
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _record(run_dir: str, line: dict[str, Any]) -> None:
    try:
        with open(Path(run_dir) / "mlflow.jsonl", "a") as f:
            f.write(json.dumps({"ts": round(time.time(), 3), **line}) + "\n")
    except OSError as exc:
        log.warning("jupyter-promote: could not record the MLflow export in %s: %s", run_dir, exc)
