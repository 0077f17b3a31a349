"""The server extension loads in a real Jupyter server and every handler is authenticated."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError


@pytest.fixture
def jp_server_config():
    # like the extension template's check_auth: a handler without authentication would warn, and warnings fail tests
    return {"ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False}}


async def test_targets_lists_local(jp_fetch):
    response = await jp_fetch("jupyter-promote", "targets")
    assert response.code == 200
    targets = {t["name"]: t for t in json.loads(response.body)["targets"]}
    assert targets["local"]["available"] is True
    assert "cpus" in targets["local"]["options_schema"]["properties"]


async def test_targets_refuses_unauthenticated_requests(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("jupyter-promote", "targets", headers={"Authorization": ""})
    assert info.value.code in (401, 403)
