"""Secret values out of what a job writes for us: its events, its log, its output notebook.

A job's secrets reach it as environment variables (``--secret NAME``); the target names them in
``PROMOTE_SECRET_NAMES`` (comma-separated). Everything jupyter-promote relays or stores from a job passes
through :func:`mask` (text) or :func:`mask_tree` (a record's strings, its structure untouched): each
secret's value, as printed, as JSON or a repr escapes it, and each of its lines, becomes :data:`MASK`. The
runner, the kernel's runtime (its events) and the channel's sender all read the same variables, so no
value has to travel to them separately. Values shorter than :data:`MIN_MASKED` are not masked (they would
blank ordinary words); a secret that short is refused when the job is submitted. Standard library only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

#: The variable naming a job's secrets (their values are the variables of those names).
NAMES_ENV = "PROMOTE_SECRET_NAMES"
#: What a secret's value becomes.
MASK = "***"
#: The shortest value masked.
MIN_MASKED = 4


def _escapes(text: str) -> set[str]:
    """``text`` as a JSON string and as a Python repr hold it (quotes, backslashes, control characters)."""
    return {
        text,
        json.dumps(text)[1:-1],
        json.dumps(text, ensure_ascii=False)[1:-1],
        repr(text)[1:-1],
        ascii(text)[1:-1],
    }


def _forms(value: str) -> set[str]:
    """Every form a value may be written in: as it is, without its trailing newline, each line of a value
    of several (a notebook stores printed text line by line), each escaped once or twice (a repr in JSON)."""
    pieces = {value, value.rstrip("\r\n")} | set(value.splitlines())
    forms: set[str] = set()
    for piece in pieces:
        if len(piece.strip()) < MIN_MASKED:
            continue
        for once in _escapes(piece):
            forms |= _escapes(once)
    return forms


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the job's secrets, longest first, in every form they may be written in (:func:`_forms`)."""
    env = os.environ if environ is None else environ
    names = [n for n in env.get(NAMES_ENV, "").split(",") if n]
    forms: set[str] = set()
    for name in names:
        forms |= _forms(env.get(name, ""))
    return tuple(sorted(forms, key=len, reverse=True))


@lru_cache(maxsize=1)
def _current() -> tuple[str, ...]:
    return secret_values()


def masking() -> bool:
    """Whether this process holds secrets to mask (a job given some)."""
    return bool(_current())


def mask(text: str, values: tuple[str, ...] | None = None) -> str:
    """``text`` with every secret value (this process's, unless ``values`` are given) replaced by :data:`MASK`."""
    for value in _current() if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    return text


def longest(values: tuple[str, ...] | None = None) -> int:
    """The length of the longest secret form: how much of a stream's tail may still hide the start of one."""
    forms = _current() if values is None else values
    return max((len(v) for v in forms), default=0)


def mask_tree(value: Any, keep: frozenset[str] = frozenset(), values: tuple[str, ...] | None = None) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with every string in it masked, keys of dicts included,
    but the values of the keys in ``keep`` (the fields that give a record its structure: never rewritten, so
    that a secret that happens to be a word such as ``status`` cannot break what is written)."""
    forms = _current() if values is None else values
    if not forms:
        return value
    if isinstance(value, str):
        return mask(value, forms)
    if isinstance(value, list):
        return [mask_tree(item, keep, forms) for item in value]
    if isinstance(value, dict):
        return {
            (key if key in keep else mask(key, forms) if isinstance(key, str) else key): (
                item if key in keep else mask_tree(item, keep, forms)
            )
            for key, item in value.items()
        }
    return value


#: The fields of an event that give it its structure: never masked.
EVENT_STRUCTURE = frozenset({"type", "job", "state", "stage", "reason", "kind", "phase", "action", "seq", "ts"})
#: The fields of a notebook, a cell and an output that give them their structure: never masked.
NOTEBOOK_STRUCTURE = frozenset(
    {"cell_type", "output_type", "name", "id", "execution_count", "nbformat", "nbformat_minor", "metadata"}
)
