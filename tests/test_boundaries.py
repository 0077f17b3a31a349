"""Inputs are data, never code, and bounded: parameter names and values, YAML, request bodies, messages to
chat services, output notebooks and folders (issue 24, section 7)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import NOTEBOOKS

from jupyter_promote.errors import UsageError
from jupyter_promote.job.parameters import MAX_VALUE_BYTES, collect_parameters

HOSTILE_NAME = "x = 1\nopen('pwned', 'w').write('from the parameters file')\ny"


def test_a_parameters_file_name_that_is_code_is_refused_by_the_cli(cli, tmp_path):
    # Given a notebook and a parameters file whose one name is code
    shutil.copy(NOTEBOOKS / "success.ipynb", tmp_path / "nb.ipynb")
    (tmp_path / "params.json").write_text(json.dumps({HOSTILE_NAME: 1}))
    # When the notebook is run with it
    result = cli("run", "nb.ipynb", "-f", "params.json", "--target", "local")
    # Then the run is refused in one line naming the file, and the code never ran
    print(result.returncode, result.stderr)
    assert result.returncode == 2
    assert "params.json" in result.stderr and "not a Python identifier" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "pwned").exists() and not any(tmp_path.rglob("pwned"))


@pytest.mark.parametrize(
    ("source", "origin"),
    [
        ({"yaml_strings": ["{'a b': 1}"]}, "-y"),
        ({"yaml_strings": ["class: 1"]}, "-y"),
        ({"yaml_strings": ["1: 2"]}, "-y"),
        ({"base64_yaml": "eyJhIGIiOiAxfQ=="}, "-b"),  # {"a b": 1}
        ({"pairs": [("import", "1")]}, "-p import"),
    ],
)
def test_every_parameter_name_is_checked_wherever_it_comes_from(source, origin):
    # Given a parameter name that is no Python identifier, from each way parameters come in
    # When the parameters are collected
    with pytest.raises(UsageError) as refused:
        collect_parameters(**source)
    # Then the error is one line naming where it came from
    print(refused.value)
    assert str(refused.value).startswith(origin + ":") and "\n" not in str(refused.value)


def test_a_yaml_alias_bomb_is_refused_before_it_grows():
    # Given a billion-laughs YAML document: nine levels of ten aliases, 10**9 values once expanded
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    bomb = "\n".join(lines)
    # When it is given with -y
    with pytest.raises(UsageError) as refused:
        collect_parameters(yaml_strings=[bomb])
    # Then it is refused saying why, and a document that uses an alias a few times still loads
    print(refused.value)
    assert "expands to more than" in str(refused.value)
    assert collect_parameters(yaml_strings=["base: &b [1, 2]\nagain: *b"]) == {"base": [1, 2], "again": [1, 2]}
    with pytest.raises(UsageError, match="refers to itself"):
        collect_parameters(yaml_strings=["loop: &l [*l]"])


def test_parameter_values_have_a_size_limit():
    # Given a value just over the documented limit, and one nested far too deep
    big = "x" * (MAX_VALUE_BYTES + 1)
    deep = "[" * 5000 + "]" * 5000
    # When each is collected
    # Then each is refused in one line naming the parameter
    with pytest.raises(UsageError, match="big is 64 KiB, more than a parameter carries"):
        collect_parameters(raw_pairs=[("big", big)])
    with pytest.raises(UsageError) as refused:
        collect_parameters(yaml_strings=[f"deep: {deep}"])
    print(refused.value)
    assert "nested too deep" in str(refused.value)
    assert collect_parameters(raw_pairs=[("fits", "x" * 1000)]) == {"fits": "x" * 1000}


def test_a_sweep_sets_file_alias_bomb_is_refused_by_the_cli(cli, tmp_path):
    # Given a sweep sets file of one set whose values are aliases used over and over (10**6 values)
    shutil.copy(NOTEBOOKS / "success.ipynb", tmp_path / "nb.ipynb")
    lines = ["- x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 7):
        lines.append(f"  x{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    (tmp_path / "sets.yaml").write_text("\n".join(lines) + "\n")
    # When a sweep is asked with it
    result = cli("sweep", "nb.ipynb", "-f", "sets.yaml", "--target", "local")
    # Then it is refused in one line, before any job
    print(result.returncode, result.stderr)
    assert result.returncode == 2 and "sets.yaml: YAML expands to more than" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "runs").exists()


def test_request_bodies_nested_deep_are_400_not_500(tmp_path):
    # Given a live server, bodies nested 500 to 989 deep (json.loads still reads them) in each field, and a
    # parameter value over the size limit
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    from live_server import TOKEN, serving

    def post(path: str, text: str) -> tuple[int, str]:
        request = Request(
            f"{live.url}/jupyter-promote/{path}",
            data=text.encode(),
            method="POST",
            headers={"Authorization": f"token {TOKEN}"},
        )
        try:
            with urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except HTTPError as exc:
            return exc.code, exc.read().decode()

    with serving(tmp_path, [NOTEBOOKS / "success.ipynb"]) as live:
        answers = []
        for depth in (500, 700, 989):
            deep = "[" * depth + "]" * depth
            for field in ("parameters", "sweep", "resources", "monitor", "notify", "kernel", "notebook"):
                value = f'{{"x": {deep}}}' if field in ("parameters", "resources", "monitor") else deep
                answers.append((field, depth, *post("jobs", f'{{"notebook": "success.ipynb", "{field}": {value}}}')))
            answers.append(("freeze", depth, *post("freeze", f'{{"notebook": "success.ipynb", "gpus": {deep}}}')))
        big = json.dumps({"notebook": "success.ipynb", "parameters": {"big": "x" * (MAX_VALUE_BYTES + 1)}})
        answers.append(("big value", 0, *post("jobs", big)))
        # When each is posted
        # Then each answer is a 400 with a one-line message, never a 500
        print([(field, depth, code) for field, depth, code, _ in answers if code != 400])
        assert all(code == 400 for _, _, code, _ in answers), [a[:3] for a in answers if a[2] != 400]
        assert all("\n" not in json.loads(body)["message"] for *_, body in answers)


def test_chat_messages_show_what_a_notebook_printed_literally():
    # Given a failed job whose notebook name pings the channel and whose message hides a link
    from jupyter_promote.notify.message import Notice

    job = {
        "id": "j1",
        "notebook": "<!channel>.ipynb",
        "target": "local",
        "state": "failed",
        "reason": "error",
        "message": "ValueError: see <http://evil.example|the docs> or [the docs](http://evil.example) & more",
    }
    notice = Notice("failed", job)
    # When it is shaped for Slack and for a Teams workflow
    slack = json.dumps(notice.payload("slack"))
    teams = json.dumps(notice.payload("teams"))
    print(slack[:300], teams[-300:], sep="\n")
    # Then Slack gets no mention and no link in disguise, and Teams no markdown link
    assert "<!channel>" not in slack and "<http://evil" not in slack and "&lt;!channel&gt;" in slack
    assert "&amp; more" in slack
    message = notice.payload("teams")["attachments"][0]["content"]["body"][1]["facts"][0]["value"]
    assert re.search(r"(?<!\\)[\[\]<>]", message) is None, message  # every bracket escaped


def test_open_output_serves_a_notebook_that_is_not_trusted(tmp_path):
    # Given a notebook saved by JupyterLab as trusted (the notebook's and each cell's metadata.trusted)
    from conftest import wait_for
    from live_server import serving

    nb = json.loads((NOTEBOOKS / "success.ipynb").read_text())
    nb["metadata"]["trusted"] = True
    for cell in nb["cells"]:
        cell["metadata"]["trusted"] = True
    (tmp_path / "trusted.ipynb").write_text(json.dumps(nb))
    (tmp_path / "server").mkdir()
    with serving(tmp_path / "server", [tmp_path / "trusted.ipynb"]) as live:
        # When it runs as a job and its output is fetched, as "Open output" fetches it
        job_id = live.call("POST", "jobs", body={"notebook": "trusted.ipynb"})["id"]
        final = ("succeeded", "failed", "cancelled")
        wait_for(lambda: live.call("GET", "jobs", job_id)["state"] in final, 180, "the job to end")
        output = live.call("GET", "jobs", job_id, "output")
    # Then neither the notebook nor any cell says trusted: its HTML and JavaScript do not run when opened
    marks = [output["metadata"].get("trusted")] + [c["metadata"].get("trusted") for c in output["cells"]]
    print(marks)
    assert marks == [None] * (1 + len(output["cells"]))


def test_run_folders_are_private_and_bad_out_values_are_one_line(cli, tmp_path):
    # Given a notebook, a world-writable empty --out folder made beforehand, and no runs folder yet
    shutil.copy(NOTEBOOKS / "success.ipynb", tmp_path / "nb.ipynb")
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    (tmp_path / "a-file").write_text("x")
    # When a job runs into the --out folder, and another into the runs folder
    assert cli("run", "nb.ipynb", "--out", "open").returncode == 0
    assert cli("run", "nb.ipynb").returncode == 0
    # Then both are the user's alone, the runs folder too
    modes = {name: oct((tmp_path / name).stat().st_mode & 0o777) for name in ("open", "runs")}
    print(modes)
    assert modes == {"open": "0o700", "runs": "0o700"}
    # And --out values that cannot be a run directory are one line each, never a traceback
    for out in ("a-file/run", "a-file", "/proc/1/nope/run"):
        result = cli("run", "nb.ipynb", "--out", out)
        print(out, result.returncode, result.stderr.strip())
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.strip().count("\n") == 0 and out in result.stderr


def test_a_detached_sweeps_folder_made_world_writable_is_tightened(cli, tmp_path):
    # Given a runs folder whose .detached folder someone made world-writable
    shutil.copy(NOTEBOOKS / "success.ipynb", tmp_path / "nb.ipynb")
    detached = cli.runs / ".detached"
    detached.mkdir(parents=True)
    detached.chmod(0o777)
    # When a sweep is detached
    result = cli("sweep", "nb.ipynb", "-p", "x", "1", "2", "--detach")
    # Then the folder holding its log is the user's alone
    print(result.returncode, oct(detached.stat().st_mode & 0o777))
    assert result.returncode == 0, result.stderr
    assert detached.stat().st_mode & 0o777 == 0o700
    sweep_id = next(detached.glob("*.log")).stem
    assert cli("attach", sweep_id).returncode == 0
