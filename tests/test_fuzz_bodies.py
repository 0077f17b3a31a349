"""A property-based fuzz of ``POST jobs`` bodies against a real server (beside the schemathesis run over the
OpenAPI document): types, non-finite and huge numbers, deep values, unicode and hostile names. Every answer
is a 202 or a one-line 4xx naming what it refused; never a 500, never a traceback.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import fault_ledger
import pytest
from conftest import NOTEBOOKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from live_server import TOKEN, Server, serving

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["NaN", "Infinity", "1e999", "9" * 400, "x = 1\nimport os", "../../etc/passwd", "\x00", "é" * 50]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
names = st.one_of(st.text(max_size=12), st.sampled_from(["lr", "class", "x y", "__import__('os')", "a" * 300]))
bodies = st.fixed_dictionaries(
    {"notebook": st.one_of(st.just("success.ipynb"), st.just("missing.ipynb"), values)},
    optional={
        "target": st.one_of(st.just("local"), values),
        "kernel": st.one_of(st.just("python3"), values),
        "parameters": st.one_of(st.dictionaries(names, values, max_size=3), values),
        "resources": st.one_of(
            st.dictionaries(st.sampled_from(["cpus", "memory", "gpus", "time", "disk"]), values), values
        ),
        "monitor": st.one_of(
            st.dictionaries(
                st.sampled_from(["stall_timeout_s", "heartbeat_s", "window_s", "nan_action", "check_every"]), values
            ),
            values,
        ),
        "deterministic": values,
        "sweep": values,
        "max_parallel": values,
    },
)
RAW = [
    '{"notebook": "success.ipynb", "parameters": {"lr": NaN}}',
    '{"notebook": "success.ipynb", "resources": {"cpus": 1e999}}',
    "[" * 5000 + "]" * 5000,
    '{"notebook": ',
    "\xff\xfe",
    '{"notebook": "success.ipynb"} trailing',
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("fuzz"), [NOTEBOOKS / "success.ipynb"]) as live:
        yield live


def post(server: Server, data: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.url}/jupyter-promote/jobs", data=data, method="POST", headers={"Authorization": f"token {TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def check(server: Server, data: bytes) -> None:
    code, body = post(server, data)
    fault_ledger.fuzzed(code)
    assert code in (202, 400, 403, 404, 503), (data[:200], code, body)
    if code == 202:  # a valid request: a real job, stopped at once
        for job_id in body.get("ids", [body["id"]]):
            server.call("DELETE", "jobs", job_id)
    else:
        message = body.get("message", "")
        assert message and "\n" not in message and "Traceback" not in message, (data[:200], message)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(body=bodies)
def test_post_jobs_never_answers_500(server, body):
    check(server, json.dumps(body).encode())


def test_raw_bodies_browsers_cannot_send_are_400s(server):
    for raw in RAW:
        check(server, raw.encode("utf-8", "surrogateescape"))


def test_every_job_the_fuzz_started_reaches_a_final_state(server):
    # Every body the server accepted made a real job, cancelled at once: each ends, with a reason
    jobs = server.call("GET", "jobs?limit=200")["jobs"]
    for job in jobs:
        fault_ledger.check_job(server.call, job["id"], 120, prepared=False)
