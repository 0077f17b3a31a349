"""How a monitor check declares its settings, once: a frozen dataclass whose fields carry their minimum and help.

A check's settings are a small frozen dataclass (``StallSettings``: ``stall_timeout_s``, ``stall_action``)
whose fields are made with :func:`setting` or :func:`action`. That one declaration gives each setting its
name, type (its default's), default, minimum, allowed values and help; the monitor in the kernel reads the
job's values through it (:func:`values_for`) and the submitter's ``MonitorSettings`` is composed of these
dataclasses (``jupyter_promote.monitor_settings``), so nothing is written twice. Standard library only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T", float, int, str)
S = TypeVar("S")

#: What a check may do when it finds something: fail the job, or only raise an alert.
ACTIONS = ("fail", "alert")


def setting(default: T, *, help: str, minimum: float | None = None, choices: tuple[str, ...] = ()) -> T:
    """A settings field: ``name: float = setting(600.0, minimum=1.0, help=...)``.

    Typed as its default (what mypy sees); at run time the dataclass field that carries the rest.
    """
    metadata = {"help": help, "minimum": minimum, "choices": choices}
    field: Any = dataclasses.field(default=default, metadata=metadata)
    return field  # type: ignore[no-any-return]  # a Field standing in for its default, as dataclasses intends


def action(default: str, *, help: str) -> str:
    """A ``*_action`` field: what the check does when it finds something, ``"fail"`` or ``"alert"``."""
    return setting(default, help=help, choices=ACTIONS)


@dataclass(frozen=True)
class Declared:
    """One setting as declared: what a reader of settings (CLI, server, config, docs) needs to know."""

    name: str
    default: float | int | str
    help: str
    minimum: float | None
    choices: tuple[str, ...]

    @property
    def type(self) -> type:
        return type(self.default)


def declared(settings_class: type[Any]) -> list[Declared]:
    """The settings a settings dataclass declares, in field order; TypeError for a field that is no setting
    (each has a default that is a number or a string)."""
    found = []
    for f in dataclasses.fields(settings_class):
        default = f.default
        if isinstance(default, bool) or not isinstance(default, (float, int, str)):
            raise TypeError(f"{settings_class.__name__}.{f.name}: a setting's default is a number or a string")
        meta = f.metadata
        found.append(Declared(f.name, default, meta.get("help", ""), meta.get("minimum"), meta.get("choices", ())))
    return found


def values_for(settings_class: type[S], values: Mapping[str, Any]) -> S:
    """``settings_class`` filled from a job's settings (a JSON dict): each field it names, as the field's
    type; a field it does not name, or names with a value that is not that type, keeps its default (the
    kernel runs the job whatever the dict holds; the submitter checked it already)."""
    given: dict[str, Any] = {}
    for each in declared(settings_class):
        value = values.get(each.name)
        if value is None or isinstance(value, bool):
            continue
        try:
            typed = each.type(value)
        except (TypeError, ValueError, OverflowError):
            continue
        if isinstance(typed, float) and not math.isfinite(typed):
            continue
        if each.choices and typed not in each.choices:
            continue
        given[each.name] = typed
    return settings_class(**given)


@dataclass(frozen=True)
class NoSettings:
    """The settings of a check that has none."""


@dataclass(frozen=True)
class CoreSettings:
    """The monitor core's own settings: its heartbeat, its step window and its GPU sampling."""

    heartbeat_s: float = setting(5.0, minimum=1.0, help="seconds between the kernel's heartbeats")
    window_s: float = setting(
        2.0, minimum=0.5, help="seconds of steps in one step-rate sample (and a cell's throughput warm-up)"
    )
    gpu_sample_s: float = setting(5.0, minimum=1.0, help="seconds between GPU samples (NVML, torch.cuda)")
