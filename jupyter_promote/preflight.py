"""Preflight: what a notebook run as a job will do differently from the interactive session.

A job runs the saved notebook top to bottom, in the frozen environment, on another machine. These checks
read the notebook statically (nothing runs) and report what will differ: cells saved out of order or never
run, names used before the cell that defines them, ``%pip install`` lines, paths that exist only here,
environment variables the job does not get, CUDA in a job without a GPU. Findings are warnings; none blocks.

Cells are numbered 1..N among the notebook's *code* cells, in notebook order; markdown and raw cells are not
counted. IPython syntax (``%magic``, ``!shell``) becomes Python through IPython's own transformer when IPython
is importable, else those lines become ``pass``; ``%%`` cells other than ``%%time``/``%%capture`` are skipped.
Paths under ``/tmp``, ``/dev``, ``/proc`` and ``/sys`` are taken for scratch or system paths and not reported.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import nbformat

#: Every ``Finding.kind``, in the order the findings of one cell are listed.
KINDS = ("order", "never_run", "syntax", "undefined", "install", "path", "env", "gpu")

_IPYTHON = {"In", "Out", "get_ipython", "display", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh"}
_KNOWN = frozenset(dir(builtins)) | _IPYTHON | {"_dh"}
_HISTORY = re.compile(r"_i?\d+$")  # _5, _i5: IPython's output and input history
_ENV_PRESENT = ("HOME", "USER", "LOGNAME", "PATH", "PWD", "TMPDIR", "HOSTNAME", "SHELL")
_ENV_SET_BY_TARGET = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "SLURM_", "PROMOTE_", "JUPYTER_")
_SCRATCH_DIRS = ("tmp", "dev", "proc", "sys")
_NOT_A_PATH = re.compile(r"[\s\\^$*+?()\[\]{}|<>%]|://")  # whitespace, regex or format syntax, URLs
_RELATIVE = "put the file beside the notebook and read it by a relative path"
_INSTALL = re.compile(
    r"\s*(?:[\w.]+\s*=\s*)?(?P<magic>[!%]+\s*)?(?:(?:\S*python[\d.]*|\{sys\.executable\})\s+-m\s+)?"
    r"(?P<tool>pip3?|uv pip|conda|mamba|micromamba)\s+(?P<verb>install|uninstall|remove|add)\b"
)
_TIMED_LINE = re.compile(r"^(\s*)%(?:time|timeit|prun)\s+(?!-)", re.M)  # `%time x = f()`: keep `x = f()`
_RUN_LINE = re.compile(r"^(\s*)%run\b.*$", re.M)  # binds what the script binds: as unknowable as `import *`
_MAGIC_VALUE = re.compile(r"^(\s*[\w.]+\s*=\s*)[!%].*$", re.M)
_MAGIC_LINE = re.compile(r"^(\s*)[!%].*$", re.M)


@dataclass(frozen=True)
class Finding:
    """One difference between the interactive session and the job: a warning, never a block.

    Parameters
    ----------
    kind
        One of :data:`KINDS`.
    message
        One line naming the cell(s), e.g. ``cell 31 ran before cells 22-30: the job runs top to bottom``.
    cell
        The 1-based number of the cell among the notebook's code cells; None when notebook-wide.
    """

    kind: str
    message: str
    cell: int | None

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON object, ``{"kind", "message", "cell"}``."""
        return {"kind": self.kind, "message": self.message, "cell": self.cell}


