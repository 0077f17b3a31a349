"""Secrets by reference (issue 27, section 3): a job gets its credentials at run time on every target, and
a canary value it prints is found nowhere jupyter-promote stores or relays: not in job.json, the lock,
events, logs, the output notebook, the image, nor the command's own output. Bad sources are refused before
anything is written, in one line that never holds the value."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import BASE_IMAGE, NOTEBOOKS, SMALL_KERNEL, events, job, on_kernel

from jupyter_promote.errors import UsageError
from jupyter_promote.execute.masked_output import masked_streams
from jupyter_promote.runtime.events import EventLog
from jupyter_promote.runtime.masking import MASK, NAMES_ENV, mask, secret_values
from jupyter_promote.secrets import check_target, parse_option, refs_of, resolve

#: What the job does with its secret: prints it three ways, fails on it, proves it saw it (a hash).
CELLS = [
    "import hashlib, os, sys\nv = os.environ['CANARY_TOKEN']\nprint('the token is', v)\n"
    "print(v, file=sys.stderr)\nos.write(2, ('raw ' + v + '\\n').encode())",
    "open('seen.txt', 'w').write(hashlib.sha256(v.encode()).hexdigest())",
]


def canary() -> str:
    return f"canary-{uuid.uuid4().hex}"


def leaks(folder: Path, value: str) -> list[str]:
    """Every file under ``folder`` holding ``value`` (as written, or as JSON escapes it)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and value.encode() in path.read_bytes():
            found.append(str(path.relative_to(folder)))
    return found


# ---- the references, and their refusals -------------------------------------------------------------
def test_a_missing_source_is_refused_in_one_line_naming_the_secret_never_its_value(tmp_path):
    value = canary()
    (tmp_path / "short").write_text("abc\n")
    cases = {
        "HF_TOKEN": ("env:HF_TOKEN", "env:HF_TOKEN is not set"),
        "DB_PASSWORD": (f"file:{tmp_path}/missing", "does not exist"),
        "SHORT": (f"file:{tmp_path}/short", "shorter than 4 characters"),
        "PATH": ("env:X", "the job's runner, interpreter or target sets this variable"),
        "PYTHONHOME": ("env:X", "the job's runner, interpreter or target sets this variable"),
        "bad-name": ("env:X", "not an environment variable's name"),
        "VAULT": ("vault:kv/x", "its source is not KIND:WHERE with KIND one of env:, file:, kubernetes:, node-file:"),
        "TYPED": (value, "its source is not KIND:WHERE"),  # a value typed where its source goes: never echoed
        "ZERO": ("file:/dev/zero", "file:/dev/zero is not a regular file"),
        "REL": ("file:relative/path", "is not an absolute path"),
        "KUBE": ("kubernetes:no-key", "is not SECRET/KEY"),
    }
    for name, (source, reason) in cases.items():
        with pytest.raises(UsageError) as caught:
            resolve(refs_of({name: source}), environ={"X": value})
        message = str(caught.value)
        assert message.startswith(f"secret {name}: ") and reason in message, message
        assert "\n" not in message and value not in message
    with pytest.raises(UsageError, match="kubernetes: sources reach jobs on kubernetes only, not on docker"):
        check_target(refs_of({"W": "kubernetes:wandb/api-key"}), "docker")
    assert parse_option("HF_TOKEN") == ("HF_TOKEN", "env:HF_TOKEN")
    assert parse_option("TOKEN=file:/run/token") == ("TOKEN", "file:/run/token")


def test_the_cli_refuses_a_missing_secret_before_anything_is_written(cli):
    result = cli("run", str(NOTEBOOKS / "smoke.ipynb"), "--secret", "NOT_SET_ANYWHERE_TOKEN")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "jupyter promote: error: secret NOT_SET_ANYWHERE_TOKEN: env:NOT_SET_ANYWHERE_TOKEN is not set in the "
        "environment jupyter-promote runs in"
    ), result.stderr
    assert not cli.runs.exists() or not any(cli.runs.iterdir())


