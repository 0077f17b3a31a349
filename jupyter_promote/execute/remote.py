"""A job where the submitter's filesystem is not (Ray): ``python -m jupyter_promote.execute.remote ENV CACHE``.

Started in the folder the engine unpacked the job into (``job.json``, ``job.ipynb`` and the manifest of the
notebook's folder), with the frozen environment ``ENV`` (the manifest of its lock, requirements and wheels)
and the shards and parts both name beside it as Python module paths the engine placed
(:mod:`jupyter_promote.image.shipped`: no upload outgrows the engine's limit). It puts ``inputs/`` and the
environment back together, each file checked against its manifest, makes the environment's verified venv
(from the wheels that came with it when there are any: a cluster often reaches no package index), runs the
job's runner, and sends everything back through the job's stdout (:mod:`jupyter_promote.channel`). Exits as
the runner does; 4 when the environment could not be made (or something sent did not arrive).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from ..channel.keys import take_runner_key
from ..channel.sender import Sender
from ..image.shipped import INPUTS_MANIFEST, MANIFEST, assemble
from ..rundir import RunDir
from ..runtime.events import EventLog


def _locate(name: str) -> Path | None:
    """Where the folder ``name`` the engine placed on the module path is, or None when it did not come."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def run(env_module: str, cache: str) -> int:
    run_dir = RunDir(Path.cwd())
    record = run_dir.read()
    key = take_runner_key(run_dir.path, make=False)  # out of the environment before anything starts
    with Sender(run_dir, key=key):
        try:
            env = _locate(env_module)
            if env is None:
                raise FileNotFoundError(f"the job's environment {env_module} did not come with it")
            inputs = run_dir.path / INPUTS_MANIFEST
            if inputs.is_file():  # copies: the notebook may write its inputs
                assemble(inputs, _locate, run_dir.path / "inputs", link=False)
            assemble(env / MANIFEST, _locate, run_dir.env_dir)
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