def check_notebook(
    nb: nbformat.NotebookNode, *, gpus: int | None = None, env_allowlist: Iterable[str] = ()
) -> list[Finding]:
    """Report what will differ when the notebook runs as a job, statically (no cell is run).

    Parameters
    ----------
    nb
        The saved notebook.
    gpus
        GPUs the job requests; with None or 0 every CUDA use not guarded by ``is_available()`` is reported.
    env_allowlist
        Environment variables carried into the job.

    Returns
    -------
    list[Finding]
        Findings in cell order, notebook-wide ones first.
    """
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    sources = [cell.source if isinstance(cell.source, str) else "".join(cell.source) for cell in cells]
    counts: list[int | None] = [cell.get("execution_count") for cell in cells]
    findings = [*_order(counts), *_never_run(sources, counts)]
    to_python, allowed, trees = _transformer(), frozenset(env_allowlist), {}
    for number, source in enumerate(sources, 1):
        findings += _installs(number, source)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes in the user's code are not ours to report
                trees[number] = tree = ast.parse(to_python(source))
        except (SyntaxError, ValueError) as error:  # ValueError: null bytes
            line = f"line {error.lineno}: {error.msg}" if isinstance(error, SyntaxError) else str(error)
            text = f" in {error.text.strip()!r}" if isinstance(error, SyntaxError) and error.text else ""
            findings.append(Finding("syntax", f"cell {number}: does not parse ({line}{text}); not checked", number))
            continue
        except (RecursionError, MemoryError):
            findings.append(Finding("syntax", f"cell {number}: nested too deeply to check; not checked", number))
            continue
        hazards = _Hazards(number, allowed, check_gpu=not gpus)
        try:
            hazards.visit(tree)
        except RecursionError:  # an expression thousands of terms long: the rest of the notebook is still checked
            trees.pop(number, None)
            findings.append(Finding("syntax", f"cell {number}: nested too deeply to check; not checked", number))
            continue
        findings += hazards.found.values()
    try:
        findings += _undefined(trees)
    except RecursionError:
        findings.append(
            Finding("syntax", "the notebook's code is nested too deeply to check for undefined names", None)
        )
    return sorted(findings, key=lambda finding: (finding.cell or 0, KINDS.index(finding.kind)))


def format_findings(findings: list[Finding]) -> list[str]:
    """One line per finding, for a terminal: ``warning: cell 21: name 'P' is used before ...``.

    Parameters
    ----------
    findings
        What :func:`check_notebook` returned.
    """
    return [f"warning: {finding.message}" for finding in findings]


def _cells(numbers: list[int]) -> str:
    """``cell 4``, ``cells 4, 5`` or ``cells 22-30, 33``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    parts = [f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs]
    return f"cell{'s' if len(numbers) > 1 else ''} {', '.join(parts)}"


def _order(counts: list[int | None]) -> list[Finding]:
    findings = []
    for number, count in enumerate(counts, 1):
        if count is None:
            continue
        later = [i for i, c in enumerate(counts[: number - 1], 1) if c is not None and c > count]
        if later:
            message = f"cell {number} ran before {_cells(later)}: the job runs top to bottom"
            findings.append(Finding("order", message, number))
    return findings


def _never_run(sources: list[str], counts: list[int | None]) -> list[Finding]:
    if all(count is None for count in counts):
        return []  # a clean notebook: nothing ran, so nothing is out of step
    never = [number for number, (s, c) in enumerate(zip(sources, counts, strict=True), 1) if c is None and s.strip()]
    if not never:
        return []
    verb, them = ("were", "them") if len(never) > 1 else ("was", "it")
    message = f"{_cells(never)} {verb} never run in the saved notebook; the job runs {them}"
    return [Finding("never_run", message, never[0] if len(never) == 1 else None)]


def _installs(number: int, source: str) -> list[Finding]:
    """``%pip install`` and the like, read from the raw lines (before IPython syntax is transformed)."""
    lines = source.splitlines()
    shell = bool(lines) and re.match(r"%%(?:bash|sh|script)\b", lines[0]) is not None
    findings = []
    for line in lines:
        if not (match := _INSTALL.match(line)) or not (match["magic"] or shell):
            continue
        tool, verb, shown = match["tool"], match["verb"], line.strip()[:70]
        if tool in ("conda", "mamba", "micromamba"):
            why = f"{tool} is not in the job's image, so the line fails there; remove it"
        elif verb == "install":
            why = "in the job this line would reinstall at run time (needs network, changes the environment); "
            why += "remove it or move the package into the kernel's environment"
        else:
            why = f"in the job this line would {verb} at run time (changes the environment); remove it"
        message = f"cell {number}: '{shown}': the frozen environment already holds what the kernel had; {why}"
        findings.append(Finding("install", message, number))
    return findings


def _transformer() -> Callable[[str], str]:
    """Cell source -> Python: IPython's transformer when importable, else magics and shell lines become ``pass``."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        ipython: Any = TransformerManager()  # type: ignore[no-untyped-call]
    except ImportError:
        ipython = None

    def to_python(source: str) -> str:
        if source.startswith("%%"):
            if not source.startswith(("%%time", "%%capture", "%%prun")):
                return ""  # %%bash, %%writefile, %%html ...: not Python
            magic, _, source = source.partition("\n")
            output = [word for word in magic.split()[1:] if not word.startswith("-")]  # `%%capture out`
            source = f"{output[0]} = None\n{source}" if output and magic.startswith("%%capture") else f"\n{source}"
        source = _RUN_LINE.sub(r"\1from _ import *", _TIMED_LINE.sub(r"\1", source))
        if ipython is not None:
            with contextlib.suppress(Exception):  # when IPython gives up, the plain fallback still parses most cells
                return str(ipython.transform_cell(source))
        return _MAGIC_LINE.sub(r"\1pass", _MAGIC_VALUE.sub(r"\1None", source))

    return to_python


