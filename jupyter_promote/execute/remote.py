"""A job where the submitter's filesystem is not (Ray): ``python -m jupyter_promote.execute.remote ENV CACHE``.

Started in the folder the engine unpacked the job into (``job.json``, ``job.ipynb``, ``inputs/``: the
notebook's folder), with the frozen environment ``ENV`` (lock, requirements, wheels) beside it as a Python
module path the engine placed. It makes the environment's verified venv (from the wheels that came with
it when there are any: a cluster often reaches no package index), runs the job's runner, and sends
everything back through the job's stdout (:mod:`jupyter_promote.channel`). Exits as the runner does; 4
when the environment could not be made.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from ..channel.keys import take_runner_key
from ..channel.sender import Sender
from ..image.shipped import PARTS_FILE, assemble
from ..rundir import RunDir
from ..runtime.events import EventLog


def _module_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the job's environment {name} did not come with it")
    return Path(next(iter(spec.submodule_search_locations)))


def run(env_module: str, cache: str) -> int:
    run_dir = RunDir(Path.cwd())
    record = run_dir.read()
    key = take_runner_key(run_dir.path, make=False)  # out of the environment before anything starts
    with Sender(run_dir, key=key):
        try:
            env = _module_dir(env_module)
            listing = env / PARTS_FILE
            parts = json.loads(listing.read_text()) if listing.is_file() else {}
            names = [name for entry in parts.values() for name in entry["parts"]]
            assemble(env, {name: _module_dir(name) for name in names}, run_dir.env_dir)
            wheelhouse = run_dir.env_dir / "wheelhouse"
            if wheelhouse.is_dir():  # the lock's wheels came along: install from them alone
                os.environ.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)})
            from ..image.venv import ensure

            prefix = ensure(run_dir.env_dir, cache or Path.home() / ".cache" / "jupyter-promote" / "venvs")
        except Exception as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
            message = f"the job's environment could not be made on this node: {lines[0]}"
            if len(lines) > 1:  # the tool's own last word (pip's error) says why
                message += f" {lines[-1]}"
            print(
                f"jupyter-promote: the job's environment could not be made on this node: {exc}",
                file=sys.stderr,
                flush=True,
            )
            EventLog(str(run_dir.events), record.id, key=key).emit(
                "status", state="failed", reason="environment", message=message, source="node"
            )
            return 4
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            filter(None, [str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH")])
        )
        os.environ["JUPYTER_PROMOTE_KERNEL"] = "promote-frozen"
        os.environ["PROMOTE_INPUTS"] = str(run_dir.path / "inputs")
        from .runner import run as run_job

        return run_job(str(run_dir.path))


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m jupyter_promote.execute.remote ENV_MODULE [VENV_CACHE]", file=sys.stderr)
        return 2
    return run(argv[0], argv[1] if len(argv) == 2 else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
