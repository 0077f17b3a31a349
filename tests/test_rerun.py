"""A rerun is the same request, field for field: what job.json records is all a rerun has."""

from __future__ import annotations

import dataclasses

from conftest import NOTEBOOKS

from jupyter_promote.launch.body import rerun_request
from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import PromoteRequest
from jupyter_promote.models import JobRecord, MonitorSettings, Resources

#: What each run gets anew (its directory and id), or the target's configuration chooses (the image options).
PER_RUN = {"out", "job_id", "image", "sweep"}


def test_a_rerun_asks_for_what_the_job_asked_for_field_for_field(tmp_path):
    # Given a job prepared from a request whose every field differs from its default
    original = PromoteRequest(
        notebook=str(NOTEBOOKS / "success.ipynb"),
        target="local",
        parameters={"a": 3, "name": "x"},
        resources=Resources.parse(cpus=2, memory="1G", time="10m"),
        monitor=MonitorSettings(stall_timeout_s=30.0, nan_action="alert"),
        deterministic=True,
        out=str(tmp_path / "run"),
        kernel="python3",
        notify=["team"],
        owner="alice",
    )
    prepared = Pipeline(str(tmp_path / "runs")).prepare(original)
    # When it is asked for again from its job.json alone
    again = rerun_request(prepared.run.read(), owner="alice")
    # Then every field a person chose is the same; only what each run gets anew differs
    for field in dataclasses.fields(PromoteRequest):
        if field.name not in PER_RUN:
            assert getattr(again, field.name) == getattr(original, field.name), field.name
    assert prepared.run.read().deterministic is True


def test_a_job_json_written_before_deterministic_was_recorded_still_reads():
    # Given job.json as older versions wrote it (no deterministic field)
    old = {"id": "abc", "notebook": "/nb.ipynb", "target": "local", "kernel": "python3", "state": "succeeded"}
    # When it is read, Then it reads as not deterministic
    assert JobRecord.from_json(old).deterministic is False