def _path_problem(text: str) -> str | None:
    if _NOT_A_PATH.search(text):
        return None
    if text == "~" or text.startswith("~/"):
        return f"path '{text}' is under '~', and '~' is the job's home, not yours; {_RELATIVE}"
    if text == ".." or text.startswith("../"):
        return f"path '{text}' leaves the notebook's folder; only files beside the notebook are carried"
    parts = [part for part in text.split("/") if part]
    if text.startswith("/") and not text.startswith("//") and len(parts) >= 2 and parts[0] not in _SCRATCH_DIRS:
        return f"absolute path '{text}' will not exist on the target; {_RELATIVE}"
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


class _Hazards(ast.NodeVisitor):
    """Paths, environment reads and CUDA uses anywhere in one cell, function bodies included."""

    def __init__(self, cell: int, allowed: frozenset[str], *, check_gpu: bool) -> None:
        self.cell, self.allowed, self.check_gpu = cell, allowed, check_gpu
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
            self.add("path", f"Path.home() is the job's home, not yours; {_RELATIVE}")
        if name == "expanduser" and node.args and not isinstance(node.args[0], ast.Constant):
            self.add("path", "expanduser() expands '~', and '~' is the job's home, not yours")
        if self.check_gpu and not self.guarded and (use := _cuda_use(name, node)):
            self.add("gpu", f"uses CUDA ('{use}') but the job requests no GPU (--gpus N)")
        self.generic_visit(node)

    def env(self, key: ast.AST) -> None:
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return
        name = key.value
        if name in self.allowed or name in _ENV_PRESENT or name.startswith(_ENV_SET_BY_TARGET):
            return  # carried, always there, or set by the target itself
        allowed = ", ".join(sorted(self.allowed)[:4]) + (", ..." if len(self.allowed) > 4 else "")
        hint = f"allowed: {allowed}; " if allowed else ""
        text = f"reads environment variable '{name}', which is not carried into the job"
        self.add("env", f"{text} ({hint}set PromoteSettings.env_allowlist)")


def _known(name: str) -> bool:
    """Builtins, IPython's injected names and dunders: defined in every kernel."""
    return name in _KNOWN or _HISTORY.match(name) is not None or (name.startswith("__") and name.endswith("__"))


