"""The image recipe without an engine: the rendered Dockerfile (golden), pins, pip settings, the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jupyter_promote.image import network, recipe
from jupyter_promote.image.verify import Verification, diff_packages, python_warnings

GOLDEN = Path(__file__).parent / "golden"
LOCK = {
    "content_hash": "sha256:" + "ab" * 32,
    "python": {"version": "3.11.7", "implementation": "CPython"},
    "packages": [
        {"name": "numpy", "version": "2.4.6", "source": {"kind": "index"}},
        {
            "name": "mylib",
            "version": "0.1",
            "source": {"kind": "editable", "wheel": "wheels/mylib-0.1-py3-none-any.whl"},
        },
        {
            "name": "torch",
            "version": "2.5.1+cu121",
            "source": {"kind": "index", "index": "https://download.pytorch.org/whl/cu121"},
        },
    ],
}


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name}: rerun with UPDATE_GOLDEN=1 if the change is intended"


def test_dockerfile_network_mode_matches_golden():
    options = recipe.BuildOptions(
        base_image="python:3.11.7-slim", secrets=("ca", "pipconf"), system_packages=("libgomp1",)
    )
    text = recipe.render_dockerfile(LOCK, options, has_local_wheels=True)
    _golden("network.Dockerfile", text)
    # secrets are mounted for the install steps only; no index URL or bundle is written into the file
    assert "download.pytorch.org" not in text and "COPY ca" not in text
    assert text.count("--mount=type=secret,id=ca") == 2
    assert "syntax=" not in text  # a syntax line would pull a frontend image
    # pip's downloads are kept in a BuildKit cache mount (a one-package change downloads one package), not a layer
    assert text.count("--mount=type=cache,id=jupyter-promote-pip,target=/var/cache/promote-pip") == 2
    assert "--no-cache-dir" not in text and "/opt/promote/tools" not in text


def test_dockerfile_wheelhouse_mode_matches_golden():
    options = recipe.BuildOptions(base_image="jupyter-promote/base:bookworm", wheelhouse=True)
    text = recipe.render_dockerfile(LOCK, options, has_local_wheels=False)
    _golden("wheelhouse.Dockerfile", text)
    assert text.count("--no-index --find-links /tmp/wheelhouse") == 2
    assert "COPY wheelhouse" not in text  # bind-mounted for the step, never a layer
    assert "type=cache" not in text and text.count("--no-cache-dir") == 2  # hermetic: nothing from earlier builds


def test_layers_go_stable_first_and_the_notebook_is_never_in_them():
    text = recipe.render_dockerfile(LOCK, recipe.BuildOptions(base_image="b"), has_local_wheels=False)
    image = text[text.index("FROM b\n") :]  # the final stage; the runner stage before it builds in parallel
    order = [
        image.index(s)
        for s in (
            "FROM b",
            "COPY requirements.lock.txt",
            "--python /opt/promote/env/bin/python install",
            "COPY --from=runner",
        )
    ]
    assert order == sorted(order)
    assert "FROM b AS runner" in text and "COPY runner/" in text[: text.index("FROM b\n")]
    assert ".ipynb" not in text


def test_pins_have_no_index_lines_and_point_local_wheels_into_the_image():
    pins = recipe.pinned_requirements(LOCK)
    assert "numpy==2.4.6" in pins and "/opt/promote/lock/wheels/mylib-0.1-py3-none-any.whl" in pins
    assert "--" not in pins
    assert "mylib" not in recipe.pinned_requirements(LOCK, local_wheels=False)


def test_pip_conf_keeps_reachable_indexes_and_adds_inferred_ones():
    settings = {"extra-index-url": ["https://pypi.example/simple"], "trusted-host": ["pypi.example"]}
    conf = network.render_pip_conf(settings, LOCK)
    assert conf.startswith("[global]\n")
    assert "https://pypi.example/simple" in conf and "https://download.pytorch.org/whl/cu121" in conf
    assert network._reachable_from_a_build("https://x") and not network._reachable_from_a_build(
        "file:///opt/pypi/simple"
    )


def test_runner_requirements_pin_the_runner_closure():
    pins = recipe.runner_requirements("3.11.7")
    names = {line.split("==")[0] for line in pins.splitlines() if "==" in line}
    assert {"papermill", "nbclient", "nbformat", "jupyter-client", "fastjsonschema", "pyyaml"} <= names
    assert "jupyter-server" not in names and "jupyterlab" not in names


def test_verification_diff_names_missing_extra_and_other_versions():
    image = {
        "packages": [
            {"name": "NumPy", "version": "2.4.5"},
            {"name": "six", "version": "1.17.0"},
            {"name": "jupyter_promote", "version": "0.1"},
        ]
    }
    lock = {"packages": [{"name": "numpy", "version": "2.4.6"}, {"name": "torch", "version": "2.5.1"}]}
    diff = diff_packages(lock, image)
    assert [(d["name"], d["problem"]) for d in diff] == [
        ("numpy", "other version"),
        ("six", "extra"),
        ("torch", "missing"),
    ]
    table = Verification(ok=False, python="3.11.2", differences=diff).table()
    assert table.splitlines()[0].split() == ["package", "lock", "image", "problem"]
    assert "2.4.5" in table and "missing" in table
    assert python_warnings("3.11.7", "3.11.7") == []
    assert "patch-level" in python_warnings("3.11.7", "3.11.2")[0]
    json.dumps(Verification(ok=True, python="3.11.7").to_json())
