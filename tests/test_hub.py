"""Living on a hub: jobs record who promoted them, ``runs_dir`` may hold ``{username}``, running jobs count as
the server's activity (a hub's idle culler reads ``/api/status``), and a job store on a network filesystem
does without SQLite's WAL mode. A real Jupyter server, real jobs on the local target."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import shutil
import sqlite3
import time

import pytest
from conftest import NOTEBOOKS, job
from jupyter_server.auth.identity import IdentityProvider, User
from test_server import api, wait_final

from jupyter_promote.rundir import login_name, runs_dir_of
from jupyter_promote.server.store import NETWORK_FILESYSTEMS, JobStore, filesystem_of


class OneUser(IdentityProvider):
    """The token's holder is one named person (as a hub's single-user server has it), not a new anonymous
    user per request (jupyter_server's default for a shared token)."""

    def generate_anonymous_user(self, handler):
        return User("ana@example.org", "Ana", "Ana", "A", None, None)


@pytest.fixture
def jp_server_config(tmp_path):
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_promote": True},
            "allow_unauthenticated_access": False,
            "identity_provider_class": OneUser,
        },
        "PromoteExtension": {"store_path": str(tmp_path / "store" / "jobs.sqlite"), "activity_interval_s": 0.5},
        "PromoteSettings": {"runs_dir": str(tmp_path / "runs" / "{username}")},
    }


async def me(jp_fetch) -> str:
    response = await jp_fetch("api", "me")
    return json.loads(response.body)["identity"]["username"]


async def last_activity(jp_fetch) -> float:
    """What a hub's culler reads: ``/api/status`` (itself never counted as activity)."""
    response = await jp_fetch("api", "status")
    return datetime.datetime.fromisoformat(json.loads(response.body)["last_activity"]).timestamp()


