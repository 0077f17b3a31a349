"""The server on a hub's PostgreSQL (``c.PromoteExtension.db_url``): the API's own tests and the reconcile at
start, against a real PostgreSQL server (scripts/postgres-up.sh), each test in a database of its own."""

from __future__ import annotations

import pytest
from conftest import postgres_database

# the same tests as on the SQLite file, collected here again with this module's fixtures
from test_server import (  # noqa: F401 (fixtures and tests collected by pytest)
    notebooks,
    test_cancel_through_the_api,
    test_post_runs_a_job_and_the_api_shows_all_of_it,
    test_purge_removes_a_finished_job_and_refuses_a_running_one,
    test_server_start_reconciles_unfinished_jobs,
    unfinished_jobs,
)


@pytest.fixture
def store_path():
    """The store: a PostgreSQL database of this test's own (its URL)."""
    with postgres_database() as url:
        yield url


@pytest.fixture
def jp_server_config(store_path, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"db_url": store_path},
    }
