"""Names used before the cell that defines them (the job runs top to bottom in a fresh kernel)."""

from __future__ import annotations

import ast

from .findings import HISTORY, KNOWN, Finding


def _known(name: str) -> bool:
    """Builtins, IPython's injected names and dunders: defined in every kernel."""
    return name in KNOWN or HISTORY.match(name) is not None or (name.startswith("__") and name.endswith("__"))


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


def undefined_names(trees: dict[int, ast.Module]) -> list[Finding]:
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
        findings.append(Finding("undefined", f"cell {cell}: name '{name}' {text}", cell, fails=True))  # NameError
    for cell, label, node, enclosing in [] if names.star else names.deferred:
        for name in _free_names(node):
            if name not in names.definers and name not in enclosing and not _known(name):
                message = f"cell {cell}: name '{name}' in {label} is never defined in the notebook"
                findings.append(Finding("undefined", message, cell))
    return findings
