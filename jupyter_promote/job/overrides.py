"""Parameters the notebook itself assigns again after papermill injects them: the job runs with the notebook's
value, not the one asked for.

papermill injects ``-p`` values right after the cell tagged ``parameters``, or at the very top when there is
none; a later cell that assigns the name again (``lr = 1e-3``) overwrites the injected value. Found statically,
from the module-level assignments of the code cells (no cell is run).
"""

from __future__ import annotations

import ast
import contextlib
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from .cells import own_numbers
from .notebook import source_of, tags_of

PARAMETERS_TAG = "parameters"
_TIMED_LINE = re.compile(r"^(\s*)%time\s+(?!-)", re.M)  # `%time lr = 1e-3` assigns lr in the notebook's globals


@dataclass(frozen=True)
class Override:
    """A parameter that a cell after papermill's injected one assigns again."""

    name: str
    cell: int  # the code cell, numbered as progress and verdicts number it (job/cells.py)
    line: str  # the assignment as written, its first line

    def message(self) -> str:
        return (
            f"parameter {self.name} is assigned again in cell {self.cell} ({self.line}), after papermill injects it:"
            " the job runs with the notebook's value"
        )


def _python(source: str) -> tuple[ast.Module | None, str]:
    """The cell as Python (IPython's magics transformed when IPython is there), parsed; None when it does not
    parse."""
    source = _TIMED_LINE.sub(r"\1", source)
    with contextlib.suppress(Exception):  # IPython missing or giving up: the plain source
        from IPython.core.inputtransformer2 import TransformerManager

        source = str(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call, unused-ignore]  # IPython ships none
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the user's code are not ours to report
            return ast.parse(source), source
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, source


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load) for sub in ast.walk(node))


def _assigned(statement: ast.stmt) -> tuple[list[str], ast.AST | None]:
    """The names a module-level assignment binds, and its value."""
    if isinstance(statement, ast.Assign):
        targets = [sub for target in statement.targets for sub in ast.walk(target)]
        return [t.id for t in targets if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)], statement.value
    if isinstance(statement, ast.AnnAssign) and statement.value is not None and isinstance(statement.target, ast.Name):
        return [statement.target.id], statement.value
    return [], None


def overridden_parameters(nb: dict[str, Any], names: Iterable[str]) -> list[Override]:
    """The parameters among ``names`` that a cell after papermill's injected cell assigns again, unconditionally
    and without reading the injected value (``lr = lr / 10`` uses it): the first such assignment of each name.
    """
    wanted = set(names)
    cells = nb.get("cells", [])
    injected_after = next((i for i, c in enumerate(cells) if PARAMETERS_TAG in tags_of(c)), -1)
    found: dict[str, Override] = {}
    for index, number in own_numbers(cells).items():  # numbered as progress and verdicts number them
        if index <= injected_after:  # the parameters cell and those before it run before the injection
            continue
        tree, source = _python(source_of(cells[index]))
        for statement in tree.body if tree is not None else []:
            bound, value = _assigned(statement)
            for name in bound:
                if name in wanted and name not in found and not (value is not None and _reads(value, name)):
                    text = ast.get_source_segment(source, statement) or ast.unparse(statement)
                    found[name] = Override(name, number, text.splitlines()[0].strip())
    return sorted(found.values(), key=lambda o: (o.cell, o.name))


def refuse_identical_tasks(
    nb: dict[str, Any], notebook: str, parameters: dict[str, Any], sets: list[dict[str, Any]]
) -> None:
    """Refuse a sweep whose tasks would all run the same configuration under different labels: every name
    the sweep varies is assigned again by the notebook after papermill injects it.
    """
    tasks = [{**parameters, **one} for one in sets]
    varied = {name for task in tasks for name in task if any(task.get(name) != t.get(name) for t in tasks)}
    if len(tasks) < 2 or not varied:
        return
    overrides = {o.name: o for o in overridden_parameters(nb, varied)}
    if varied <= set(overrides):
        first = overrides[sorted(varied)[0]]
        raise UsageError(
            f"{notebook}: every task of this sweep would run the same configuration: cell {first.cell} assigns "
            f"{', '.join(sorted(varied))} again after papermill injects {'them' if len(varied) > 1 else 'it'} "
            f"({first.line}); tag the cell that sets {'them' if len(varied) > 1 else 'it'} 'parameters'",
            subject=notebook,
        )
