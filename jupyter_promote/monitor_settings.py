"""``MonitorSettings``: what the in-job monitor watches and does, composed of the checks' own declarations.

Each check declares its settings once, as a small frozen dataclass (:mod:`.runtime.settings`): name, type,
default, minimum, allowed values, help. ``MonitorSettings`` is a frozen dataclass that inherits those
dataclasses, so its fields, defaults, minimums (:data:`MONITOR_MINIMUMS`) and the ``*_action`` choices are
the checks' and nothing here repeats them.

Typing: the built-in checks' settings classes are named as bases below, so mypy sees every built-in field
with its type (``settings.stall_timeout_s`` is a float, ``MonitorSettings(stall_timeout_s=...)`` is checked);
a test keeps that list equal to the registry's built-ins. A check installed through an entry point
(:mod:`.runtime.checks`) cannot be known to a type checker; at run time its settings dataclass is added
as one more base of a subclass that takes this class's name, so its fields are real fields (validated,
stored, sent to the job) while the static type stays the built-in one, of which it is a subclass.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .runtime.checks import load_checks
from .runtime.checks.nan import NanSettings
from .runtime.checks.stall import StallSettings
from .runtime.checks.throughput import ThroughputSettings
from .runtime.settings import CoreSettings, Declared, declared

__all__ = ["MONITOR_MINIMUMS", "MonitorSettings", "monitor_setting"]


_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorSettings(CoreSettings, ThroughputSettings, StallSettings, NanSettings):
    """What the in-job monitor watches and what it does about it (baked into the job notebook)."""

    def __post_init__(self) -> None:
        for each in declared(type(self)):
            value = getattr(self, each.name)
            if each.choices and value not in each.choices:
                choices = " or ".join(repr(c) for c in each.choices)
                raise UsageError(f"{each.name} {value!r}: must be {choices}", subject=each.name)

    def checked(self) -> MonitorSettings:
        """This request's settings, bounded (the one place, for the CLI and the server alike): a heartbeat
        every nanosecond would flood the store and the browsers, a NaN would reach the job notebook as code.
        Records stored before the bounds existed still load (``from_json`` does not check them)."""
        for each in _bounded(type(self)):
            value = getattr(self, each.name)
            if not _finite_number(value):
                raise UsageError(f"{each.name} {value!r}: must be a finite number", subject=each.name)
            if each.minimum is not None and value < each.minimum:
                raise UsageError(f"{each.name} {value!r}: must be at least {each.minimum:g}", subject=each.name)
        return self

    def bounded(self) -> MonitorSettings:
        """These settings as loaded from a record someone else may have written (a shared store, an old job):
        each number that is not a finite number becomes its default, each below its minimum that minimum;
        the result passes :meth:`checked`. What a follower derives from them (silence limits) stays sane."""
        changes: dict[str, Any] = {}
        for each in _bounded(type(self)):
            value = getattr(self, each.name)
            if not _finite_number(value):
                changes[each.name] = each.default
            elif each.minimum is not None and value < each.minimum:
                changes[each.name] = each.type(each.minimum)
        return dataclasses.replace(self, **changes) if changes else self

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> MonitorSettings:
        """The settings a record holds. A setting of a check this process does not have (a site's plugin
        installed where the job was promoted, not in the job's image or on a restarted server) is left out
        with a log line: the record still loads, and the job runs without that check."""
        known = {f.name for f in dataclasses.fields(cls)}
        data = data or {}
        unknown = sorted(set(data) - known)
        if unknown:
            _log.info("jupyter-promote: monitor settings of checks not installed here, left out: %s", unknown)
        return cls(**{name: value for name, value in data.items() if name in known})


def _bounded(cls: type[Any]) -> list[Declared]:
    """The numeric settings: each must be a finite number, at least its minimum."""
    return [each for each in declared(cls) if each.type is not str]


def _finite_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _with_plugin_settings(base: type[MonitorSettings]) -> type[MonitorSettings]:
    """``base`` with the settings of the checks installed through entry points, when any declares some."""
    builtin = set(base.__mro__)
    extra = tuple(cls for cls in load_checks().settings_classes() if cls not in builtin)
    if not extra:
        return base
    namespace = {"__module__": base.__module__, "__doc__": base.__doc__, "__qualname__": base.__qualname__}
    return dataclass(frozen=True)(type(base.__name__, (base, *extra), namespace))


if not TYPE_CHECKING:  # see the module's documentation: the static type is the built-in class above
    MonitorSettings = _with_plugin_settings(MonitorSettings)

#: The least value of each numeric monitor setting (seconds, or optimizer steps for check_every).
MONITOR_MINIMUMS: dict[str, float] = {
    each.name: each.minimum for each in declared(MonitorSettings) if each.minimum is not None
}


def monitor_setting(name: str) -> Declared:
    """The declaration of the monitor setting ``name``; a LookupError naming the known ones otherwise."""
    return load_checks().setting(name)
