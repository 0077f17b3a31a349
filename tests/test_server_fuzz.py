"""Fuzz the REST API from its OpenAPI document (schemathesis): whatever a client sends, valid by the
document or not, a real server answers without a 500.
"""

from __future__ import annotations

import pytest
import schemathesis
from conftest import NOTEBOOKS
from hypothesis import HealthCheck, settings
from live_server import TOKEN, serving

from jupyter_promote.server import routes

SPEC = routes.__file__.replace("routes.py", "openapi.yaml")
schema = schemathesis.openapi.from_path(SPEC)
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("fuzz"), [NOTEBOOKS / "success.ipynb"]) as live:
        yield live


@schema.parametrize()
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, server):
    response = case.call(base_url=server.url, headers={"Authorization": f"token {TOKEN}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    )