# ---- masking where the job writes -------------------------------------------------------------------
def test_events_are_masked_in_every_form_json_writes_a_value(tmp_path, monkeypatch):
    value = 'tok"en\\with-quote-' + uuid.uuid4().hex
    monkeypatch.setenv("MY_SECRET", value)
    monkeypatch.setenv(NAMES_ENV, "MY_SECRET")
    mask.__globals__["_current"].cache_clear()
    try:
        log = EventLog(str(tmp_path / "events.jsonl"), "job1")
        event = log.emit("alert", kind="x", action="alert", message=f"saw {value} here")
        text = (tmp_path / "events.jsonl").read_text()
        assert value not in json.loads(text)["message"] and json.dumps(value)[1:-1] not in text
        assert event["message"] == f"saw {MASK} here"
    finally:
        mask.__globals__["_current"].cache_clear()


def test_a_value_written_in_pieces_to_the_log_is_masked_and_other_output_passes_unchanged(tmp_path):
    """The relay under fds 1 and 2, in a child process (it takes over the process's descriptors)."""
    value = canary()
    program = f"""
import os, sys, time
from jupyter_promote.execute.masked_output import masked_streams
with masked_streams():
    os.write(1, b"before {value[:9]}")
    time.sleep(0.4)  # a pause in the middle of the value: it is held back, not passed on
    os.write(1, b"{value[9:]} after\\n")
    os.write(2, b"progress 50%")  # a line without its end: passed on once quiet
    time.sleep(0.6)
    subprocess_out = os.system("echo child {value}")
"""
    env = {**os.environ, "CANARY_TOKEN": value, NAMES_ENV: "CANARY_TOKEN"}
    done = subprocess.run(["python", "-c", program], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 0, done.stderr
    assert value not in done.stdout + done.stderr
    assert done.stdout == f"before {MASK} after\nchild {MASK}\n"
    assert done.stderr == "progress 50%"
    assert secret_values({}) == ()
    with masked_streams():  # no secrets: the streams are not touched
        pass


# ---- the canary on every target ---------------------------------------------------------------------
def _secret_cli(target, request, tmp_path):
    if target == "kubernetes":
        cli = request.getfixturevalue("docker_cli")
        cli.env["KUBECONFIG"] = request.getfixturevalue("kube_cluster")
        registry = request.getfixturevalue("kube_registry")
        return cli, [*cli.base, f"--ImageBuilder.registry={registry}", "--push"]
    if target == "local":
        cli = request.getfixturevalue("cli")
        cli.env.update(request.getfixturevalue("small_kernel"))
        return cli, []
    cli = request.getfixturevalue("docker_cli" if target == "docker" else "cli")
    cli.env.update(request.getfixturevalue("small_kernel"))
    request.getfixturevalue({"docker": "docker_cli", "slurm": "slurm_cluster", "ray": "ray_cluster"}[target])
    return cli, ["--ImageBuilder.base_image=" + BASE_IMAGE] if target == "docker" else []


#: How each target gets the canary: the kinds of source it delivers.
SOURCES = {
    "local": lambda tmp: "env:CANARY_SOURCE",
    "docker": lambda tmp: f"file:{tmp}/token",
    "slurm": lambda tmp: f"node-file:{tmp}/token",
    "ray": lambda tmp: "env:CANARY_SOURCE",
    "kubernetes": lambda tmp: "kubernetes:promote-canary/token",
}


def _kube_secret(request, value: str) -> None:
    """The canary in a Kubernetes Secret of the users' namespace (as a cluster's admin or CI would make it)."""
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(request.getfixturevalue("kube_cluster")))
    body = {"metadata": {"name": "promote-canary"}, "stringData": {"token": value}}
    try:
        core.create_namespaced_secret("promote", body)
    except client.exceptions.ApiException as exc:
        if exc.status != 409:
            raise
        core.replace_namespaced_secret("promote-canary", "promote", body)


