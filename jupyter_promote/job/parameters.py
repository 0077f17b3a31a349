"""Job parameters, typed exactly as papermill's CLI types them."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from typing import Any

import yaml

from ..errors import UsageError


def resolve_type(value: str) -> Any:
    """papermill's ``-p`` typing: True/False -> bool, None -> None, then int, then float, else str."""
    if value == "True":
        return True
    if value == "False":
        return False
    if value == "None":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _yaml(text: str, origin: str) -> dict[str, Any]:
    from papermill.iorw import NoDatesSafeLoader  # papermill's loader: dates stay strings

    try:
        data = yaml.load(text, Loader=NoDatesSafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{origin}: not valid YAML{where}", subject=origin) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{origin}: must be a mapping of parameter names to values", subject=origin)
    return data


def collect_parameters(
    pairs: Iterable[tuple[str, str]] = (),
    raw_pairs: Iterable[tuple[str, str]] = (),
    yaml_strings: Iterable[str] = (),
    files: Iterable[str] = (),
    base64_yaml: str | None = None,
) -> dict[str, Any]:
    """Merge parameters in papermill's order: base64, files, yaml strings, ``-p``, then ``-r`` (later wins)."""
    params: dict[str, Any] = {}
    if base64_yaml:
        params.update(_yaml(base64.b64decode(base64_yaml).decode(), "-b"))
    for path in files:
        if not os.path.isfile(path):
            raise UsageError(f"-f {path}: no such file", subject=path)
        with open(path, encoding="utf-8") as f:
            params.update(_yaml(f.read(), path))
    for text in yaml_strings:
        params.update(_yaml(text, "-y"))
    for name, value in pairs:
        params[_name(name)] = resolve_type(value)
    for name, value in raw_pairs:
        params[_name(name)] = value
    return params


def _name(name: str) -> str:
    if not name.isidentifier():
        raise UsageError(f"-p {name}: not a valid Python name", subject=name)
    return name


def notebook_parameters(path: str) -> list[dict[str, Any]]:
    """The notebook's ``parameters`` cell as papermill reads it: name, type, default (source text), help.

    ``value`` is the default as a JSON value when it is a literal (``0.01``, ``'adam'``, ``[1, 2]``),
    else None: a person edits the text and the frontend sends the typed value back.
    """
    import ast
    import json

    from papermill.inspection import inspect_notebook

    found = []
    for name, spec in inspect_notebook(path).items():
        default = str(spec.get("default", ""))
        try:
            value = ast.literal_eval(default)
            json.dumps(value, allow_nan=False)
            literal = True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value, literal = None, False
        annotated = spec.get("inferred_type_name") or "None"
        found.append(
            {
                "name": name,
                # the annotation when there is one (``lr: float = 0.1``), else the literal's own type
                "type": annotated if annotated != "None" else (type(value).__name__ if literal else "str"),
                "default": default,
                "value": value,
                "literal": literal,
                "help": spec.get("help") or "",
            }
        )
    return found


#: The tag of the cell whose assignments are the notebook's quick-run (smoke) parameters.
SMOKE_TAG = "smoke"


def smoke_parameters(nb: dict[str, Any]) -> dict[str, Any]:
    """The literal assignments of the raw cell tagged ``smoke`` (``steps = 10``): the parameters of a quick
    top-to-bottom run before a cluster job (``run --smoke``); empty when the notebook has no such cell.

    A raw cell, so that neither the notebook's own kernel nor the job runs it; a code cell tagged ``smoke``
    would set its values in the real job too, and is refused.
    """
    import ast

    values: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        if SMOKE_TAG not in (cell.get("metadata", {}).get("tags") or []):
            continue
        if cell.get("cell_type") != "raw":
            raise UsageError(
                f"the cell tagged {SMOKE_TAG!r} is a {cell.get('cell_type')} cell: make it a raw cell, or the job "
                "would run it too",
                subject=SMOKE_TAG,
            )
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        try:
            tree = ast.parse(source)
        except SyntaxError:
            raise UsageError(f"the cell tagged {SMOKE_TAG!r} is not valid Python", subject=SMOKE_TAG) from None
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    values[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    raise UsageError(
                        f"the cell tagged {SMOKE_TAG!r}: {node.targets[0].id} is not a literal", subject=SMOKE_TAG
                    ) from None
    return values
