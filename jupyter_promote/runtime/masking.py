"""Secret values out of what a job writes for us: its events, its log, its output notebook.

A job's secrets reach it as environment variables (``--secret NAME``); the target names them in
``PROMOTE_SECRET_NAMES`` (comma-separated). Everything jupyter-promote relays or stores from a job passes
through :func:`mask`: each secret's value, as printed and as JSON escapes it, becomes :data:`MASK`. The
runner, the kernel's runtime (its events) and the channel's sender all read the same variables, so no
value has to travel to them separately. Values shorter than :data:`MIN_MASKED` are not masked (they would
blank ordinary words); a secret that short is refused when the job is submitted. Standard library only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache

#: The variable naming a job's secrets (their values are the variables of those names).
NAMES_ENV = "PROMOTE_SECRET_NAMES"
#: What a secret's value becomes.
MASK = "***"
#: The shortest value masked.
MIN_MASKED = 4


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the job's secrets, longest first, in every form they may be written in: as they are,
    and as a JSON string holds them (quotes, backslashes and control characters escaped)."""
    env = os.environ if environ is None else environ
    names = [n for n in env.get(NAMES_ENV, "").split(",") if n]
    forms: set[str] = set()
    for name in names:
        value = env.get(name, "")
        if len(value) < MIN_MASKED:
            continue
        forms.add(value)
        forms.add(json.dumps(value)[1:-1])
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    return tuple(sorted(forms, key=len, reverse=True))


@lru_cache(maxsize=1)
def _current() -> tuple[str, ...]:
    return secret_values()


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
