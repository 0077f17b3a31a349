"""The runner starts the job's kernel before its heavy imports, and imports papermill without the IRI grammars.

Each case runs in a fresh interpreter: what a process has imported is the thing under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_the_kernel_boots_before_papermill_nbformat_or_jsonschema_are_imported(tmp_path: Path) -> None:
    # Given a fresh runner process, When it starts the job's kernel in the job's folder
    seen = _run(
        f"""
        import json, sys
        from jupyter_promote.execute import early_kernel
        km = early_kernel.start("python3", {str(tmp_path)!r})
        heavy = sorted(m for m in ("papermill", "nbformat", "nbclient", "jsonschema") if m in sys.modules)
        alive = km is not None and km.has_kernel
        pid = km.provisioner.process.pid if alive else None
        early_kernel.shut_down(km)
        print(json.dumps({{"heavy": heavy, "alive": alive, "after": km.has_kernel, "pid": pid}}))
        """,
        tmp_path,
    )
    # Then the kernel runs with none of papermill's imports made, and is stopped when the runner is done with it
    assert seen["alive"] is True and seen["heavy"] == [] and seen["after"] is False


def test_a_kernel_that_cannot_start_early_is_left_to_nbclient(tmp_path: Path) -> None:
    # Given a kernel name no kernelspec has, When the runner tries to start it early
    seen = _run(
        """
        import json
        from jupyter_promote.execute import early_kernel
        print(json.dumps({"km": early_kernel.start("no-such-kernel-here", ".") is None}))
        """,
        tmp_path,
    )
    # Then nothing is raised here: nbclient starts the kernel and reports NoSuchKernel as it always did
    assert seen["km"] is True


def test_papermill_is_imported_without_the_iri_grammars_and_nbformat_still_validates(tmp_path: Path) -> None:
    # Given a runner process, When it imports papermill as the runner does
    seen = _run(
        """
        import json, sys
        from jupyter_promote.execute.papermill_import import import_papermill
        papermill = import_papermill()
        import nbformat
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        nbformat.validate(nb)
        bad = dict(nb, cells=[{"cell_type": "code"}])
        try:
            nbformat.validate(nbformat.from_dict(bad))
            refused = False
        except nbformat.ValidationError:
            refused = True
        print(json.dumps({"grammars": "rfc3987_syntax" in sys.modules, "engine": "promote" in
            papermill.engines.papermill_engines._engines, "refused": refused,
            "marker_left": sys.modules.get("rfc3987_syntax", 0) is None}))
        """,
        tmp_path,
    )
    # Then the grammars were never compiled, the promote engine is registered, and nbformat's schema still refuses
    # a malformed notebook (its schemas declare no format the grammars check); no marker is left behind
    assert seen == {"grammars": False, "engine": True, "refused": True, "marker_left": False}


def test_a_runner_cancelled_while_its_kernel_starts_leaves_no_kernel_behind(tmp_path: Path) -> None:
    # Given a runner whose kernel was launched, When a cancel (SIGTERM -> KeyboardInterrupt) lands before
    # start() returns the kernel manager
    seen = _run(
        f"""
        import json, os, time
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_promote.execute import early_kernel
        launched = []
        original = AsyncKernelManager._async_post_start_kernel
        async def cancelled(self, **kw):
            await original(self, **kw)
            launched.append(self.provisioner.process.pid)
            raise KeyboardInterrupt
        AsyncKernelManager._async_post_start_kernel = cancelled
        try:
            early_kernel.start("python3", {str(tmp_path)!r})
            raised = False
        except KeyboardInterrupt:
            raised = True
        time.sleep(0.5)
        try:
            os.kill(launched[0], 0)
            alive = os.waitpid(launched[0], os.WNOHANG) == (0, 0)
        except (ProcessLookupError, ChildProcessError):
            alive = False
        print(json.dumps({{"raised": raised, "launched": len(launched), "alive": alive}}))
        """,
        tmp_path,
    )
    # Then the cancel goes on unwinding the runner, and the kernel it launched is stopped
    assert seen == {"raised": True, "launched": 1, "alive": False}
