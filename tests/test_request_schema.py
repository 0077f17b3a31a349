"""A job request is declared once, as the JobRequest schema of server/openapi.yaml: the validator, the fields
a body may hold and the record job.json keeps all come from it; a rerun asks for the stored request again."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import yaml
from conftest import NOTEBOOKS

from jupyter_promote.config import PromoteSettings
from jupyter_promote.errors import UsageError
from jupyter_promote.launch.body import JOB_FIELDS, MAX_BODY_DEPTH, request_from_body, rerun_request
from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import GROUP_FIELDS, PromoteRequest, job_body
from jupyter_promote.launch.schema import OPENAPI, RequestSchema, job_request_schema
from jupyter_promote.server.payload import request_from_payload

NOTEBOOK = str(NOTEBOOKS / "success.ipynb")


def existing(path):
    return path


def test_a_property_added_to_the_schema_is_accepted_and_listed(tmp_path):
    # Given a copy of the OpenAPI document whose JobRequest has one more property, with a default
    document = yaml.safe_load(OPENAPI.read_text())
    document["components"]["schemas"]["JobRequest"]["properties"]["toy"] = {"type": "string", "default": "blue"}
    spec = tmp_path / "openapi.yaml"
    spec.write_text(yaml.safe_dump(document))
    toy = RequestSchema(spec)
    # Then the fields a body may hold include it, and its validator accepts it, and fills in its default
    assert "toy" in toy.fields and "toy" not in job_request_schema().fields
    assert toy.validate({"notebook": "a.ipynb", "toy": "red"})["toy"] == "red"
    assert toy.validate({"notebook": "a.ipynb"})["toy"] == "blue"
    with pytest.raises(UsageError) as refused:
        toy.validate({"notebook": "a.ipynb", "toy": 3})
    assert refused.value.field == "toy"
    # While the package's own schema still refuses it, naming it and the fields it has
    with pytest.raises(UsageError) as unknown:
        job_request_schema().validate({"notebook": "a.ipynb", "toy": "red"})
    assert unknown.value.field == "toy" and "notebook" in unknown.value.message


def test_every_handler_is_for_a_field_of_the_schema():
    # a handler left for a field gone from the schema fails here; a field without a business rule has none
    # (it reaches job.json's request as validated, and is read where it takes effect)
    assert set(JOB_FIELDS) | set(GROUP_FIELDS) <= set(job_request_schema().fields)
    assert {"notebook", "target", "parameters", "resources", "monitor"} <= set(JOB_FIELDS)
    assert not set(JOB_FIELDS) & set(GROUP_FIELDS)
    # one job's fields are the request's own: request_from_body builds a PromoteRequest from them by name
    assert set(JOB_FIELDS) <= {f.name for f in dataclasses.fields(PromoteRequest)}


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"notebook": 3}, "notebook", "notebook: must be a string"),
        ({"surprise": 1}, "surprise", "surprise: unknown field (expected contention,"),
        ({"resources": {"disk": "1G"}}, "resources.disk", "resources.disk: unknown field (expected cpus, gpus,"),
        ({"resources": {"cpus": "many"}}, "resources.cpus", "resources.cpus: must be a whole number"),
        ({"resources": {"cpus": 0}}, "resources.cpus", "resources.cpus: 0 must be at least 1"),
        ({"resources": {"memory": "lots"}}, "resources.memory", "resources.memory 'lots': not a size"),
        ({"monitor": {"nan_action": "panic"}}, "monitor.nan_action", "monitor.nan_action 'panic'"),
        ({"monitor": {"stall_timeout_s": "soon"}}, "monitor.stall_timeout_s", "monitor:"),
        ({"parameters": [1, 2]}, "parameters", "parameters: must be an object"),
        ({"parameters": {"not a name": 1}}, "parameters", "parameters"),
        ({"deterministic": "yes"}, "deterministic", "deterministic: must be true or false"),
        ({"kernel": 3}, "kernel", "kernel: must be a string"),
        ({"target": "nowhere"}, "target", "target 'nowhere': no such target here (available: local"),
        ({"notify": ["ok", 2]}, "notify", "notify[1]: must be a string"),
        ({"seeds": ["a"]}, "seeds", "seeds[0]: must be a whole number"),
        ({"replicas": 0}, "replicas", "replicas: 0 must be at least 1"),
        ({"replicas": 10**12}, "replicas", "replicas: 1000000000000 runs is more than"),
        ({"sweep": 3}, "sweep", "sweep: must be a list or an object"),
        ({"sweep": {"a": []}}, "sweep.a", "sweep.a: must hold at least 1 item"),
        ({"sweep": [{"a": 1}, 2]}, "sweep", "sweep[1]: must be an object"),
        ({"sweep": [{"a": 1}, {"b c": 2}]}, "sweep", "sweep[1]: 'b c' is not a valid parameter name"),
        ({"sweep": [{"a": 1}, {"b": "x" * 70000}]}, "sweep[1]", "sweep[1]: parameter b is"),
        ({"max_parallel": 2}, "max_parallel", "max_parallel: only applies to a sweep"),
        ({"contention": 4}, "contention", "contention: must be a string"),
        ({"seeds": [0], "contention": "cpu"}, "contention", "contention with seeds: one at a time"),
        ({"a\nb": 1}, "'a\\nb'", "'a\\nb': unknown field"),
    ],
)
def test_a_refusal_is_one_line_naming_its_field(body, field, words):
    with pytest.raises(UsageError) as refused:
        request_from_body({"notebook": NOTEBOOK, **body}, existing, PromoteSettings())
    assert refused.value.field == field, refused.value.to_json()
    assert refused.value.message.startswith(words) and "\n" not in refused.value.message, refused.value.message


def test_the_body_must_be_a_shallow_object_naming_a_notebook():
    deep: object = 1
    for _ in range(MAX_BODY_DEPTH):
        deep = [deep]
    for body, words in (
        ({}, "notebook: required"),
        ([1], "body: must be a JSON object"),
        ({"notebook": NOTEBOOK, "parameters": {"a": deep}}, "body: nests"),
    ):
        with pytest.raises(UsageError) as refused:
            request_from_body(body, existing, PromoteSettings())
        assert refused.value.field == words.split(":")[0] and refused.value.message.startswith(words)


def test_a_field_without_a_business_rule_reaches_the_stored_request_as_asked(tmp_path, monkeypatch):
    # Given the package's schema with one more property that no handler knows (a toy note)
    document = yaml.safe_load(OPENAPI.read_text())
    document["components"]["schemas"]["JobRequest"]["properties"]["note"] = {"type": "string", "maxLength": 20}
    spec = tmp_path / "openapi.yaml"
    spec.write_text(yaml.safe_dump(document))
    monkeypatch.setattr("jupyter_promote.launch.body.job_request_schema", lambda: RequestSchema(spec))
    # When a body gives it
    request, _ = request_from_body({"notebook": NOTEBOOK, "note": "why it runs"}, existing, PromoteSettings())
    # Then job.json's request keeps it as asked (a rerun asks for it again), and the schema bounds it
    assert request.body["note"] == "why it runs"
    with pytest.raises(UsageError) as refused:
        request_from_body({"notebook": NOTEBOOK, "note": "x" * 21}, existing, PromoteSettings())
    assert refused.value.field == "note" and refused.value.message == "note: must be at most 20 characters"


def test_the_server_wrapper_is_the_same_conversion():
    body = {"notebook": NOTEBOOK, "parameters": {"a": 1}, "seeds": [1, 2]}
    settings = PromoteSettings()
    assert request_from_payload(body, existing, settings) == request_from_body(body, existing, settings)


def test_the_stored_request_is_the_body_with_what_the_door_filled_in():
    # Given a site with default resources and monitor settings, and a body that names some of its own
    settings = PromoteSettings(default_resources={"cpus": 2, "time": "1h"}, monitor_defaults={"heartbeat_s": 2})
    body = {"notebook": "success.ipynb", "resources": {"cpus": 4}, "sweep": {"a": [1, 2]}, "parameters": {"b": 1}}
    request, group = request_from_body(body, lambda path: str(NOTEBOOKS / path), settings)
    # Then the request keeps the body as asked, with the full path, the target and the site's defaults
    assert request.body == {
        "notebook": NOTEBOOK,
        "target": "local",
        "parameters": {"b": 1},
        "resources": {"cpus": 4, "time": "1h"},
        "monitor": {"heartbeat_s": 2},
        "sweep": {"a": [1, 2]},
    }
    assert body["notebook"] == "success.ipynb"  # the caller's body is not changed
    # And one job of the group keeps its own request: no group options, its own parameters
    assert group is not None
    assert job_body(request.body, {"b": 1, "a": 2}) == {
        **{k: v for k, v in request.body.items() if k != "sweep"},
        "parameters": {"b": 1, "a": 2},
    }


def test_a_rerun_is_the_stored_request_even_under_other_defaults(tmp_path):
    # Given a job prepared from a body, under a site's defaults, with the id its caller announced
    settings = PromoteSettings(default_resources={"cpus": 2}, monitor_defaults={"stall_timeout_s": 30})
    body = {"notebook": NOTEBOOK, "parameters": {"a": 3}, "resources": {"memory": "1G"}, "deterministic": True}
    original, _ = request_from_body(body, existing, settings)
    original.out = str(tmp_path / "run")
    prepared = Pipeline(str(tmp_path / "runs")).prepare(original, "0123456789ab")
    record = prepared.run.read()
    assert record.id == "0123456789ab" and record.request == original.body
    # When it is asked for again where the defaults have changed
    again = rerun_request(record, owner="bob", settings=PromoteSettings(default_resources={"cpus": 8}))
    # Then it asks for what the job asked for
    for name in ("notebook", "target", "parameters", "resources", "monitor", "deterministic", "kernel", "body"):
        assert getattr(again, name) == getattr(original, name), name
    assert again.owner == "bob"


def test_a_rerun_of_a_notebook_that_is_gone_is_refused(tmp_path):
    notebook = tmp_path / "gone.ipynb"
    notebook.write_text((NOTEBOOKS / "success.ipynb").read_text())
    request, _ = request_from_body({"notebook": str(notebook)}, existing, PromoteSettings())
    record = Pipeline(str(tmp_path / "runs")).prepare(request).run.read()
    notebook.unlink()
    with pytest.raises(UsageError) as refused:
        rerun_request(record)
    assert refused.value.field == "notebook" and "no longer exists" in refused.value.message


def test_a_rerun_runs_the_notebook_the_record_names_even_when_its_stored_request_names_another(tmp_path):
    # Given a record whose stored request was changed to name another notebook (a shared store, a planted row)
    request, _ = request_from_body({"notebook": NOTEBOOK}, existing, PromoteSettings())
    record = Pipeline(str(tmp_path / "runs")).prepare(request).run.read()
    record.request = {**record.request, "notebook": str(NOTEBOOKS / "failing.ipynb")}
    # When it is asked for again
    again = rerun_request(record)
    # Then it runs the notebook the record names (the path the server confined), not the request's
    assert again.notebook == record.notebook == NOTEBOOK and again.body["notebook"] == NOTEBOOK


def test_the_schema_is_compiled_once_without_nbformat_or_jsonschema():
    code = (
        "import sys\n"
        "from jupyter_promote.launch.schema import job_request_schema\n"
        "schema = job_request_schema()\n"
        "first = schema.validate({'notebook': 'a.ipynb'})\n"
        "validator = schema._validator\n"
        "schema.validate({'notebook': 'b.ipynb'})\n"
        "assert job_request_schema() is schema and schema._validator is validator\n"
        "heavy = sorted(m for m in ('nbformat', 'jsonschema') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
