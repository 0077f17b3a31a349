"""End to end through the CLI: real kernels, real papermill, the local target."""

from __future__ import annotations

import json
import signal
import time

import pytest
from conftest import NOTEBOOKS, events, job


def test_success_writes_a_complete_run_directory(cli):
    # Given a notebook with a parameters cell, When it runs with -p, Then it succeeds with every artefact
    result = cli("run", str(NOTEBOOKS / "success.ipynb"), "-p", "name", "cluster")
    assert result.returncode == 0, result.stderr
    run = cli.only_run()
    for name in (
        "job.json",
        "job.ipynb",
        "output.ipynb",
        "events.jsonl",
        "env/promote.lock.json",
        "env/requirements.txt",
        "job.log",
    ):
        assert (run / name).is_file(), name
    record = job(run)
    assert record["state"] == "succeeded" and record["reason"] is None
    assert record["parameters"] == {"name": "cluster"}
    assert record["lock_hash"].startswith("sha256:")
    assert record["metrics"] == {"b": 2}
    assert "hello cluster" in (run / "output.ipynb").read_text()
    evs = events(run)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    states = [e["state"] for e in evs if e["type"] == "status"]
    assert states == ["pending", "queued", "running", "succeeded"]
    assert {e["type"] for e in evs} >= {"status", "cell", "heartbeat", "metric"}
    assert "succeeded" in result.stderr and "cell" in result.stderr


def test_failing_cell_is_named_and_exits_1(cli):
    result = cli("run", str(NOTEBOOKS / "failing.ipynb"))
    assert result.returncode == 1
    record = job(cli.only_run())
    assert record["state"] == "failed" and record["reason"] == "error"
    assert "ZeroDivisionError" in record["message"] and "cell" in record["message"]
    last = result.stderr.strip().splitlines()
    assert any("ZeroDivisionError" in line for line in last[-2:])
    assert "Traceback" not in result.stderr


def test_diverging_loss_fails_fast_with_a_nan_alert(cli):
    result = cli("run", str(NOTEBOOKS / "diverge.ipynb"))
    assert result.returncode == 1, result.stderr
    run = cli.only_run()
    record = job(run)
    assert record["state"] == "failed" and record["reason"] == "nan"
    alerts = [e for e in events(run) if e["type"] == "alert"]
    assert alerts and alerts[0]["kind"] == "nan"
    # fail fast: within a few finiteness checks, far before the 5000 steps of the loop
    assert alerts[0]["step"] <= 50
    assert '"finished training\\n"' not in (run / "output.ipynb").read_text()  # the cell after never ran


def test_a_loop_that_updates_its_weights_by_hand_is_counted_and_fails_fast_on_nan(cli):
    # no optimizer: loss.backward(), then W.data += -lr * W.grad (lecture notebooks, much research code)
    result = cli("run", str(NOTEBOOKS / "manual_sgd.ipynb"))
    assert result.returncode == 1, result.stderr
    run = cli.only_run()
    record = job(run)
    assert (record["state"], record["reason"]) == ("failed", "nan"), record
    alert = next(e for e in events(run) if e["type"] == "alert")
    assert alert["kind"] == "nan" and alert["step"] <= 50 and "the loss" in alert["message"]
    # the same loop at a sane rate: its backward() calls are its steps
    result = cli("run", str(NOTEBOOKS / "manual_sgd.ipynb"), "-p", "lr", "0.01", "-p", "steps", "200")
    assert result.returncode == 0, result.stderr
    sane = next(r for r in sorted(cli.runs.iterdir()) if r != run)
    assert job(sane)["state"] == "succeeded"
    counted = [e.get("steps") or 0 for e in events(sane) if e["type"] in ("step", "heartbeat")]
    assert max(counted) == 199  # each backward() a step once the next one shows no optimizer stepped between


def test_hang_raises_a_stall_alert_dumps_stacks_and_fails(cli):
    result = cli("run", str(NOTEBOOKS / "hang.ipynb"), "--stall-timeout", "3", "--monitor", "heartbeat_s=1")
    assert result.returncode == 1, result.stderr
    run = cli.only_run()
    record = job(run)
    assert record["reason"] == "stall", record
    alert = next(e for e in events(run) if e["type"] == "alert")
    assert alert["kind"] == "stall"
    stacks = run / alert["stacks"]
    assert (stacks.is_file() and "sleep" in stacks.read_text()) or "File" in stacks.read_text()


