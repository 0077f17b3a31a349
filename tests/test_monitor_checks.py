"""Monitor checks as a registry (issue 25, item 3): built-ins, then entry points; settings declared once.

A site's check is one module plus an entry point in the group ``jupyter_promote.monitor_checks``: here a real
distribution (a ``.dist-info`` with ``entry_points.txt``) on the path, found by ``importlib.metadata`` in the
submitter (its setting is accepted by ``--monitor`` and sent to the job) and in the job's kernel (its check
runs there, and fails the job with the reason it declares).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, events, job

from jupyter_promote.models import MONITOR_MINIMUMS, MonitorSettings
from jupyter_promote.runtime.checks import (
    BUILTIN_CHECKS,
    ENTRY_POINT_GROUP,
    UnknownCheckError,
    UnknownSettingError,
    load_checks,
)
from jupyter_promote.runtime.events import EventLog, read_events
from jupyter_promote.runtime.monitor import Monitor
from jupyter_promote.runtime.settings import CoreSettings, declared

LONG_CELL_CHECK = '''
"""A site's check: a cell that runs longer than ``long_cell_s`` fails the job (reason ``long_cell``)."""

import time
from dataclasses import dataclass

from jupyter_promote.runtime.checks import Check
from jupyter_promote.runtime.settings import action, setting


@dataclass(frozen=True)
class LongCellSettings:
    long_cell_s: float = setting(3600.0, minimum=1.0, help="seconds one cell may run")
    long_cell_action: str = action("fail", help="a cell that runs too long: fail the job, or only alert")


class LongCellCheck(Check[LongCellSettings]):
    name = "long_cell"
    kind = "long_cell"
    reason = "long_cell"
    settings_class = LongCellSettings
    action_setting = "long_cell_action"
    fired = False

    def on_tick(self, now):
        running = now - self.monitor.progress_at
        if self.monitor.busy and not self.fired and running > self.settings.long_cell_s:
            self.fired = True
            self.fail_soon(f"a cell ran for {running:.0f} s (limit {self.settings.long_cell_s:g} s)", running_s=running)
'''


def _distribution(root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> Path:
    """An installed distribution on disk: its modules and a dist-info whose entry_points.txt names them."""
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    return root


@pytest.fixture
def site_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A site's checks installed through entry points (one good, one broken), for this process too."""
    root = _distribution(
        tmp_path / "site",
        "site_checks",
        {"long_cell": "site_long_cell:LongCellCheck", "broken": "site_broken:Check"},
        {"site_long_cell": LONG_CELL_CHECK, "site_broken": "raise ImportError('no such GPU library')\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    load_checks.cache_clear()
    yield root
    load_checks.cache_clear()


def test_the_built_in_checks_declare_kind_reason_and_settings_once():
    registry = load_checks()
    names = [c.name for c in registry.checks]
    assert names[: len(BUILTIN_CHECKS)] == ["nan", "stall", "throughput", "gpu_memory", "fragmentation"]
    reasons = {c.name: (c.kind, c.reason) for c in BUILTIN_CHECKS}
    assert reasons["nan"] == ("nan", "nan") and reasons["throughput"] == ("throughput_drop", "throughput")
    assert reasons["stall"] == ("stall", "stall") and reasons["gpu_memory"] == ("memory", None)
    # MonitorSettings is exactly the core's and the checks' declarations: fields, defaults, minimums
    settings = registry.settings()
    fields = {f.name: f.default for f in dataclasses.fields(MonitorSettings)}
    assert fields == {name: each.default for name, each in settings.items()}
    assert {n: s.minimum for n, s in settings.items() if s.minimum is not None} == MONITOR_MINIMUMS
    assert MonitorSettings().stall_timeout_s == 600.0 and MonitorSettings().check_every == 10
    # the bases mypy sees are the built-ins' settings classes, no more, no less
    bases = {b for b in MonitorSettings.__mro__ if dataclasses.is_dataclass(b) and declared(b)} - {MonitorSettings}
    assert bases == set(registry.settings_classes()) and CoreSettings in bases


def test_an_unknown_check_or_setting_is_a_clear_error():
    registry = load_checks()
    with pytest.raises(UnknownCheckError, match=r"no monitor check named 'nope' \(known: nan, stall"):
        registry.check("nope")
    with pytest.raises(
        UnknownSettingError, match=r"no monitor setting named 'stall_timeout' \(known: .*stall_timeout_s"
    ):
        registry.setting("stall_timeout")
    assert registry.check("stall").reason == "stall" and registry.setting("check_every").minimum == 1


def test_a_broken_plugin_is_skipped_and_alerted_in_the_real_monitor(site_checks, tmp_path):
    registry = load_checks()
    assert [c.name for c in registry.checks][-1] == "long_cell"
    [(plugin, why)] = registry.skipped
    assert plugin.startswith("broken = site_broken") and "failed to import" in why and "no such GPU library" in why
    log = EventLog(str(tmp_path / "events.jsonl"), "job1")
    monitor = Monitor(log, {"long_cell_s": 2, "heartbeat_s": 1.0}, str(tmp_path))
    assert monitor.checks[-1].settings.long_cell_s == 2.0  # the job's value, typed as declared
    monitor.start()
    monitor.stop()
    [alert] = [e for e in read_events(str(tmp_path / "events.jsonl")) if e["type"] == "alert"]
    assert alert["kind"] == "monitor_check" and alert["action"] == "alert" and "no such GPU library" in alert["message"]


BUGGY_CHECK = '''
"""A site's check with a bug: its watcher hook raises on every tick."""