@pytest.mark.parametrize("target", ["local", "docker", "slurm", "ray", "kubernetes"])
def test_a_secret_reaches_the_job_and_is_found_nowhere_we_store_or_relay(target, request, tmp_path):
    value = canary()
    token = tmp_path / "token"
    token.write_text(value + "\n")
    token.chmod(0o600)
    cli, extra = _secret_cli(target, request, tmp_path)
    if target == "kubernetes":
        _kube_secret(request, value)
        extra += ["--secret", "SECOND_TOKEN=env:CANARY_SOURCE"]  # and one by value: the job's own Secret
    nb = on_kernel(NOTEBOOKS / "smoke.ipynb", SMALL_KERNEL, tmp_path / "nb", CELLS)
    source = SOURCES[target](tmp_path)
    result = cli(
        "run",
        str(nb),
        "--target",
        target,
        "--secret",
        f"CANARY_TOKEN={source}",
        *extra,
        env={"CANARY_SOURCE": value},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run = cli.only_run()
    record = job(run)
    # the job saw the value (it wrote its hash), printed it three ways, and each print reads masked
    seen = (run / "work" / "seen.txt").read_text()
    assert seen == hashlib.sha256(value.encode()).hexdigest()
    output = json.loads((run / "output.ipynb").read_text())
    printed = "".join("".join(o.get("text", "")) for c in output["cells"] for o in c.get("outputs", []))
    assert f"the token is {MASK}" in printed, printed
    # the record keeps the reference, never the value; nothing stored or relayed holds it
    assert record["secrets"]["CANARY_TOKEN"] == source
    assert leaks(run, value) == [] and leaks(nb.parent, value) == []
    assert value not in result.stdout + result.stderr
    if target == "docker":  # nor the image the job ran in
        inspect = subprocess.run(["docker", "image", "inspect", record["image"]["ref"]], capture_output=True, text=True)
        history = subprocess.run(
            ["docker", "history", "--no-trunc", record["image"]["ref"]], capture_output=True, text=True
        )
        assert value not in inspect.stdout + history.stdout


def test_a_failure_that_names_the_secret_is_reported_masked(cli, small_kernel, tmp_path):
    value = canary()
    cli.env.update(small_kernel)
    nb = on_kernel(
        NOTEBOOKS / "smoke.ipynb",
        SMALL_KERNEL,
        tmp_path / "nb",
        ["import os\nraise ValueError('rejected token ' + os.environ['CANARY_TOKEN'])"],
    )
    result = cli("run", str(nb), "--secret", "CANARY_TOKEN", env={"CANARY_TOKEN": value})
    assert result.returncode == 1, result.stdout + result.stderr
    run = cli.only_run()
    assert job(run)["message"].endswith(f"failed: ValueError: rejected token {MASK}"), job(run)["message"]
    assert leaks(run, value) == [] and value not in result.stdout + result.stderr


def test_check_says_which_secrets_a_notebook_reads_and_whether_each_will_be_there(cli, tmp_path):
    """As a new user tried it: HF_TOKEN in env_allowlist was dropped without a word; now check says so."""
    nb = on_kernel(
        NOTEBOOKS / "smoke.ipynb",
        SMALL_KERNEL,
        tmp_path / "nb",
        ["import os\ntoken = os.environ['HF_TOKEN']\npassword = os.getenv('DB_PASSWORD')"],
    )
    allowlisted = cli("check", str(nb), "--target", "docker", "--PromoteSettings.env_allowlist=HF_TOKEN")
    assert allowlisted.returncode == 1
    assert "reads environment variable 'HF_TOKEN', a credential, which is never carried by value" in allowlisted.stdout
    given = cli(
        "check",
        str(nb),
        "--target",
        "docker",
        "--secret",
        "HF_TOKEN",
        "--secret",
        "DB_PASSWORD=kubernetes:db/password",
        env={"HF_TOKEN": "hf_" + uuid.uuid4().hex},
    )
    assert given.returncode == 1, given.stdout
    assert "reads the secrets DB_PASSWORD, HF_TOKEN (given by reference)" in given.stdout
    assert "'DB_PASSWORD', which will not be there: kubernetes: sources reach jobs on kubernetes only" in given.stdout
    assert "'HF_TOKEN'" not in given.stdout.split("(given by reference)")[1]  # set here: nothing to report


def test_hostile_values_are_masked_in_every_form_and_never_break_what_is_written(cli, tmp_path):
    """What a stranger tried (review of issue 27 §3): a value escaped twice (a repr in an error, then JSON),
    longer than an event's 500 characters, on several lines (a PEM key), with a trailing newline, and values
    that are words of the records' own structure. The uuid of each is found nowhere; the job still succeeds
    in a valid notebook, or fails saying why."""
    mark = uuid.uuid4().hex
    values = {
        "ESCAPED_TOKEN": f"pa\\ss\"q'\t-{mark}-e",
        "LONG_TOKEN": f"{mark}-l-" + "x" * 1900,
        "PEM_KEY": f"-----BEGIN KEY-----\nAAAA{mark}p1\nBBBB{mark}p2\n-----END KEY-----",
        "NEWLINE_TOKEN": f"{mark}-n\n",
        "WORD_A": "status",
        "WORD_B": "true",
    }
    cells = [
        f"import json, os\nv = {{k: os.environ[k] for k in {sorted(values)!r}}}\n"
        "print(json.dumps(v['ESCAPED_TOKEN']), repr(v['ESCAPED_TOKEN']))",
        "print(v['PEM_KEY'])\nprint('auth failed for', v['NEWLINE_TOKEN'].strip())\nprint(True, 'status')",
        "import jupyter_promote as promote\npromote.report(done=1)",
        "raise ValueError(v['LONG_TOKEN'] + repr(v['ESCAPED_TOKEN']))",
    ]
    nb = on_kernel(NOTEBOOKS / "smoke.ipynb", "python3", tmp_path / "nb", cells)
    env = {f"SRC_{name}": value for name, value in values.items()}
    secrets = [f"--secret={name}=env:SRC_{name}" for name in values]
    result = cli("run", str(nb), *secrets, env=env, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    run = cli.only_run()
    record = job(run)
    assert record["reason"] == "error" and record["message"].endswith(f"ValueError: {MASK}'{MASK}'"), record["message"]
    assert leaks(run, mark) == [] and mark not in result.stdout + result.stderr
    output = json.loads((run / "output.ipynb").read_text())  # valid, its structure whole
    assert [c["cell_type"] for c in output["cells"]][-1] == "code" and "status" in json.dumps(output)
    assert all(
        e["type"] in ("status", "cell", "heartbeat", "metric", "alert", "artifacts", "step") for e in events(run)
    )


def test_every_task_of_a_group_gets_its_secrets(cli, tmp_path):
    """Review: a sweep's tasks after the first ran without them."""
    value = canary()
    nb = on_kernel(
        NOTEBOOKS / "smoke.ipynb",
        "python3",
        tmp_path / "nb",
        [
            "import os, hashlib\nopen('seen.txt', 'w').write(hashlib.sha256(os.environ['CANARY_TOKEN'].encode()).hexdigest())"
        ],
    )
    result = cli(
        "run", str(nb), "--replicas", "3", "--secret", "CANARY_TOKEN", env={"CANARY_TOKEN": value}, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    seen = sorted(p.read_text() for p in cli.runs.rglob("work/seen.txt"))
    assert seen == [hashlib.sha256(value.encode()).hexdigest()] * 3


def test_the_server_door_refuses_a_missing_source_before_accepting_the_job(tmp_path):
    """Review: POST jobs said 202 and then failed the job; the body's secrets are checked as it is read."""
    from jupyter_promote.config import PromoteSettings
    from jupyter_promote.launch.body import request_from_body

    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    settings = PromoteSettings(runs_dir=str(tmp_path / "runs"))
    for secrets, reason in (
        ({"TOKEN": "env:NOT_SET_FOR_THIS_TEST"}, "env:NOT_SET_FOR_THIS_TEST is not set"),
        ({"TOKEN": "kubernetes:creds/token"}, "reach jobs on kubernetes only, not on local"),
        ({"TOKEN": f"file:{tmp_path}/absent"}, "does not exist"),
    ):
        with pytest.raises(UsageError) as caught:
            request_from_body({"notebook": "nb.ipynb", "secrets": secrets}, lambda p: str(tmp_path / p), settings)
        assert reason in caught.value.message and caught.value.field == "secrets.TOKEN", caught.value.message
    # a site default a job cannot get here is left out, not an error
    settings.secrets = {"WANDB_API_KEY": "kubernetes:wandb/api-key", "UNSET_TOKEN": "env:NOT_SET_FOR_THIS_TEST"}
    request, _ = request_from_body({"notebook": "nb.ipynb"}, lambda p: str(tmp_path / p), settings)
    assert request.secrets == {}
