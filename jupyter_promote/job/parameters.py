"""Job parameters, typed exactly as papermill's CLI types them, and checked as data before they become code.

Every name becomes ``name = value`` in the job notebook's injected cell, so a name that is not a Python
identifier (``x; import os``) would be code: :func:`check_parameters` refuses it, wherever it came from (``-p``,
``-r``, ``-y``, ``-f``, ``-b``, a request body). A value is at most :data:`MAX_VALUE_BYTES` as JSON (it is
kept in ``job.json`` and sent with every job listing); YAML expands to at most :data:`MAX_YAML_NODES` nodes
(aliases counted as often as they are used: an alias bomb is refused before it is built).
"""

from __future__ import annotations

import base64
import binascii
import json
import keyword
import os
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from ..errors import UsageError

#: The most bytes one parameter value may take, as JSON.
MAX_VALUE_BYTES = 64 << 10
#: The most YAML nodes a parameters document may expand to (each use of an alias counts its whole anchor).
MAX_YAML_NODES = 100_000
#: The deepest a parameter value may nest (lists and mappings in one another).
MAX_VALUE_DEPTH = 100


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists, tuples and mappings more than ``limit`` deep (iterative: any depth)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_name(name: Any, origin: str) -> str:
    """``name`` when it is a Python identifier and not a keyword (it becomes ``name = value``), else a one-line
    error naming ``origin`` (``-p``, a file, ``parameters``)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        shown = repr(name)[:60]
        raise UsageError(f"{origin}: parameter name {shown} is not a Python identifier", subject=origin)
    return name


def check_parameters(params: Mapping[Any, Any], origin: str) -> dict[str, Any]:
    """``params`` with every name checked (:func:`check_name`) and every value at most :data:`MAX_VALUE_BYTES`."""
    for name, value in params.items():
        check_name(name, origin)
        if nested_deeper_than(value, MAX_VALUE_DEPTH):
            raise UsageError(f"{origin}: parameter {name} nests more than {MAX_VALUE_DEPTH} deep", subject=origin)
        try:
            size = len(json.dumps(value, default=repr).encode())
        except ValueError:  # a structure that contains itself (YAML anchors)
            raise UsageError(f"{origin}: parameter {name} contains itself", subject=origin) from None
        if size > MAX_VALUE_BYTES:
            raise UsageError(
                f"{origin}: parameter {name} is {size >> 10} KiB, more than a parameter carries "
                f"({MAX_VALUE_BYTES >> 10} KiB); pass a path to a file instead",
                subject=origin,
            )
    return dict(params)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, origin: str) -> None:
    """Refuse a YAML graph whose expansion exceeds :data:`MAX_YAML_NODES` or that refers to itself (iterative:
    a shared node is counted once per use, at the cost of one visit)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_YAML_NODES:
                raise UsageError(
                    f"{origin}: YAML expands to more than {MAX_YAML_NODES} values (aliases used over and over)",
                    subject=origin,
                )
        elif key in open_nodes:
            raise UsageError(f"{origin}: YAML whose alias refers to itself", subject=origin)
        elif key not in sizes:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


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


def load_yaml(text: str, origin: str) -> Any:
    """A YAML document as papermill reads it (dates stay strings), bounded (:data:`MAX_YAML_NODES`); None
    when empty; errors are one line naming ``origin``."""
    from papermill.iorw import NoDatesSafeLoader

    loader = NoDatesSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, origin)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{origin}: not valid YAML{where}", subject=origin) from None
    except RecursionError:
        raise UsageError(f"{origin}: YAML nested too deep", subject=origin) from None
    finally:
        loader.dispose()


def _yaml(text: str, origin: str) -> dict[str, Any]:
    data = load_yaml(text, origin)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{origin}: must be a mapping of parameter names to values", subject=origin)
    return check_parameters(data, origin)


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
        try:
            text = base64.b64decode(base64_yaml).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise UsageError("-b: not base64-encoded UTF-8 YAML", subject="-b") from None
        params.update(_yaml(text, "-b"))
    for path in files:
        if not os.path.isfile(path):
            raise UsageError(f"-f {path}: no such file", subject=path)
        try:
            with open(path, encoding="utf-8") as f:
                params.update(_yaml(f.read(), f"-f {path}"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"-f {path}: cannot be read as UTF-8 text ({type(exc).__name__})", subject=path) from None
    for text in yaml_strings:
        params.update(_yaml(text, "-y"))
    for name, value in pairs:
        params.update(check_parameters({name: resolve_type(value)}, f"-p {name}"))
    for name, value in raw_pairs:
        params.update(check_parameters({name: value}, f"-r {name}"))
    return params


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