from jupyter_promote.runtime.checks import Check
from jupyter_promote.runtime.settings import NoSettings


class BuggyCheck(Check[NoSettings]):
    name = "buggy"
    kind = "buggy"
    reason = None
    settings_class = NoSettings
    action_setting = None
    calls = 0

    def on_tick(self, now):
        type(self).calls += 1
        raise KeyError("a bug in the site's check")
'''


def test_a_check_that_raises_is_switched_off_and_the_job_is_still_heard(tmp_path, monkeypatch):
    # Given a site's check whose watcher hook raises, installed through an entry point
    root = _distribution(
        tmp_path / "site", "site_buggy", {"buggy": "site_buggy:BuggyCheck"}, {"site_buggy": BUGGY_CHECK}
    )
    monkeypatch.syspath_prepend(str(root))
    load_checks.cache_clear()
    try:
        log = EventLog(str(tmp_path / "events.jsonl"), "job1")
        monitor = Monitor(log, {"heartbeat_s": 1.0, "window_s": 0.5}, str(tmp_path))
        # When the monitor watches for a few seconds
        monitor.start()
        time.sleep(3.2)
        monitor.stop()
    finally:
        load_checks.cache_clear()
    events = read_events(str(tmp_path / "events.jsonl"))
    # Then the check's bug is one alert, the check ran no more after it, and heartbeats went on all along
    [alert] = [e for e in events if e["type"] == "alert"]
    assert alert["kind"] == "monitor_check" and alert["plugin"] == "buggy" and "KeyError" in alert["message"]
    assert sys.modules["site_buggy"].BuggyCheck.calls == 1
    assert len([e for e in events if e["type"] == "heartbeat"]) >= 3


def test_a_plugins_setting_is_a_monitor_setting_on_the_submitter_side(site_checks):
    # MonitorSettings is built when jupyter_promote.models is first imported: a fresh interpreter sees the plugin
    code = (
        "from jupyter_promote.models import MonitorSettings, MONITOR_MINIMUMS\n"
        "import json\n"
        "s = MonitorSettings(long_cell_s=5.0)\n"
        "print(json.dumps([s.checked().to_json(), MONITOR_MINIMUMS['long_cell_s'], MonitorSettings().long_cell_action]))\n"
        "try:\n    MonitorSettings(long_cell_s=0.1).checked()\nexcept Exception as e:\n    print(e)\n"
    )
    env = {"PYTHONPATH": str(site_checks)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    first, refused = result.stdout.splitlines()
    settings, least, action = json.loads(first)
    assert settings["long_cell_s"] == 5.0 and settings["stall_timeout_s"] == 600.0 and least == 1.0
    assert action == "fail" and refused == "long_cell_s 0.1: must be at least 1"
    assert "monitor check broken" in result.stderr and "skipped" in result.stderr  # logged, not fatal


def test_a_site_check_from_an_entry_point_fails_a_real_job_with_its_declared_reason(cli, site_checks):
    env = {"PYTHONPATH": str(site_checks)}
    result = cli(
        "run",
        str(NOTEBOOKS / "hang.ipynb"),
        "--monitor",
        "long_cell_s=2",
        "--monitor",
        "heartbeat_s=1",
        timeout=240,
        env=env,
    )
    assert result.returncode == 1, result.stderr
    run = cli.only_run()
    record = job(run)
    assert (record["state"], record["reason"]) == ("failed", "long_cell"), record
    assert record["monitor"]["long_cell_s"] == 2.0
    alerts = [e for e in events(run) if e["type"] == "alert"]
    kinds = [a["kind"] for a in alerts]
    assert "monitor_check" in kinds  # the broken plugin, reported in the job
    fail = next(a for a in alerts if a["kind"] == "long_cell")
    assert fail["action"] == "fail" and fail["reason"] == "long_cell" and "limit 2 s" in fail["message"]


def test_gpu_memory_pressure_and_fragmentation_alert_once_per_gpu(tmp_path):
    # Given the real monitor and two GPU samples as the sampler reports them (NVML plus torch.cuda)
    path = str(tmp_path / "events.jsonl")
    monitor = Monitor(EventLog(path, "job1"), {}, str(tmp_path))
    gib = 2**30
    calm = {
        "index": 0,
        "memory_total": 80 * gib,
        "reserved_peak": 10 * gib,
        "reserved": 10 * gib,
        "allocated": 9 * gib,
        "alloc_retries": 0,
    }
    tight = {**calm, "reserved_peak": 78 * gib, "reserved": 40 * gib, "allocated": 20 * gib, "alloc_retries": 3}
    # When the GPU checks see a calm sample, then a tight one twice
    for samples in ([calm], [tight], [tight]):
        for check in monitor.checks:
            check.on_gpu(samples)
    # Then one pressure and one fragmentation alert, each of kind memory, alert only
    alerts = [e for e in read_events(path) if e["type"] == "alert"]
    assert [(a["kind"], a["finding"], a["action"]) for a in alerts] == [
        ("memory", "pressure", "alert"),
        ("memory", "fragmentation", "alert"),
    ]
    assert "98% of 80.0 GiB" in alerts[0]["message"] and "50% of reserved memory" in alerts[1]["message"]
    assert "retried 3 allocation(s)" in alerts[1]["message"] and "reason" not in alerts[1]


def test_a_record_with_the_setting_of_a_check_not_installed_here_still_loads():
    # Given job.json's monitor settings written where a site's check was installed (a job's image has none)
    stored = {**MonitorSettings(stall_timeout_s=30).to_json(), "long_cell_s": 60.0, "long_cell_action": "fail"}
    # When the runner or a restarted server reads them here
    settings = MonitorSettings.from_json(stored)
    # Then they load, the site's setting left out and the rest as stored
    assert settings.stall_timeout_s == 30 and not hasattr(settings, "long_cell_s")


def test_a_check_failure_the_notebook_raises_itself_names_the_checks_reason(cli, tmp_path):
    # Given a notebook that stops itself with the NaN check's own exception (no alert is written for it)
    source = "from jupyter_promote.runtime import NonFiniteError\nraise NonFiniteError('loss is nan at step 3')"
    cells = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}]
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    notebook = tmp_path / "stops_itself.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 4}))
    # When it runs
    result = cli("run", str(notebook), timeout=240)
    # Then the job failed for the reason that check declares
    assert result.returncode == 1, result.stderr
    record = job(cli.only_run())
    assert (record["state"], record["reason"]) == ("failed", "nan"), record
    assert "NonFiniteError: loss is nan at step 3" in record["message"]
