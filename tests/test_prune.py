"""``jupyter promote prune``: finished jobs older than an age go, with their run directories; a running job never."""

from __future__ import annotations

import json
import os
import time

from conftest import NOTEBOOKS, job, wait_for


def age(run, days: float) -> None:
    """Make a finished job look as if it ran ``days`` earlier: its record's times and its events' shifted back."""
    shift = days * 86400
    record = job(run)
    for key in ("created_at", "started_at", "finished_at", "updated_at"):
        if record.get(key):
            record[key] -= shift
    (run / "job.json").write_text(json.dumps(record))
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    (run / "events.jsonl").write_text("".join(json.dumps({**e, "ts": e["ts"] - shift}) + "\n" for e in events))


def test_prune_removes_old_finished_jobs_keeps_recent_and_running_ones(cli):
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    assert cli("run", str(NOTEBOOKS / "failing.ipynb")).returncode == 1
    old_ok, old_failed = sorted(cli.runs.iterdir(), key=lambda p: job(p)["state"], reverse=True)
    age(old_ok, 40)
    age(old_failed, 40)
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    recent = next(p for p in cli.runs.iterdir() if p not in (old_ok, old_failed))
    running = cli.popen("run", str(NOTEBOOKS / "hang.ipynb"), "--stall-timeout", "600")
    try:
        hang = wait_for(lambda: next((p for p in cli.runs.iterdir() if "hang" in p.name and job(p)["state"] == "running"), None),
                        120, "the hanging job to run")  # fmt: skip
        record = job(hang)
        record["created_at"] = time.time() - 90 * 86400  # however old, it has not ended
        (hang / "job.json").write_text(json.dumps(record))

        dry = cli("prune", "--older-than", "30d", "--state", "failed", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert f"would remove {job(old_failed)['id']}" in dry.stdout and job(old_ok)["id"] not in dry.stdout
        assert old_failed.exists()  # a dry run removes nothing

        result = cli("prune", "--older-than", "30d")
        assert result.returncode == 0, result.stderr
        assert not old_ok.exists() and not old_failed.exists()
        assert recent.exists() and hang.exists()
        assert "removed 2 job(s)" in result.stdout
        assert not [p for p in os.listdir(cli.runs) if p.startswith(".pruned-")]
    finally:
        running.terminate()
        running.communicate(timeout=60)


def test_prune_refuses_a_bad_age_with_one_line(cli):
    result = cli("prune", "--older-than", "a month")
    assert result.returncode == 2
    assert result.stderr.strip() == "jupyter promote: error: --older-than 'a month': not an age (use e.g. 30d, 12h, 2w)"