def test_parameters_are_typed_as_papermill_types_them(cli, tmp_path):
    out = tmp_path / "typed.json"
    params = tmp_path / "params.yaml"
    params.write_text("items: [1, 2, 3]\nlabel: 2024-01-01\n")
    result = cli(
        "run",
        str(NOTEBOOKS / "typed.ipynb"),
        "-p",
        "count",
        "3",
        "-p",
        "ratio",
        "1e-3",
        "-p",
        "flag",
        "True",
        "-p",
        "nothing",
        "None",
        "-f",
        str(params),
        env={"TYPED_OUT": str(out)},
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["kinds"] == {
        "count": "int",
        "ratio": "float",
        "flag": "bool",
        "nothing": "NoneType",
        "label": "str",
        "items": "list",
    }
    assert data["values"]["label"] == "2024-01-01" and data["values"]["items"] == [1, 2, 3]


def test_json_prints_only_the_final_job_record(cli):
    result = cli("run", str(NOTEBOOKS / "success.ipynb"), "--json")
    assert result.returncode == 0
    record = json.loads(result.stdout)
    assert record["state"] == "succeeded" and record["id"]


def test_seed_parameter_seeds_the_job(cli, tmp_path):
    values = []
    for i in range(2):
        out = tmp_path / f"seed{i}.json"
        assert (
            cli("run", str(NOTEBOOKS / "seeded.ipynb"), "-p", "seed", "11", env={"SEED_OUT": str(out)}).returncode == 0
        )
        values.append(json.loads(out.read_text()))
    import random

    random.seed(11)
    assert values == [random.random()] * 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_cancels_the_job_and_exits_130(cli, sig):
    # SIGTERM is what CI systems and `timeout` send, SIGHUP a closed terminal: both are taken as Ctrl-C
    proc = cli.popen("run", str(NOTEBOOKS / "hang.ipynb"))
    deadline = time.time() + 120
    while time.time() < deadline:
        runs = list(cli.runs.glob("*/events.jsonl")) if cli.runs.exists() else []
        if runs and any(e.get("phase") == "start" and "sleep" in e.get("source", "") for e in events(runs[0].parent)):
            break
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    record = job(cli.only_run())
    assert record["state"] == "cancelled"
    assert (cli.only_run() / "output.ipynb").is_file()


def test_time_limit_is_reported_as_timeout(cli):
    result = cli("run", str(NOTEBOOKS / "hang.ipynb"), "--time", "8s")
    assert result.returncode == 1
    record = job(cli.only_run())
    assert record["state"] == "failed" and record["reason"] == "timeout"


def test_status_and_logs(cli):
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    run = cli.only_run()
    status = cli("status", str(run))
    assert status.returncode == 0 and "succeeded" in status.stdout
    by_id = cli("status", job(run)["id"], "--json")
    assert json.loads(by_id.stdout)["state"] == "succeeded"
    listing = cli("status")
    assert job(run)["id"] in listing.stdout
    logs = cli("logs", str(run))
    assert logs.returncode == 0 and "hello world" in logs.stdout


def test_status_marks_a_vanished_job_lost(cli):
    proc = cli.popen("run", str(NOTEBOOKS / "hang.ipynb"))
    deadline = time.time() + 120
    run = None
    while time.time() < deadline:
        found = list(cli.runs.glob("*/job.json")) if cli.runs.exists() else []
        if found and job(found[0].parent).get("handle"):
            run = found[0].parent
            break
        time.sleep(0.2)
    assert run is not None
    proc.kill()  # the CLI dies; then the job's runner is killed from outside
    proc.wait()
    import os

    os.killpg(job(run)["handle"]["pid"], signal.SIGKILL)
    time.sleep(0.5)
    status = cli("status", str(run), "--json")
    record = json.loads(status.stdout)
    assert record["state"] == "failed" and record["reason"] in ("killed", "lost")


def test_bad_inputs_are_one_line_errors_with_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    cases = [
        ("run", str(bad)),
        ("run", str(tmp_path / "missing.ipynb")),
        ("run", str(NOTEBOOKS / "success.ipynb"), "--target", "nowhere"),
        ("run", str(NOTEBOOKS / "success.ipynb"), "--memory", "lots"),
        ("run", str(NOTEBOOKS / "success.ipynb"), "--monitor", "nan_action=explode"),
        ("run", str(NOTEBOOKS / "success.ipynb"), "-f", str(tmp_path / "nope.yaml")),
    ]
    for args in cases:
        result = cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("jupyter promote: error:"), (args, result.stderr)
    assert not cli.runs.exists() or not any(cli.runs.iterdir())


def test_a_kernel_that_dies_before_its_first_reply_is_started_again(cli, tmp_path):
    # Given a kernel that dies at its first start (as one does whose port a neighbour took), then works
    import sys

    from conftest import on_kernel

    marker = tmp_path / "died-once"
    wrapper = tmp_path / "flaky_kernel.py"
    wrapper.write_text(
        "import os, sys\n"
        f"marker = {str(marker)!r}\n"
        "if not os.path.exists(marker):\n"
        "    open(marker, 'w').close()\n"
        "    sys.exit(1)\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', *sys.argv[1:]])\n"
    )
    spec = tmp_path / "jupyter" / "kernels" / "flaky"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, str(wrapper), "-f", "{connection_file}"],
                "display_name": "flaky",
                "language": "python",
            }
        )
    )
    nb = on_kernel(NOTEBOOKS / "success.ipynb", "flaky", tmp_path / "nb")
    # When it is promoted, Then the runner starts the kernel once more and the job succeeds
    result = cli("run", str(nb), env={"JUPYTER_PATH": str(tmp_path / "jupyter")})
    assert result.returncode == 0, result.stderr
    run = cli.only_run()
    retries = [e for e in events(run) if e["type"] == "alert" and e["kind"] == "kernel_start"]
    assert marker.exists() and len(retries) == 1 and "Kernel died" in retries[0]["message"]
    assert job(run)["state"] == "succeeded"


