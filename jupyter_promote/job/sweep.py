"""Sweeps: one notebook, many parameter sets.

A sweep is given either as a grid, ``{"lr": [0.1, 0.01], "seed": [0, 1]}`` (every combination, the last
name varying fastest, as ``itertools.product`` orders them), or as an explicit list of parameter sets,
``[{"lr": 0.1}, {"lr": 0.01, "seed": 3}]`` (a YAML file of such a list works the same). Each set is merged
over the job's own parameters, papermill-style: a later value for a name wins.
"""

from __future__ import annotations

import itertools
import keyword
from typing import Any

from ..errors import UsageError

#: More tasks than this in one sweep is almost always a typo in a grid; a site can split it.
MAX_SWEEP_SIZE = 10000


def expand(spec: Any, origin: str = "sweep") -> list[dict[str, Any]]:
    """The parameter sets of a sweep ``spec`` (a grid or a list of sets), in order; errors name ``origin``."""
    if isinstance(spec, dict):
        if not spec:
            raise UsageError(f"{origin}: names no parameter to vary", subject=origin)
        names = list(spec)
        for name in names:
            _check_name(name, origin)
            values = spec[name]
            if not isinstance(values, list) or not values:
                raise UsageError(f"{origin}.{name}: must be a non-empty list of values", subject=origin)
        size = 1
        for name in names:
            size *= len(spec[name])
        _check_size(size, origin)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(spec[n] for n in names))]
    if isinstance(spec, list):
        if not spec:
            raise UsageError(f"{origin}: is an empty list", subject=origin)
        _check_size(len(spec), origin)
        for index, item in enumerate(spec):
            if not isinstance(item, dict):
                raise UsageError(f"{origin}[{index}]: must be an object of parameter values", subject=origin)
            for name in item:
                _check_name(name, f"{origin}[{index}]")
        return [dict(item) for item in spec]
    raise UsageError(f"{origin}: must be a grid (name -> list of values) or a list of parameter sets", subject=origin)


def _check_name(name: Any, origin: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{origin}: {name!r} is not a valid parameter name", subject=origin)


def _check_size(size: int, origin: str) -> None:
    if size > MAX_SWEEP_SIZE:
        raise UsageError(f"{origin}: {size} parameter sets, more than {MAX_SWEEP_SIZE}", subject=origin)


def label(parameters: dict[str, Any]) -> str:
    """A short human label of one set, e.g. ``lr=0.1 seed=0``."""
    return " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in parameters.items())
