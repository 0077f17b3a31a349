"""Per-cell hazards: paths that exist only here, environment variables the job does not get, CUDA without a GPU."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .findings import CREDENTIAL_WORDS, ENV_PRESENT, ENV_SET_BY_TARGET, NOT_A_PATH, RELATIVE, SCRATCH_DIRS, Finding


def _path_problem(text: str) -> str | None:
    if NOT_A_PATH.search(text):
        return None
    if text == "~" or text.startswith("~/"):
        return f"path '{text}' is under '~', and '~' is the job's home, not yours; {RELATIVE}"
    if text == ".." or text.startswith("../"):
        return f"path '{text}' leaves the notebook's folder; only files beside the notebook are carried"
    parts = [part for part in text.split("/") if part]
    if text.startswith("/") and not text.startswith("//") and len(parts) >= 2 and parts[0] not in SCRATCH_DIRS:
        return f"absolute path '{text}' will not exist on the target; {RELATIVE}"
    return None


def _checks_cuda(test: ast.AST) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr == "is_available" for node in ast.walk(test))


def _cuda(node: ast.AST) -> str | None:
    """The CUDA device an argument names, unless ``torch.cuda.is_available()`` chooses it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cuda"):
        return node.value
    if isinstance(node, ast.IfExp) and not _checks_cuda(node.test):
        return _cuda(node.body) or _cuda(node.orelse)
    return None


def _cuda_use(name: str, node: ast.Call) -> str | None:
    """How a call uses CUDA: ``.cuda()``, ``.to('cuda')``, ``torch.device('cuda:0')``, ``device='cuda'``."""
    if name == "cuda" and isinstance(node.func, ast.Attribute):
        return ".cuda()"
    device = next((d for arg in node.args if (d := _cuda(arg))), None) if name in ("to", "device") else None
    if device:
        return f"{'.to' if name == 'to' else 'torch.device'}({device!r})"
    keyword = next((d for k in node.keywords if k.arg == "device" and (d := _cuda(k.value))), None)
    return f"device={keyword!r}" if keyword else None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


class Hazards(ast.NodeVisitor):
    """Paths, environment reads and CUDA uses anywhere in one cell, function bodies included."""

    def __init__(
        self,
        cell: int,
        allowed: frozenset[str] | None,
        *,
        check_gpu: bool,
        secrets: Mapping[str, str | None] | None = None,
    ) -> None:
        self.cell, self.allowed, self.check_gpu = cell, allowed, check_gpu  # allowed None: every variable is carried
        #: the job's secrets: name -> why it will not be there (None: it will)
        self.secrets = dict(secrets or {})
        self.secrets_read: set[str] = set()
        self.found: dict[tuple[str, str], Finding] = {}  # one per message, one "gpu" per cell
        self.guarded = 0  # inside `if torch.cuda.is_available():` or `... if ....is_available() else ...`

    def add(self, kind: str, text: str) -> None:
        self.found.setdefault(
            (kind, "" if kind == "gpu" else text), Finding(kind, f"cell {self.cell}: {text}", self.cell)
        )

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (problem := _path_problem(node.value)):
            self.add("path", problem)

    def visit_If(self, node: ast.If | ast.IfExp) -> None:
        guard = _checks_cuda(node.test)
        self.guarded += guard
        self.generic_visit(node)
        self.guarded -= guard

    visit_IfExp = visit_If

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            self.env(node.slice)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:  # "X" in os.environ
        if isinstance(node.ops[0], (ast.In, ast.NotIn)) and _is_environ(node.comparators[0]):
            self.env(node.left)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if node.args and (
            name == "getenv" or (name == "get" and isinstance(func, ast.Attribute) and _is_environ(func.value))
        ):
            self.env(node.args[0])
        if name == "home" and isinstance(func, ast.Attribute) and "Path" in ast.unparse(func.value):
            self.add("path", f"Path.home() is the job's home, not yours; {RELATIVE}")
        if name == "expanduser" and node.args and not isinstance(node.args[0], ast.Constant):
            self.add("path", "expanduser() expands '~', and '~' is the job's home, not yours")
        if self.check_gpu and not self.guarded and (use := _cuda_use(name, node)):
            self.add("gpu", f"uses CUDA ('{use}') but the job requests no GPU (--gpus N)")
        self.generic_visit(node)

    def env(self, key: ast.AST) -> None:
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return
        name = key.value
        if name in self.secrets:
            self.secrets_read.add(name)
            if (problem := self.secrets[name]) is not None:
                self.add("secret", f"reads secret '{name}', which will not be there: {problem}")
            return
        credential = any(word in name.upper() for word in CREDENTIAL_WORDS)
        if credential and self.allowed is not None and not name.startswith(ENV_SET_BY_TARGET):
            text = f"reads environment variable '{name}', a credential, which is never carried by value"
            self.add("secret", f"{text} (give it to the job by reference: --secret {name}[=SOURCE])")
            return
        if self.allowed is None or name in self.allowed or name in ENV_PRESENT or name.startswith(ENV_SET_BY_TARGET):
            return  # carried, always there, or set by the target itself
        allowed = ", ".join(sorted(self.allowed)[:4]) + (", ..." if len(self.allowed) > 4 else "")
        hint = f"allowed: {allowed}; " if allowed else ""
        text = f"reads environment variable '{name}', which is not carried into the job"
        self.add("env", f"{text} ({hint}set PromoteSettings.env_allowlist)")
