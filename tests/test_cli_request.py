"""The command line's request is the server's: its arguments become a JobRequest body (valid against the
schema in server/openapi.yaml) made a request by the same code; errors still name the command line's options."""

from __future__ import annotations

import fastjsonschema
import pytest
import yaml
from conftest import NOTEBOOKS, ROOT

from jupyter_promote.cli.parser import build_parser
from jupyter_promote.cli.request import in_cli_words, request_body, request_from_args
from jupyter_promote.config import PromoteSettings
from jupyter_promote.errors import UsageError

NB = str(NOTEBOOKS / "success.ipynb")


def job_request_schema() -> dict:
    document = yaml.safe_load((ROOT / "jupyter_promote" / "server" / "openapi.yaml").read_text())
    return document["components"]["schemas"]["JobRequest"]


def parse(*argv: str):
    return build_parser().parse_args(argv)


def test_run_and_sweep_arguments_are_a_job_request_body_the_schema_accepts():
    validate = fastjsonschema.compile(job_request_schema())
    options = "-p lr 0.1 -r name 7 --cpus 2 --memory 1G --seeds 1 2 --monitor nan_action=alert --stall-timeout 30"
    run = parse("run", NB, *options.split(), "--deterministic", "--notify", "none")
    body = request_body(run)
    assert body == {
        "notebook": NB,
        "parameters": {"lr": 0.1, "name": "7"},
        "resources": {"cpus": 2, "memory": "1G"},
        "monitor": {"nan_action": "alert", "stall_timeout_s": 30.0},
        "deterministic": True,
        "notify": ["none"],
        "seeds": [1, 2],
    }
    validate(body)
    sweep = request_body(parse("sweep", NB, "-p", "a", "1", "2", "--max-parallel", "1", "--target", "local"))
    assert sweep["sweep"] == [{"a": 1}, {"a": 2}] and sweep["max_parallel"] == 1 and sweep["target"] == "local"
    validate(sweep)


def test_the_request_keeps_what_only_a_command_line_has():
    request, group = request_from_args(parse("run", NB, "--out", "here", "--base-image", "img"), PromoteSettings())
    assert request.out == "here" and request.image is not None and request.image.base_image == "img"
    assert request.target == "local" and group is None


def test_the_stored_request_names_the_notebook_by_its_full_path(tmp_path, monkeypatch):
    # Given a notebook named relative to the current folder
    monkeypatch.chdir(NOTEBOOKS)
    # When run's arguments become a request
    request, _ = request_from_args(parse("run", "success.ipynb"), PromoteSettings())
    # Then job.json's request names it fully: a rerun from another folder runs the same notebook
    assert request.body["notebook"] == NB


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("run", NB, "--memory", "lots"), "--memory 'lots': not a size"),
        (("run", NB, "--monitor", "window_s=nan"), "--monitor window_s nan: must be a finite number"),
        (("run", NB, "--target", "nowhere"), "--target 'nowhere': no such target here"),
        (("sweep", NB, "-p", "a", "1", "--max-parallel", "0"), "--max-parallel 0: must be at least 1"),
        (("run", NB, "--replicas", "2", "--detach"), "--detach: applies to one job"),
    ],
)
def test_errors_name_the_option_not_the_body_field(argv, message):
    with pytest.raises(UsageError) as refused:
        request_from_args(parse(*argv), PromoteSettings())
    assert refused.value.message.startswith(message), refused.value.message


def test_a_body_field_path_becomes_the_option():
    error = in_cli_words(UsageError("resources.gpus 'x': not a whole number", field="resources.gpus"))
    assert error.message == "--gpus 'x': not a whole number" and error.field == "resources.gpus"
    assert in_cli_words(UsageError("replicas: 0 must be at least 1", field="replicas")).message.startswith(
        "--replicas:"
    )
    assert in_cli_words(UsageError("kernel 'k': not installed", field="kernel")).message == "kernel 'k': not installed"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--cpus", "²"), "--cpus '²': not a whole number up to 1000000"),
        (("--cpus", "abc"), "--cpus 'abc': not a whole number up to 1000000"),
        (("--gpus", "-1"), "--gpus '-1': must be positive"),
        (("--stall-timeout", "-5"), "--stall-timeout -5.0: must be at least 1"),
    ],
)
def test_a_refused_value_is_named_as_it_was_typed(argv, message):
    with pytest.raises(UsageError) as refused:
        request_from_args(parse("run", NB, *argv), PromoteSettings())
    assert refused.value.message == message


def test_a_refused_site_default_names_the_setting_not_an_option_never_typed():
    settings = PromoteSettings(monitor_defaults={"nan_action": "maybe"})
    with pytest.raises(UsageError) as refused:
        request_from_args(parse("run", NB), settings)
    assert refused.value.message == "c.PromoteSettings.monitor_defaults: nan_action 'maybe': must be 'fail' or 'alert'"
