"""Groups through the REST API, as the dialog sends them: seeds and replicas judged together, contention
side by side, a group's summary, and error field paths. The same launcher and group runner as the CLI's,
in a real Jupyter server, with jobs run for real on the local target.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, SMALL_KERNEL, on_kernel
from test_parity import SEEDED, _tested
from test_server import api, error, jp_server_config, notebooks, store_path, wait_final  # noqa: F401 (fixtures)


async def test_seeds_and_replicas_from_post_jobs_are_judged_together(jp_fetch, jp_root_dir):
    # Given a tested notebook whose accuracy moves with the seed beyond its tolerance
    _tested(jp_root_dir, SEEDED)
    # When the dialog asks for 2 replicas of each of 3 seeds
    body = {"notebook": "tested.ipynb", "seeds": [0, 1, 2], "replicas": 2}
    code, group = await api(jp_fetch, "jobs", method="POST", body=body)
    assert code == 202 and group["kind"] == "replicas" and len(group["ids"]) == 6
    records = [await wait_final(jp_fetch, job_id, timeout=300) for job_id in group["ids"]]
    assert [r["state"] for r in records] == ["succeeded"] * 6
    assert [r["parameters"]["seed"] for r in records] == [0, 0, 1, 1, 2, 2]
    assert all(r["sweep"]["kind"] == "replicas" and r["sweep"]["id"] == group["sweep"] for r in records)
    # Then the group's summary has the seed band, the seed's share of the spread, and replicas that agree
    summary = await _summary(jp_fetch, group["sweep"], records)
    assert summary["kind"] == "replicas" and summary["states"] == {"succeeded": 6}
    assert summary["seed_band"]["accuracy"] == pytest.approx(0.01633, rel=1e-3)
    assert summary["metrics"]["accuracy"]["replica_std"] == 0.0 and summary["metrics"]["accuracy"]["seed_std"] > 0
    assert [g["identical"] for g in summary["replicas"]] == [True, True, True]
    # And each replica passed parity within the seed band (judged together, after all ended)
    for job_id in group["ids"]:
        _, record = await api(jp_fetch, "jobs", job_id)
        assert record["parity"]["verdict"] == "pass", record["parity"]


async def _summary(jp_fetch, group_id, records):
    for _ in range(100):  # replicas are judged together once the last one ended
        _, summary = await api(jp_fetch, "sweeps", group_id)
        judged = [(await api(jp_fetch, "jobs", t["job"]))[1].get("parity") for t in summary["tasks"]]
        if all(judged):
            return summary
        await asyncio.sleep(0.2)
    return summary


@pytest.mark.usefixtures("notebooks")
async def test_contention_from_post_jobs_runs_alone_then_beside_the_stress(jp_fetch):
    code, group = await api(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "contention": "cpu:1"})
    assert code == 202 and group["kind"] == "contention" and len(group["ids"]) == 2
    isolated, contended = [await wait_final(jp_fetch, job_id, timeout=300) for job_id in group["ids"]]
    assert isolated["state"] == contended["state"] == "succeeded"
    assert isolated["finished_at"] <= contended["created_at"] or contended["started_at"] >= isolated["finished_at"]
    for _ in range(50):
        _, summary = await api(jp_fetch, "sweeps", group["sweep"])
        if summary["contention"]:
            break
        await asyncio.sleep(0.2)
    report = summary["contention"]
    assert summary["kind"] == "contention" and report["stress"]["kind"] == "cpu" and report["stress"]["level"] == 1
    assert report["isolated"]["state"] == report["contended"]["state"] == "succeeded"
    assert [t["dir"] for t in summary["tasks"]] == ["isolated", "contended"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"resources": {"cpus": "many"}}, "resources.cpus"),
        ({"resources": {"memory": "lots"}}, "resources.memory"),
        ({"resources": {"disk": "1G"}}, "resources.disk"),
        ({"monitor": {"nan_action": "panic"}}, "monitor.nan_action"),
        ({"monitor": {"stall_timeout_s": "soon"}}, "monitor.stall_timeout_s"),
        ({"kernel": "no-such-kernel"}, "kernel"),
        ({"target": "nowhere"}, "target"),
        ({"replicas": 0}, "replicas"),
        ({"seeds": ["a"]}, "seeds"),
        ({"seeds": [0], "contention": "cpu"}, "contention"),
        ({"contention": "cpu:100000"}, "contention"),
        ({"contention": "disk"}, "contention"),
        ({"sweep": {"a": [1]}, "replicas": 2}, "replicas"),
        ({"replicas": 10**12}, "replicas"),
        ({"notebook": "missing.ipynb"}, "notebook"),
    ],
)
@pytest.mark.usefixtures("notebooks")
async def test_every_refusal_names_its_field_as_a_path(jp_fetch, payload, field):
    code, body = await error(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", **payload})
    assert code == 400 and body["field"] == field, body
    assert "\n" not in body["message"]
    _, listing = await api(jp_fetch, "jobs")
    assert listing["total"] == 0


async def test_an_unknown_group_is_404(jp_fetch):
    code, body = await error(jp_fetch, "sweeps", "s0123456789ab")
    assert code == 404 and "s0123456789ab" in body["message"]


# ---- on the real engines: a server sweep on Slurm is one array; Docker never blocks the server ----------
async def test_a_server_sweep_on_slurm_is_one_array_with_one_freeze(
    jp_fetch, jp_root_dir, small_kernel, slurm_cluster, monkeypatch
):
    # Given a notebook on a small kernel, and the dialog's sweep of 3 sets on the Slurm target
    for name, value in small_kernel.items():
        monkeypatch.setenv(name, value)
    on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, jp_root_dir)
    body = {"notebook": "success.ipynb", "target": "slurm", "sweep": {"a": [1, 5, 7]}, "max_parallel": 2}
    code, group = await api(jp_fetch, "jobs", method="POST", body=body)
    assert code == 202 and group["kind"] == "grid"
    records = [await wait_final(jp_fetch, job_id, timeout=900) for job_id in group["ids"]]
    assert [r["state"] for r in records] == ["succeeded"] * 3, records
    # Then it was one sbatch (a job array), the kernel frozen once for all, and the sweep's summary is served
    handles = [json.loads((Path(r["run_dir"]) / "job.json").read_text())["handle"] for r in records]
    assert len({h["array"] for h in handles}) == 1
    sweep_dir = Path(records[0]["run_dir"]).parent.parent
    assert (
        (sweep_dir / "sweep.json").is_file()
        and (sweep_dir / "env").is_dir()
        and "#SBATCH --array=0-2%2" in (sweep_dir / "job.sbatch").read_text()
    )
    assert all((Path(r["run_dir"]) / "env").is_symlink() for r in records)
    freezes = [
        e
        for r in records
        for e in (await api(jp_fetch, "jobs", r["id"], "events"))[1]["events"]
        if e.get("stage") == "freezing"
    ]
    assert len(freezes) == 1
    _, summary = await api(jp_fetch, "sweeps", group["sweep"])
    assert summary["states"] == {"succeeded": 3} and [t["metrics"]["b"] for t in summary["tasks"]] == [2, 10, 14]


async def test_the_server_answers_while_the_docker_engine_hangs_under_a_followed_job(
    jp_fetch, jp_root_dir, small_kernel, monkeypatch
):
    # Given a long job followed on the Docker target
    for name, value in small_kernel.items():
        monkeypatch.setenv(name, value)
    on_kernel(NOTEBOOKS / "hang.ipynb", SMALL_KERNEL, jp_root_dir)
    _, created = await api(jp_fetch, "jobs", method="POST", body={"notebook": "hang.ipynb", "target": "docker"})
    job_id = created["id"]
    for _ in range(3000):
        _, record = await api(jp_fetch, "jobs", job_id)
        if record["state"] == "running" or record["state"] in ("succeeded", "failed", "cancelled"):
            break
        await asyncio.sleep(0.2)
    assert record["state"] == "running", record
    # When the engine stops answering (SIGSTOP: every docker-py call of the target's polls hangs)
    dockerd = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True, check=True).stdout.split()[0]
    os.kill(int(dockerd), signal.SIGSTOP)
    try:
        await asyncio.sleep(1.0)  # polls are stuck in the engine by now
        # Then the server still answers every request: the Docker SDK runs in threads, never on its event loop
        for _ in range(5):
            response = await jp_fetch("jupyter-promote", "jobs", request_timeout=5)
            assert response.code == 200
            code, _ = await api(jp_fetch, "jobs", job_id)
            assert code == 200
    finally:
        os.kill(int(dockerd), signal.SIGCONT)
    await api(jp_fetch, "jobs", job_id, method="DELETE")
    record = await wait_final(jp_fetch, job_id, timeout=120)
    assert record["state"] == "cancelled", record
