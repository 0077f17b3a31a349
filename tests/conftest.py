"""Shared fixtures: the real ``jupyter promote`` CLI in a subprocess, with its own runs directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = Path(__file__).parent / "notebooks"
def _corpus() -> Path:
    """papermill's test notebooks, in the shared folder beside the project (or PROMOTE_CORPUS)."""
    candidates = [os.environ.get("PROMOTE_CORPUS"), ROOT.parent / "shared", Path("/work/shared")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "corpus" / "papermill-notebooks").is_dir():
            return Path(candidate) / "corpus" / "papermill-notebooks"
    return ROOT.parent / "shared" / "corpus" / "papermill-notebooks"


CORPUS = _corpus()
BIN = Path(sys.executable).parent

pytest_plugins = ["pytest_jupyter.jupyter_server"]


class CLI:
    """Runs ``jupyter promote ...`` for real, as a user would."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runs = tmp / "runs"
        self.env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(self.runs), "PYTHONUNBUFFERED": "1"}

    def command(self, *args: str) -> list[str]:
        return [str(BIN / "jupyter"), "promote", *args]

    def __call__(self, *args: str, timeout: float = 240, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args), capture_output=True, text=True, timeout=timeout, env={**self.env, **(env or {})}, cwd=self.tmp
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.tmp
        )

    def only_run(self) -> Path:
        runs = sorted(self.runs.iterdir())
        assert len(runs) == 1, runs
        return runs[0]


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]


def job(run: Path) -> dict:
    return json.loads((run / "job.json").read_text())


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    return CLI(tmp_path)
