"""The process boundary as a contract: which of jupyter_promote's modules may import which.

Three processes share the package, each with its own rules:

- the KERNEL, the notebook's own kernel (any Python from 3.8, any environment): the in-job runtime that the
  injected cells import, the package's ``__init__`` it comes through, and the introspection program that
  freeze runs by path (``python -I introspect.py``). Standard library only; a few optional packages
  (:data:`KERNEL_OPTIONAL_PACKAGES`) only inside a function, when the notebook's environment has them.
- the JOB, the runner process a target starts (``python -m jupyter_promote.execute.runner``, ``.pod``,
  ``.remote``), and the channel's sender in it: the job's side, the :data:`SHARED` modules and the kernel's.
- the SUBMITTER, everything else (CLI, server, targets): its own modules, the :data:`SHARED` ones, and of the
  kernel's and the job's only what :data:`ALLOWED_ACROSS` names, each with the reason.

Checked over the source's syntax, imports inside functions included; importing ``a.b.c`` counts as importing
the package ``a.b`` too when its ``__init__`` imports anything, since Python runs it first. A crossing fails
naming the module, the file and the line: ``python scripts/import_contract.py`` (a lint step of
scripts/test.sh). tests/test_import_contract.py proves it fails on a copy of the package with a forbidden import.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "jupyter_promote"

KERNEL, JOB, SHARED, SUBMITTER = "kernel", "job", "shared", "submitter"

# The table: module -> the process it runs in. ``name.*`` is the package ``name`` and every module under it;
# a plain name is that module alone. The longest match wins; a module named nowhere is the submitter's.
# (When folders move, e.g. runtime/ -> kernel/, execute/ -> job/, update the names here and nothing else.)
SIDES: dict[str, str] = {
    "jupyter_promote": KERNEL,  # the package's __init__: the kernel imports it first (the runtime overlay)
    "jupyter_promote._version": KERNEL,
    "jupyter_promote.runtime.*": KERNEL,
    "jupyter_promote.freeze.introspect": KERNEL,
    "jupyter_promote.execute.*": JOB,
    "jupyter_promote.channel.sender": JOB,
    "jupyter_promote.errors": SHARED,
    "jupyter_promote.models": SHARED,
    "jupyter_promote.rundir": SHARED,
    "jupyter_promote.channel": SHARED,
    "jupyter_promote.channel.wire": SHARED,
    "jupyter_promote.channel.keys": SHARED,
    "jupyter_promote.job": SHARED,
    "jupyter_promote.job.cells": SHARED,  # the one cell-numbering rule: runner, engine, CLI, server
    "jupyter_promote.job.notebook": SHARED,
    "jupyter_promote.monitor_settings": SHARED,
    "jupyter_promote.data.*": SHARED,  # --data: parsed and checked by the submitter, fetched by the job's runner
    "jupyter_promote.redact": SHARED,  # credentials out of URLs: stdlib only, for every process  # the monitor checks' settings, read by models (the job record)
}

#: The sides each side may import from (its own included), besides :data:`ALLOWED_ACROSS`.
MAY_IMPORT: dict[str, frozenset[str]] = {
    KERNEL: frozenset({KERNEL}),
    SHARED: frozenset({SHARED, KERNEL}),
    JOB: frozenset({JOB, SHARED, KERNEL}),
    SUBMITTER: frozenset({SUBMITTER, SHARED}),
}

#: Modules of another side that a side imports all the same: the boundary's published surface, with why.
ALLOWED_ACROSS: dict[str, dict[str, str]] = {
    SUBMITTER: {
        "jupyter_promote": "the package itself: every module's parent",
        "jupyter_promote._version": "the version the CLI prints and job notebooks record",
        "jupyter_promote.runtime": "the runtime package's __init__, run before any of its modules (stdlib only)",
        "jupyter_promote.runtime.events": "the events log: one format and one writer, kernel and submitter",
        "jupyter_promote.runtime.signing": "the events' HMAC: the submitter verifies what the runner signed",
        "jupyter_promote.runtime.report": "the metric payload promote.report() writes, which parity reads",
        "jupyter_promote.runtime.masking": "the variable naming a job's secrets and the shortest value it masks",
        "jupyter_promote.runtime.checkpoints": "the variable naming a job's checkpoint folder (a target's volume)",
        "jupyter_promote.runtime.inputs": "the variables naming a job's inputs and its storage's options",
        "jupyter_promote.freeze.introspect": "fingerprint(): the freeze cache computes it from outside the kernel",
        "jupyter_promote.execute.workdir": "SKIPPED: the names a job's work/ leaves out, which packing shares",
    },
    JOB: {
        "jupyter_promote.freeze": "observe(): the runner introspects the kernel's interpreter where the job ran",
        "jupyter_promote.image": "the package's __init__: its names are imported when first asked for (PEP 562)",
        "jupyter_promote.image.shipped": "assemble(): the node puts the shipped environment together (Ray)",
        "jupyter_promote.image.venv": "the node's verified venv from the lock (Ray, Slurm without containers)",
    },
    SHARED: {},
    KERNEL: {},
}

#: Third-party packages a kernel module may import, inside a function only (never at import time).
KERNEL_OPTIONAL_PACKAGES = frozenset({"torch", "numpy", "pynvml", "IPython"})

#: Kernel modules run by path as a program of their own: they import nothing from the package at all.
STANDALONE = frozenset({"jupyter_promote.freeze.introspect"})

#: The oldest Python a kernel may have: kernel modules must parse there.
OLDEST_KERNEL_PYTHON = (3, 8)

#: Single imports that cross the boundary, each with its reason; the test fails when one is no longer made.
#: (importer, imported module or the package it runs) -> why. Entries marked "debt" go with the fix they name.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("jupyter_promote", "jupyter_promote.server.app"): (
        "_jupyter_server_extension_points(): the entry point Jupyter Server calls; the kernel never does"
    ),
}


def side_of(module: str) -> str:
    """The process ``module`` runs in, from :data:`SIDES`."""
    best, side = -1, SUBMITTER
    for name, name_side in SIDES.items():
        prefix = name[:-2] if name.endswith(".*") else None
        matches = module == name or (prefix is not None and (module == prefix or module.startswith(prefix + ".")))
        if matches and len(name) > best:
            best, side = len(name), name_side
    return side


@dataclass(frozen=True)
class Import:
    """One module an import statement makes Python import (``named``: the module the statement names; ``lazy``:
    inside a function, or under ``if TYPE_CHECKING``, so not when the module is imported)."""

    importer: str
    imported: str
    named: str
    path: str
    line: int
    lazy: bool


def module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_import_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        if type_checking or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines |= {n.lineno for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)}
    return lines


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str], inert: set[str]
) -> list[tuple[str, str]]:
    """Every module the statement imports, with the module it names: the named ones, names that are modules,
    and their parent packages but those whose ``__init__`` imports nothing (``inert``)."""
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - (node.level - 1)]
            source = ".".join([*base, node.module] if node.module else base)
        else:
            source = node.module or ""
        named = [source] + [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in modules]
    out: list[tuple[str, str]] = []
    for name in named:
        parts = name.split(".")
        parents = [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) not in inert]
        out += [(target, name) for target in [*parents, name] if (target, name) not in out]
    return out


def imports(package_dir: Path) -> list[Import]:
    """Every import of every module under ``package_dir``, top-level and inside functions."""
    files = sorted(package_dir.rglob("*.py"))
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path)) for path in files}
    modules = {module_name(p, package_dir) for p in files}
    inert = {
        module_name(path, package_dir)
        for path, tree in trees.items()
        if path.name == "__init__.py" and not any(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(tree))
    }
    found = []
    for path, tree in trees.items():
        module = module_name(path, package_dir)
        lazy = _lazy_import_lines(tree)
        rel = str(path.relative_to(package_dir.parent))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target, named in _targets(node, module, path.name == "__init__.py", modules, inert):
                    found.append(Import(module, target, named, rel, node.lineno, node.lineno in lazy))
    return found


def _violation(imp: Import) -> str | None:
    """Why ``imp`` breaks the contract, or None."""
    side = side_of(imp.importer)
    top = imp.imported.split(".")[0]
    where = f"{imp.path}:{imp.line}: {side} module {imp.importer} imports {imp.imported}"
    if top != PACKAGE:
        if side != KERNEL or top in sys.stdlib_module_names:
            return None
        if top not in KERNEL_OPTIONAL_PACKAGES:
            return f"{where}: the kernel has the standard library only (optional: {sorted(KERNEL_OPTIONAL_PACKAGES)})"
        return None if imp.lazy else f"{where}: at import time; the kernel imports {top} inside a function"
    if imp.importer in STANDALONE:
        return f"{where}: it runs by path as a program of its own and imports nothing from {PACKAGE}"
    if imp.importer == imp.imported or imp.importer.startswith(imp.imported + "."):
        return None  # its own parent package: already imported before it
    target_side = side_of(imp.imported)
    if target_side in MAY_IMPORT[side] or imp.imported in ALLOWED_ACROSS[side]:
        return None
    if (imp.importer, imp.imported) in EXCEPTIONS or (imp.importer, imp.named) in EXCEPTIONS:
        return None
    return f"{where} ({target_side}): a {side} module may import {sorted(MAY_IMPORT[side])} and {sorted(ALLOWED_ACROSS[side])}"


def violations(package_dir: Path) -> list[str]:
    """Every import under ``package_dir`` that breaks the contract, as ``file:line: what``."""
    found = [_violation(imp) for imp in imports(package_dir)]
    return sorted({v for v in found if v is not None})


def old_python_syntax(package_dir: Path) -> list[str]:
    """Kernel modules that do not parse on :data:`OLDEST_KERNEL_PYTHON`, as ``file:line: error``."""
    bad = []
    for path in sorted(package_dir.rglob("*.py")):
        if side_of(module_name(path, package_dir)) != KERNEL:
            continue
        try:
            ast.parse(path.read_text(encoding="utf-8"), feature_version=OLDEST_KERNEL_PYTHON)
        except SyntaxError as exc:
            bad.append(f"{path.relative_to(package_dir.parent)}:{exc.lineno}: not Python 3.8 syntax: {exc.msg}")
    return bad


if __name__ == "__main__":
    problems = violations(ROOT / PACKAGE) + old_python_syntax(ROOT / PACKAGE)
    print("\n".join(problems) or "import contract: kept")
    sys.exit(1 if problems else 0)
