"""The registry of monitor checks: the built-in ones, then those installed packages add through entry points.

A site adds a check with one module (a :class:`~.base.Check` subclass, see :mod:`.base`) and one entry point
in its package's metadata::

    [project.entry-points."jupyter_promote.monitor_checks"]
    loss_spike = "my_site.checks:LossSpikeCheck"

A plugin that fails to import, is not a Check, or takes a name already registered is skipped: the reason is
logged and kept in :attr:`Registry.skipped` (the monitor raises an alert for each in the job). Standard
library only: this runs in the job's kernel too.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from ..settings import CoreSettings, Declared, declared
from .base import Check, CheckFailure, MonitorAbort, MonitorContext
from .fragmentation import FragmentationCheck
from .gpu_memory import GpuMemoryCheck
from .nan import NanCheck, NonFiniteError
from .stall import StallCheck, StallError
from .throughput import ThroughputCheck

__all__ = [
    "BUILTIN_CHECKS",
    "ENTRY_POINT_GROUP",
    "Check",
    "CheckFailure",
    "MonitorAbort",
    "MonitorContext",
    "NonFiniteError",
    "Registry",
    "StallError",
    "UnknownCheckError",
    "UnknownSettingError",
    "load_checks",
]

#: The entry point group through which installed packages add checks.
ENTRY_POINT_GROUP = "jupyter_promote.monitor_checks"
#: The checks every job has, in the order the monitor runs them.
BUILTIN_CHECKS: tuple[type[Check[Any]], ...] = (
    NanCheck,
    StallCheck,
    ThroughputCheck,
    GpuMemoryCheck,
    FragmentationCheck,
)

_log = logging.getLogger(__name__)


class UnknownCheckError(LookupError):
    """No check of that name is registered."""


class UnknownSettingError(LookupError):
    """No check (and not the core) declares a setting of that name."""


@dataclass(frozen=True)
class Registry:
    """The registered checks, built-ins first, and the plugins that were skipped: (entry point, why)."""

    checks: tuple[type[Check[Any]], ...]
    skipped: tuple[tuple[str, str], ...] = ()

    def check(self, name: str) -> type[Check[Any]]:
        """The check named ``name``; :class:`UnknownCheckError` names the known ones."""
        for each in self.checks:
            if each.name == name:
                return each
        known = ", ".join(c.name for c in self.checks)
        raise UnknownCheckError(f"no monitor check named {name!r} (known: {known})")

    def settings_classes(self) -> list[type[Any]]:
        """The settings dataclasses: the core's, then each check's (those that declare any), no repeats."""
        classes: list[type[Any]] = [CoreSettings]
        for each in self.checks:
            if declared(each.settings_class) and each.settings_class not in classes:
                classes.append(each.settings_class)
        return classes

    def settings(self) -> dict[str, Declared]:
        """Every declared setting by name."""
        return {s.name: s for cls in self.settings_classes() for s in declared(cls)}

    def setting(self, name: str) -> Declared:
        """The setting named ``name``; :class:`UnknownSettingError` names the known ones."""
        found = self.settings().get(name)
        if found is None:
            raise UnknownSettingError(f"no monitor setting named {name!r} (known: {', '.join(self.settings())})")
        return found


@functools.cache
def load_checks() -> Registry:
    """The built-in checks, then the entry points' (read once per process; ``load_checks.cache_clear()``
    reads them again)."""
    checks = list(BUILTIN_CHECKS)
    skipped: list[tuple[str, str]] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        why = _refusal(point.load, checks)
        if isinstance(why, str):
            _log.warning("jupyter-promote: monitor check %s (%s) skipped: %s", point.name, point.value, why)
            skipped.append((f"{point.name} = {point.value}", why))
        else:
            checks.append(why)
    return Registry(tuple(checks), tuple(skipped))


def _refusal(load: Any, registered: list[type[Check[Any]]]) -> type[Check[Any]] | str:
    """The check an entry point names, or why it cannot be registered."""
    try:
        check = load()
    except Exception as exc:  # a broken plugin must not stop the job or the CLI
        return f"it failed to import: {type(exc).__name__}: {exc}"
    if not (isinstance(check, type) and issubclass(check, Check)):
        return "it is not a jupyter_promote.runtime.checks.Check subclass"
    missing = [attr for attr in ("name", "kind") if not isinstance(getattr(check, attr, None), str)]
    if missing:
        return f"it declares no {' and no '.join(missing)}"
    if not dataclasses.is_dataclass(check.settings_class):
        return "its settings_class is not a dataclass (see jupyter_promote.runtime.settings)"
    if any(each.name == check.name for each in registered):
        return f"a check named {check.name!r} is registered already"
    try:
        own = declared(check.settings_class)
    except TypeError as exc:
        return str(exc)
    taken = Registry(tuple(registered)).settings()
    clash = [s.name for s in own if s.name in taken]
    if clash:
        return f"its setting {clash[0]!r} is declared already"
    return check
