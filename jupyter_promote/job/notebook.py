"""Read a user's notebook, with one-line errors for every way it can be wrong."""

from __future__ import annotations

import json
import os
from typing import Any

import nbformat

from ..errors import NotebookError


def read_notebook(path: str | os.PathLike[str]) -> Any:
    """Read and validate a notebook; a :class:`NotebookError` naming the file says what is wrong."""
    name = os.fspath(path)
    if not os.path.exists(name):
        raise NotebookError.at(name, "no such file")
    if os.path.isdir(name):
        raise NotebookError.at(name, "is a directory, not a notebook")
    try:
        with open(name, encoding="utf-8") as f:
            raw = json.load(f)
    except UnicodeDecodeError:
        raise NotebookError.at(name, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotebookError.at(name, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except OSError as exc:
        raise NotebookError.at(name, f"cannot be read ({exc.strerror})") from None
    if not isinstance(raw, dict) or "cells" not in raw or "nbformat" not in raw:
        raise NotebookError.at(name, "not a Jupyter notebook (no 'cells' or 'nbformat' field)")
    if raw.get("nbformat") != 4:
        raise NotebookError.at(name, f"nbformat {raw.get('nbformat')} is not supported (only version 4)")
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        reason = str(exc.message if hasattr(exc, "message") else exc).splitlines()[0]
        raise NotebookError.at(name, f"not a valid notebook: {reason}") from None
    except Exception as exc:  # nbformat raises several unrelated types on broken documents
        raise NotebookError.at(name, f"not a valid notebook: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return nb


def kernel_of(nb: Any, path: str) -> str:
    """The kernelspec name the notebook asks for (``python3`` when it names none); refuses non-Python kernels."""
    spec = nb.metadata.get("kernelspec") or {}
    language = spec.get("language") or nb.metadata.get("language_info", {}).get("name") or "python"
    if language.lower() != "python":
        raise NotebookError.at(path, f"uses a {language} kernel ({spec.get('name', '?')}); only Python notebooks can be promoted")
    return str(spec.get("name") or "python3")
