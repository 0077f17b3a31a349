"""The import contract (scripts/import_contract.py) holds on the package, and fails, naming the file and the
line, on a copy of the package with a forbidden import added."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("import_contract", ROOT / "scripts" / "import_contract.py")
assert _spec is not None and _spec.loader is not None
contract = importlib.util.module_from_spec(_spec)
sys.modules["import_contract"] = contract  # dataclasses look their module up while the class is made
_spec.loader.exec_module(contract)
PACKAGE = contract.PACKAGE


def test_every_import_keeps_to_its_process():
    found = contract.violations(ROOT / PACKAGE)
    assert not found, "imports across the process boundary:\n" + "\n".join(found)


def test_kernel_modules_parse_on_the_oldest_python_a_kernel_may_have():
    found = contract.old_python_syntax(ROOT / PACKAGE)
    assert not found, "\n".join(found)


def test_every_exception_is_still_needed():
    made = {(imp.importer, name) for imp in contract.imports(ROOT / PACKAGE) for name in (imp.imported, imp.named)}
    stale = [f"{a} -> {b}" for (a, b) in contract.EXCEPTIONS if (a, b) not in made]
    assert not stale, "EXCEPTIONS names imports that are no longer made (remove them): " + ", ".join(stale)


def test_the_table_names_modules_that_exist():
    modules = {contract.module_name(p, ROOT / PACKAGE) for p in (ROOT / PACKAGE).rglob("*.py")}
    named = [n[:-2] if n.endswith(".*") else n for n in contract.SIDES]
    named += [m for allowed in contract.ALLOWED_ACROSS.values() for m in allowed] + list(contract.STANDALONE)
    missing = sorted(n for n in named if n not in modules)
    assert not missing, f"the contract names modules that do not exist (moved? update the table): {missing}"


def _copy_with(tmp_path: Path, module_file: str, line: str) -> tuple[Path, int]:
    """A copy of the package with ``line`` appended to ``module_file``: the copy and that line's number."""
    copy = tmp_path / PACKAGE
    shutil.copytree(ROOT / PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "labextension"))
    target = copy / module_file
    text = target.read_text(encoding="utf-8").rstrip("\n") + "\n"
    target.write_text(text + line + "\n", encoding="utf-8")
    return copy, text.count("\n") + 1


def test_a_kernel_module_importing_the_submitter_inside_a_function_fails_naming_the_line(tmp_path):
    # Given the package with one import from the submitter's side inside a function of the kernel's runtime
    copy, line = _copy_with(tmp_path, "runtime/events.py", "def _leak():\n    from ..models import JobState")
    # When the contract is checked
    found = contract.violations(copy)
    # Then exactly that import is named, by file and line, with the sides
    print(found)
    assert len(found) == 1
    assert found[0].startswith(f"jupyter_promote/runtime/events.py:{line + 1}: kernel module ")
    assert "imports jupyter_promote.models (shared)" in found[0]


def test_a_kernel_module_importing_a_third_party_package_at_import_time_fails(tmp_path):
    # Given the kernel's runtime importing numpy at import time, and yaml (not in the kernel's list) lazily
    copy, line = _copy_with(tmp_path, "runtime/gpu.py", "import numpy\ndef _yaml():\n    import yaml")
    # When the contract is checked
    found = contract.violations(copy)
    # Then both are named: numpy as an import-time import, yaml as not the standard library
    print(found)
    assert len(found) == 2
    assert f"runtime/gpu.py:{line}: kernel module jupyter_promote.runtime.gpu imports numpy: at import time" in found[0]
    assert f"runtime/gpu.py:{line + 2}:" in found[1] and "the standard library only" in found[1]


def test_the_submitter_importing_the_kernels_internals_fails(tmp_path):
    # Given a CLI module importing the monitor, which is the kernel's and not in its allowed list
    copy, line = _copy_with(tmp_path, "cli/signals.py", "from ..runtime import monitor")
    # When the contract is checked
    found = contract.violations(copy)
    # Then the import of the monitor is named, by file and line
    print(found)
    assert len(found) == 1
    assert found[0].startswith(f"jupyter_promote/cli/signals.py:{line}: submitter module jupyter_promote.cli.signals")
    assert "imports jupyter_promote.runtime.monitor (kernel)" in found[0]


def test_the_introspection_program_importing_the_package_fails(tmp_path):
    # Given the introspection program (run by path) importing a module of the package
    copy, line = _copy_with(tmp_path, "freeze/introspect.py", "from jupyter_promote import _version")
    # When the contract is checked
    found = contract.violations(copy)
    # Then it is named: the program runs alone, where the package is not importable
    print(found)
    assert found and all(f"freeze/introspect.py:{line}:" in f and "program of its own" in f for f in found)


def test_a_job_module_importing_the_server_fails(tmp_path):
    # Given the runner importing the server's job store
    copy, line = _copy_with(tmp_path, "execute/supervisor.py", "from ..server import store")
    # When the contract is checked
    found = contract.violations(copy)
    # Then the import is named as the job's
    print(found)
    assert found and all(f.startswith(f"jupyter_promote/execute/supervisor.py:{line}: job module ") for f in found)


def test_a_kernel_module_may_name_an_optional_package_for_the_type_checker_only(tmp_path):
    # Given the kernel's runtime importing torch under `if TYPE_CHECKING:` (never when the module is imported)
    copy, _ = _copy_with(
        tmp_path, "runtime/gpu.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch"
    )
    # When the contract is checked
    found = contract.violations(copy)
    # Then it holds
    assert found == []


def test_a_node_that_assembles_the_shipped_environment_never_imports_the_docker_builder():
    # Given a fresh interpreter, as a Ray worker or a Slurm node starts the job process
    code = (
        "import sys, jupyter_promote.image.shipped, jupyter_promote.image.venv\n"
        "print(sorted(m for m in sys.modules if m.startswith('jupyter_promote.image.')))"
    )
    # When it imports what puts the job's environment together
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # Then the image builder and its build planning stayed out
    assert "jupyter_promote.image.builder" not in out and "jupyter_promote.image.plan" not in out, out