async def test_a_job_records_its_owner_and_runs_in_the_owners_runs_dir(jp_fetch, jp_root_dir, tmp_path):
    shutil.copy(NOTEBOOKS / "success.ipynb", jp_root_dir / "success.ipynb")
    _, posted = await api(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb"})
    record = await wait_final(jp_fetch, posted["id"])
    assert await me(jp_fetch) == "ana@example.org"
    assert record["state"] == "succeeded" and record["owner"] == "ana@example.org"
    [run_dir] = (tmp_path / "runs").iterdir()
    assert run_dir.name == "ana@example.org" and job(next(run_dir.iterdir()))["owner"] == "ana@example.org"


async def test_running_jobs_keep_the_server_active_and_an_idle_one_is_left_idle(jp_fetch, jp_root_dir):
    shutil.copy(NOTEBOOKS / "hang.ipynb", jp_root_dir / "hang.ipynb")
    _, posted = await api(
        jp_fetch, "jobs", method="POST", body={"notebook": "hang.ipynb", "parameters": {"seconds": 5}}
    )
    posted_at = time.time()
    readings: list[tuple[float, float]] = []
    # only /api/status is asked from here on: any other API request would count as activity itself
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        readings.append((time.time(), await last_activity(jp_fetch)))
        quiet_for = readings[-1][0] - readings[-1][1]
        if readings[-1][1] > posted_at + 3 and quiet_for > 3:
            break
        await asyncio.sleep(0.25)
    record = await wait_final(jp_fetch, posted["id"])
    assert record["state"] == "succeeded"
    during = [activity for seen, activity in readings if seen < record["finished_at"]]
    assert max(during) > posted_at + 3, "the running job did not count as activity"
    # once it ended nothing more is reported: the last activity is from while it ran
    assert readings[-1][1] <= record["finished_at"] + 5 and readings[-1][0] - readings[-1][1] > 3


def test_runs_dir_of_expands_home_and_a_username_safe_in_a_path():
    assert runs_dir_of("~/promote/{username}", "ana") == os.path.expanduser("~/promote/ana")
    assert runs_dir_of("/srv/runs/{username}", "../../etc") == "/srv/runs/-..-etc"
    assert runs_dir_of("/srv/runs/{username}", "ana@example.org") == "/srv/runs/ana@example.org"
    assert runs_dir_of("/srv/runs", "ana") == "/srv/runs"
    assert runs_dir_of("/srv/{username}", "") == f"/srv/{login_name()}"


def test_the_cli_records_its_user_and_fills_username_in_runs_dir(cli, tmp_path):
    runs = tmp_path / "mine" / "{username}"
    result = cli(
        "run",
        str(NOTEBOOKS / "success.ipynb"),
        f"--PromoteSettings.runs_dir={runs}",
        env={"JUPYTER_PROMOTE_RUNS_DIR": ""},
    )
    assert result.returncode == 0, result.stderr
    [run_dir] = (tmp_path / "mine" / login_name()).iterdir()
    assert job(run_dir)["owner"] == login_name()
    status = cli("status", f"--PromoteSettings.runs_dir={runs}", env={"JUPYTER_PROMOTE_RUNS_DIR": ""})
    assert job(run_dir)["id"] in status.stdout


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 0:35 / /home rw,relatime shared:20 - nfs4 filer:/export/home rw,vers=4.2
41 40 0:36 / /home/ana/scratch\\040space rw,relatime - ext4 /dev/vdb1 rw
"""


def test_a_network_filesystem_is_recognised_by_the_mount_a_path_is_under():
    assert filesystem_of("/home/ana/.local/share/jupyter", MOUNTINFO) == "nfs4"
    assert filesystem_of("/home/ana/scratch space/jobs", MOUNTINFO) == "ext4"
    assert filesystem_of("/var/lib", MOUNTINFO) == "ext4"
    assert "nfs4" in NETWORK_FILESYSTEMS and "ext4" not in NETWORK_FILESYSTEMS
    assert filesystem_of(os.getcwd()) not in NETWORK_FILESYSTEMS  # this machine's own disk, read for real


def test_without_wal_the_store_uses_its_rollback_journal_and_keeps_every_job(tmp_path):
    from jupyter_promote.models import JobRecord

    path = str(tmp_path / "jobs.sqlite")
    store = JobStore(path, wal=False)
    store.put_job(JobRecord(id="abc123def456", notebook="/n.ipynb", target="local", kernel="python3"), None)
    store.add_events("abc123def456", [{"seq": 1, "type": "status", "state": "running", "ts": 1.0}])
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    again = JobStore(path, wal=False)
    assert again.get_job("abc123def456") is not None
    again.close()


def test_two_users_servers_on_one_database_each_see_and_follow_their_own_jobs(tmp_path):
    """A hub's servers share one PostgreSQL database: Ana's job is neither shown to Bob's server nor adopted by
    it while Ana's server is away (culled); Ana's server, back, follows it to its end."""
    import urllib.error

    from conftest import postgres_database, wait_for
    from live_server import Server

    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "hang.ipynb", root / "hang.ipynb")
    with (
        postgres_database() as url,
        open(tmp_path / "ana.log", "wb") as ana_log,
        open(tmp_path / "bob.log", "wb") as bob_log,
    ):
        ana, bob = Server(root, url, tmp_path / "ana", ana_log), Server(root, url, tmp_path / "bob", bob_log)
        ana.env["JUPYTERHUB_USER"], bob.env["JUPYTERHUB_USER"] = "ana", "bob"
        ana.start()
        bob.start()
        try:
            job_id = ana.call("POST", "jobs", body={"notebook": "hang.ipynb", "parameters": {"seconds": 30}})["id"]
            wait_for(lambda: ana.call("GET", "jobs", job_id)["state"] == "running", 90, "Ana's job to run")
            assert bob.call("GET", "jobs")["total"] == 0
            with pytest.raises(urllib.error.HTTPError) as missing:
                bob.call("GET", "jobs", job_id)
            assert missing.value.code == 404
            # Ana's server goes (culled) while her job runs; Bob's server starts again meanwhile
            ana.stop()
            bob.stop()
            bob.start()
            time.sleep(2)  # its reconcile ran: it left Ana's job alone
            assert bob.call("GET", "jobs")["total"] == 0
            ana.start()
            assert ana.call("GET", "jobs", job_id)["state"] in ("running", "succeeded")  # never "lost"
            wait_for(lambda: ana.call("GET", "jobs", job_id)["state"] == "succeeded", 90, "Ana's job to end")
        finally:
            ana.stop()
            bob.stop()


def test_with_a_role_per_user_and_row_level_security_the_database_keeps_each_users_jobs_apart():
    """The README's recipe, run as written on a real PostgreSQL (the store itself sets nothing special): Bob's
    role reads none of Ana's rows even without the store's filter, cannot plant a row in her list, overwrite her
    job or add to its events; Ana's server keeps working on her own."""
    import re
    import uuid

    from conftest import PG_URL, ROOT, postgres_database
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.pool import NullPool

    from jupyter_promote.models import JobRecord, JobState

    readme = (ROOT / "README.md").read_text()
    recipe = re.search(r"```sql\n(.*?ENABLE ROW LEVEL SECURITY.*?)```", readme, re.S)
    assert recipe is not None
    tag = uuid.uuid4().hex[:8]
    group, ana, bob = f"promote_users_{tag}", f"ana_{tag}", f"bob_{tag}"
    statements = re.sub(r"--[^\n]*", "", recipe.group(1)).replace("promote_users", group).split(";")
    statements = [s.strip() for s in statements if s.strip()]
    per_user = [s for s in statements if "LOGIN PASSWORD 'ana-secret'" in s]
    assert len(per_user) == 1
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with postgres_database() as url:
            # Given the schema made by the database's owner, and the README's recipe run by it for two users
            JobStore(url).close()
            owner = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
            with owner.connect() as db:
                for statement in statements:
                    if statement not in per_user:
                        db.execute(text(statement))
                for name in (ana, bob):
                    db.execute(text(per_user[0].replace("ROLE ana ", f"ROLE {name} ")))
            owner.dispose()

            def as_role(name: str) -> str:
                return make_url(url).set(username=name, password="ana-secret").render_as_string(hide_password=False)

            ana_store, bob_store = JobStore(as_role(ana), user=ana), JobStore(as_role(bob), user=bob)
            try:
                # When Ana's server stores a running job and its events
                job_id = "anajob000001"
                ana_job = JobRecord(
                    id=job_id,
                    notebook="/home/ana/secret.ipynb",
                    target="local",
                    kernel="python3",
                    parameters={"token": "ana's"},
                    state=JobState.RUNNING,
                    created_at=time.time(),
                )
                ana_store.put_job(ana_job, "/home/ana/runs/job")
                status = {"seq": 1, "ts": 1.0, "job": job_id, "type": "status", "state": "running"}
                ana_store.add_events(job_id, [status])
                # Then Bob's role reads none of it, even without the store's filter, and deletes none of it
                with bob_store.engine.connect() as db:
                    for table in ("jobs", "events", "transitions"):
                        assert db.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one() == 0
                    db.execute(text("DELETE FROM events"))
                    db.execute(text("DELETE FROM jobs"))
                    db.commit()
                # And it can neither plant a row in Ana's list, overwrite her job, nor add to its events
                with bob_store.engine.connect() as db, pytest.raises(DBAPIError, match="row-level security"):
                    db.execute(
                        text(
                            "INSERT INTO jobs (id, notebook, state, created_at, owner, server_user, record) "
                            "VALUES ('planted00001', 'x', 'running', 1, '', :ana, '{}')"
                        ),
                        {"ana": ana},
                    )
                with pytest.raises(DBAPIError, match="row-level security"):
                    bob_store.put_job(JobRecord(id=job_id, notebook="/x.ipynb", target="local", kernel="python3"), None)
                with pytest.raises(DBAPIError, match="row-level security"):
                    bob_store.add_events(job_id, [{**status, "seq": 2, "state": "succeeded"}])
                # And Ana's server still sees, follows and removes her own job, as she left it
                assert [record.id for record, _ in ana_store.unfinished()] == [job_id]
                assert ana_store.get_job(job_id)[0].notebook == ana_job.notebook
                assert ana_store.last_seq(job_id) == 1
                ana_store.delete_job(job_id)
                assert ana_store.get_job(job_id) is None
            finally:
                ana_store.close()
                bob_store.close()
    finally:
        with admin.connect() as db:  # roles belong to the whole server: gone once their database is
            for name in (ana, bob, group):
                db.execute(text(f'DROP ROLE IF EXISTS "{name}"'))
        admin.dispose()
