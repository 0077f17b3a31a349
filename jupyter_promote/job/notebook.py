"""Read, validate and write notebooks as plain JSON, with one-line errors for every way they can be wrong.

Validation uses nbformat's own JSON schemas through fastjsonschema, without importing nbformat: importing
nbformat pulls in jsonschema and its format checkers, which cost over a second on every ``run``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import NotebookError


@functools.cache
def _validator(minor: int) -> Any:
    import fastjsonschema

    spec = importlib.util.find_spec("nbformat")
    assert spec is not None and spec.submodule_search_locations
    schemas = Path(next(iter(spec.submodule_search_locations))) / "v4"
    path = schemas / f"nbformat.v4.{minor}.schema.json"
    if not path.is_file():
        path = schemas / "nbformat.v4.schema.json"
    return fastjsonschema.compile(json.loads(path.read_text(encoding="utf-8")))


def validate(nb: dict[str, Any], name: str) -> None:
    """Raise a :class:`NotebookError` unless ``nb`` is valid against nbformat's schema for its minor version."""
    import fastjsonschema

    try:
        _validator(int(nb.get("nbformat_minor", 0)))(nb)
    except fastjsonschema.JsonSchemaException as exc:
        raise NotebookError.at(
            name, f"not a valid notebook: {str(getattr(exc, 'message', exc)).splitlines()[0]}"
        ) from None


def read_notebook(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a notebook; a :class:`NotebookError` naming the file says what is wrong."""
    name = os.fspath(path)
    if not os.path.exists(name):
        raise NotebookError.at(name, "no such file")
    if os.path.isdir(name):
        raise NotebookError.at(name, "is a directory, not a notebook")
    try:
        with open(name, encoding="utf-8") as f:
            nb = json.load(f)
    except UnicodeDecodeError:
        raise NotebookError.at(name, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotebookError.at(name, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except OSError as exc:
        raise NotebookError.at(name, f"cannot be read ({exc.strerror})") from None
    version = nb.get("nbformat") if isinstance(nb, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and 1 <= version < 4:
        raise NotebookError.at(name, _older_format(name, version))
    if not isinstance(nb, dict) or "cells" not in nb or "nbformat" not in nb:
        raise NotebookError.at(name, "not a Jupyter notebook (no 'cells' or 'nbformat' field)")
    if version != 4:
        raise NotebookError.at(name, f"nbformat {version} is not supported (only version 4)")
    validate(with_kernel(nb, "python3"), name)  # a kernelspec without a name is the kernel's to fill, not an error
    return nb


def _older_format(name: str, version: int) -> str:
    """Why an nbformat 1-3 notebook is refused, with the two ways to upgrade it (its cells are in worksheets)."""
    upgraded = f"{os.path.splitext(os.path.basename(name))[0]}.nbconvert.ipynb"
    return (
        f"an nbformat {version} notebook; only nbformat 4 can be promoted: upgrade it with "
        f"`jupyter nbconvert --to notebook --nbformat 4 {shlex.quote(name)}` (it writes {upgraded} beside it) "
        "or open it in JupyterLab and save it"
    )


def source_of(cell: Mapping[str, Any]) -> str:
    """A cell's source as one string (nbformat allows a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def tags_of(cell: Mapping[str, Any]) -> list[str]:
    """A cell's tags (none where its metadata or tags are not what nbformat says)."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, Mapping) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def kernel_of(nb: dict[str, Any], path: str) -> str:
    """The kernelspec name the notebook asks for (``python3`` when it names none); refuses non-Python kernels."""

    def section(data: Any, key: str) -> dict[str, Any]:
        value = data.get(key) if isinstance(data, dict) else None
        return value if isinstance(value, dict) else {}

    metadata = section(nb, "metadata")
    spec, info = section(metadata, "kernelspec"), section(metadata, "language_info")
    language = str(spec.get("language") or info.get("name") or "python")
    if not isinstance(spec.get("name", ""), str):
        raise NotebookError.at(path, "its kernelspec name is not a string")
    if language.lower() != "python":
        raise NotebookError.at(
            path, f"uses a {language} kernel ({spec.get('name', '?')}); only Python notebooks can be promoted"
        )
    return str(spec.get("name") or "python3")


def with_kernel(nb: dict[str, Any], kernel: str) -> dict[str, Any]:
    """``nb`` (not modified) with a complete kernelspec: ``kernel`` as the name it lacks, and the language papermill
    needs to write parameters. JupyterLab and papermill run a notebook whose kernelspec has no name (or that has no
    kernelspec), while nbformat's schema requires one.
    """
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        return nb
    spec = metadata.get("kernelspec", {})
    if not isinstance(spec, dict) or ("name" in spec and "display_name" in spec and "language" in spec):
        return nb
    info = metadata.get("language_info")
    language = spec.get("language") or (info.get("name") if isinstance(info, dict) else None) or "python"
    name = spec.get("name", kernel)
    filled = {"name": name, "display_name": spec.get("display_name", name), "language": language, **spec}
    return {**nb, "metadata": {**metadata, "kernelspec": filled}}


def write_notebook(nb: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a notebook atomically, formatted as nbformat writes it (a partial file never appears at ``path``)."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".nb-", suffix=".ipynb", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