_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class _Names(ast.NodeVisitor):
    """Module-level names in the order the job evaluates them, cell after cell; function bodies are deferred."""

    def __init__(self) -> None:
        self.cell = 0
        self.defined: set[str] = set()
        self.definers: dict[str, list[tuple[int, int]]] = {}  # name -> (cell, line) binding it at module level
        self.scopes: list[tuple[str, set[str]]] = []  # the class bodies and comprehensions around the node
        self.star = False  # after `from x import *` (or `%run`), any name may exist
        self.early: dict[tuple[int, str], int] = {}  # (cell, name) -> line of its first use before a definition
        self.deferred: list[tuple[int, str, _Function, frozenset[str]]] = []  # function bodies, checked last

    def bind(self, name: str, line: int, *, module: bool = False) -> None:
        if self.scopes and not module:
            self.scopes[-1][1].add(name)
        else:
            self.defined.add(name)
            self.definers.setdefault(name, []).append((self.cell, line))

    def walk(self, *nodes: ast.AST | None) -> None:
        for node in nodes:
            if node is not None:
                self.visit(node)

    def use(self, name: str, line: int) -> None:
        if not (self.star or name in self.defined or _known(name) or any(name in s for _, s in self.scopes)):
            self.early.setdefault((self.cell, name), line)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.use(node.id, node.lineno)
        elif isinstance(node.ctx, ast.Store):
            self.bind(node.id, node.lineno)
        elif not self.scopes:  # del
            self.defined.discard(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.walk(node.value, *node.targets)  # the value is evaluated first

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.use(node.target.id, node.lineno)  # and binds nothing new: `x += 1` needs an x
        else:
            self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:  # annotations are not checked
        if node.value is not None or not isinstance(node.target, ast.Name):
            self.walk(node.value, node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = next((names for kind, names in reversed(self.scopes) if kind != "comprehension"), None)
        if scope is None:
            self.bind(node.target.id, node.lineno, module=True)
        else:
            scope.add(node.target.id)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.walk(node.iter, node.target, *node.body, *node.orelse)

    visit_AsyncFor = visit_For

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.walk(node.type)
        if node.name:
            self.bind(node.name, node.lineno)
        self.walk(*node.body)

    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar | ast.MatchMapping) -> None:
        self.generic_visit(node)
        if captured := node.rest if isinstance(node, ast.MatchMapping) else node.name:
            self.bind(captured, node.lineno)

    visit_MatchStar = visit_MatchMapping = visit_MatchAs

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.star = True
            else:
                self.bind(alias.asname or alias.name.partition(".")[0], node.lineno)

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.walk(*getattr(node, "decorator_list", []), *node.args.defaults, *node.args.kw_defaults)
        declared = {name for sub in ast.walk(node) if isinstance(sub, ast.Global) for name in sub.names}
        for sub in ast.walk(node):  # `global x; x = ...` in a function defines x
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id in declared:
                self.bind(sub.id, sub.lineno, module=True)
        label = "a lambda" if isinstance(node, ast.Lambda) else f"function '{node.name}'"
        self.deferred.append((self.cell, label, node, frozenset(n for _, names in self.scopes for n in names)))
        if not isinstance(node, ast.Lambda):
            self.bind(node.name, node.lineno)

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.walk(*node.decorator_list, *node.bases, *node.keywords)
        self.scopes.append(("class", set()))
        self.walk(*node.body)  # the class body runs now; its methods' bodies later
        self.scopes.pop()
        self.bind(node.name, node.lineno)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        self.visit(node.generators[0].iter)  # the first iterable is evaluated outside the comprehension
        self.scopes.append(("comprehension", set()))
        for index, generator in enumerate(node.generators):
            self.walk(generator.iter if index else None, generator.target, *generator.ifs)
        self.walk(*([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]))
        self.scopes.pop()

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp


def _free_names(node: _Function) -> list[str]:
    """Names a function's body reads that nothing in it binds; annotations are skipped (never evaluated here)."""
    body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    nodes = [sub for statement in body for sub in ast.walk(statement)]
    annotations = [getattr(sub, "annotation", None) or getattr(sub, "returns", None) for sub in nodes]
    skipped = {id(a) for annotation in annotations if annotation is not None for a in ast.walk(annotation)}
    bound = {arg.arg for arg in ast.walk(node.args) if isinstance(arg, ast.arg)}
    used: list[str] = []
    for sub in nodes:
        if isinstance(sub, ast.Name) and id(sub) not in skipped:
            if isinstance(sub.ctx, ast.Load):
                used.append(sub.id)
            else:
                bound.add(sub.id)
        elif isinstance(sub, ast.alias):
            bound.add(sub.asname or sub.name.partition(".")[0])
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            bound.add(sub.rest)
        elif isinstance(name := getattr(sub, "name", None), str):  # def, class, except ... as, match captures
            bound.add(name)
    return list(dict.fromkeys(name for name in used if name not in bound))


def _undefined(trees: dict[int, ast.Module]) -> list[Finding]:
    names = _Names()
    for cell, tree in trees.items():
        names.cell = cell
        names.visit(tree)
    findings = []
    for (cell, name), line in names.early.items():
        definers = names.definers.get(name, [])
        later = [(c, n) for c, n in definers if (c, n) > (cell, line)]
        if later and later[0][0] == cell:
            text = f"is used on line {line} before this cell defines it (line {later[0][1]})"
        elif later:
            text = f"is used before any earlier cell defines it (cell {later[0][0]} defines it)"
        else:
            text = "is used after a del" if definers else "is never defined in the notebook"
        findings.append(Finding("undefined", f"cell {cell}: name '{name}' {text}", cell))
    for cell, label, node, enclosing in [] if names.star else names.deferred:
        for name in _free_names(node):
            if name not in names.definers and name not in enclosing and not _known(name):
                message = f"cell {cell}: name '{name}' in {label} is never defined in the notebook"
                findings.append(Finding("undefined", message, cell))
    return findings