def test_deterministic_runs_reproduce_bit_for_bit_and_name_a_nondeterministic_op(cli, tmp_path):
    # Given a notebook with DataLoader workers drawing numpy and torch randomness, and a CPU op torch
    # has no deterministic implementation of
    outs = []
    for replica in range(2):
        out = tmp_path / f"values-{replica}.json"
        result = cli(
            "run",
            str(NOTEBOOKS / "deterministic.ipynb"),
            "--deterministic",
            "--out",
            str(tmp_path / f"r{replica}"),
            "-p",
            "out",
            str(out),
        )
        assert result.returncode == 0, result.stderr
        outs.append(json.loads(out.read_text()))
        alerts = [e for e in events(tmp_path / f"r{replica}") if e["type"] == "alert"]
        assert [a["kind"] for a in alerts] == ["nondeterministic_op"], alerts
        assert (
            "max_unpool" in alerts[0]["op"]
            and alerts[0]["cell"].startswith("cell ")
            and "MaxPool1d" in alerts[0]["cell"]
        )
    # Then the two replicas agree exactly: seeded workers, seeded generators, the same initial weights
    assert outs[0] == outs[1]


def test_cpu_contention_visibly_lowers_steps_per_s_in_the_report(cli, tmp_path):
    # Given a single-threaded training loop, When it runs alone and then beside 4 CPU burners on 2 cores
    result = cli(
        "run",
        str(NOTEBOOKS / "mlp_train.ipynb"),
        "--contention",
        "cpu:4",
        "--out",
        str(tmp_path / "c"),
        "--monitor",
        "window_s=0.5",
        "--monitor",
        "throughput_action=alert",
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # Then the report sets both side by side, and the contended run is clearly slower
    assert report["isolated"]["state"] == report["contended"]["state"] == "succeeded"
    assert report["isolated"]["steps_per_s"] and report["contended"]["steps_per_s"]
    assert report["steps_per_s_ratio"] < 0.8, report
    assert report["isolated"]["metrics"]["loss"] == report["contended"]["metrics"]["loss"]  # same seed, same result
    assert "under 4 cpu burner(s)" in result.stderr and (tmp_path / "c" / "contended" / "contention.json").exists()
    import subprocess

    assert "while True: pass" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def test_memory_contention_runs_the_job_beside_memory_really_held(cli, tmp_path):
    # Given 1 GiB held and touched beside the job, When the job runs alone and then beside it
    result = cli(
        "run",
        str(NOTEBOOKS / "mlp_train.ipynb"),
        "--contention",
        "memory:1G",
        "--out",
        str(tmp_path / "m"),
        "-p",
        "steps",
        "600",
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # Then both ran, side by side in the report, and the workload really held the memory (its peak RSS)
    assert report["stress"]["kind"] == "memory" and report["stress"]["level"] == 1 << 30
    assert report["stress"]["peak_rss_bytes"] >= 0.9 * (1 << 30), report["stress"]
    assert report["isolated"]["state"] == report["contended"]["state"] == "succeeded"
    assert report["contended"]["peak_rss_bytes"] and "memory pressure (1024 MiB held and touched)" in result.stderr
    assert report["isolated"]["metrics"]["loss"] == report["contended"]["metrics"]["loss"]
