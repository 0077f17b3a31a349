"""``POST jobs`` bodies and notebook paths: a request's JSON checked field by field, every error a 400
naming its field (``field``: a dotted path such as ``resources.cpus``), paths resolved as the contents
manager resolves them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..config import PromoteSettings
from ..errors import ForbiddenPath, UsageError
from ..job.parameters import MAX_VALUE_DEPTH, check_parameters, nested_deeper_than
from ..job.sweep import expand
from ..launch.launcher import check_kernel
from ..launch.request import GroupRequest, PromoteRequest, group_request
from ..models import MonitorSettings

_PAYLOAD_FIELDS = {"notebook", "kernel", "target", "parameters", "resources", "monitor", "deterministic", "sweep",
                   "max_parallel", "replicas", "seeds", "contention", "notify"}  # fmt: skip
RESOURCE_OPTIONS = ("cpus", "memory", "gpus", "time")
#: The deepest a request body may nest: a parameter value's limit, in its object, in the body.
MAX_BODY_DEPTH = MAX_VALUE_DEPTH + 2


def confine(root: str, path: Any, field: str = "notebook", allow_hidden: bool = True) -> str:
    """``path`` (relative to the server's root) as the absolute path the contents manager serves, or an error.

    Resolved as jupyter_server's ``FileContentsManager`` resolves it: ``root`` with ``~`` expanded, the path
    joined to it lexically (a symlink inside the root is followed wherever it leads, as the file browser
    follows it), absolute paths and ``..`` refused, hidden files refused unless the contents manager allows
    them. Nothing is read before the path is accepted.
    """
    if not isinstance(path, str) or not path.strip():
        raise UsageError(f"{field}: must be a path relative to the server's root", subject=field, field=field)
    if "\x00" in path:
        raise UsageError(f"{field}: a path cannot contain a NUL character", subject=field, field=field)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if os.path.isabs(path) or ".." in parts:
        raise ForbiddenPath(f"{field} {path!r}: outside the server's root", subject=field, field=field)
    if not allow_hidden and any(p.startswith(".") for p in parts):
        raise ForbiddenPath(f"{field} {path!r}: a hidden file (ContentsManager.allow_hidden is off)", subject=field,
                            field=field)  # fmt: skip
    full = os.path.join(os.path.abspath(os.path.expanduser(root)), *parts)
    if not os.path.isfile(full):
        raise UsageError(f"{field} {path!r}: no such notebook", subject=field, field=field)
    return full


def relative_to_root(root: str, path: str) -> str | None:
    """``path`` relative to the server's root (what the contents API takes), or None when it is outside.

    The inverse of :func:`confine`: lexical, with ``~`` expanded, so a notebook reached through a symlink
    maps back to the path the file browser shows.
    """
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(os.path.expanduser(root)))
    return None if relative == ".." or relative.startswith("../") else relative.replace(os.sep, "/")


def check_body(body: Any) -> dict[str, Any]:
    """``body`` when it is a JSON object nesting at most :data:`MAX_BODY_DEPTH` deep, else a 400: what is
    deeper than any field needs would exhaust the stack of the code that reads it."""
    if not isinstance(body, dict):
        raise UsageError("body: must be a JSON object", subject="body", field="body")
    if nested_deeper_than(body, MAX_BODY_DEPTH):
        raise UsageError(f"body: nests more than {MAX_BODY_DEPTH} deep", subject="body", field="body")
    return body


def request_from_payload(
    payload: Any, resolve: Callable[[Any], str], settings: PromoteSettings
) -> tuple[PromoteRequest, GroupRequest | None]:
    """Validate a ``POST jobs`` body: the request, and the group it asks for (None for one job).

    Every error names its field. Resources and monitor settings the body leaves out come from ``settings``
    (the server's defaults, the CLI's too).
    """
    check_body(payload)
    unknown = sorted(set(payload) - _PAYLOAD_FIELDS)
    if unknown:
        raise UsageError(f"{unknown[0]}: unknown field (expected {', '.join(sorted(_PAYLOAD_FIELDS))})",
                         subject=unknown[0], field=unknown[0])  # fmt: skip
    notebook = resolve(payload.get("notebook"))
    target = payload.get("target", settings.default_target)
    if not isinstance(target, str):
        raise UsageError("target: must be a string", subject="target", field="target")
    offered = settings.target_names()
    if target not in offered:
        raise UsageError(f"target {target!r}: no such target here (available: {', '.join(offered)})",
                         subject="target", field="target")  # fmt: skip
    for name in ("parameters", "resources", "monitor"):
        if not isinstance(payload.get(name, {}), dict):
            raise UsageError(f"{name}: must be an object", subject=name, field=name)
    parameters = _checked_parameters(payload.get("parameters", {}), "parameters")
    if not isinstance(payload.get("deterministic", False), bool):
        raise UsageError("deterministic: must be true or false", subject="deterministic", field="deterministic")
    kernel = payload.get("kernel")
    check_kernel(kernel)
    notify = payload.get("notify")
    if notify is not None and (not isinstance(notify, list) or not all(isinstance(n, str) for n in notify)):
        raise UsageError("notify: must be a list of destination names", subject="notify", field="notify")
    request = PromoteRequest(
        notebook=notebook,
        kernel=kernel,
        target=target,
        parameters=parameters,
        resources=_resources(payload.get("resources", {}), settings),
        monitor=_monitor(payload.get("monitor", {}), settings),
        deterministic=payload.get("deterministic", False),
        notify=notify,
    )
    sets = expand(payload["sweep"]) if "sweep" in payload else None
    for index, values in enumerate(sets or []):
        _checked_parameters(values, f"sweep[{index}]")
    group = group_request(sets, payload.get("max_parallel"), payload.get("replicas"), payload.get("seeds"),
                          payload.get("contention"))  # fmt: skip
    return request, group


def _checked_parameters(parameters: dict[str, Any], field: str) -> dict[str, Any]:
    """Names that are identifiers and values of bounded size, as the CLI checks them; a 400 naming ``field``."""
    try:
        return check_parameters(parameters, field)
    except UsageError as exc:
        raise UsageError(exc.message, subject=field, field=field) from None


def _resources(resources: dict[str, Any], settings: PromoteSettings) -> Any:
    unknown = sorted(set(resources) - set(RESOURCE_OPTIONS))
    if unknown:
        raise UsageError(f"resources.{unknown[0]}: unknown option ({', '.join(RESOURCE_OPTIONS)})",
                         subject="resources", field=f"resources.{unknown[0]}")  # fmt: skip
    try:
        return settings.resources(resources)
    except UsageError as exc:
        raise UsageError(f"resources.{exc.message.removeprefix('--')}", subject="resources",
                         field=_path("resources", exc.subject)) from None  # fmt: skip


def _monitor(monitor: dict[str, Any], settings: PromoteSettings) -> MonitorSettings:
    fields = MonitorSettings.__dataclass_fields__
    unknown = sorted(set(monitor) - set(fields))
    if unknown:
        raise UsageError(f"monitor.{unknown[0]}: unknown setting ({', '.join(fields)})", subject="monitor",
                         field=f"monitor.{unknown[0]}")  # fmt: skip
    name = ""
    try:
        given = {}
        for name, value in monitor.items():
            given[name] = _typed(fields[name].default, value)
        name = ""
        return settings.monitor(given)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"monitor: {exc}", subject="monitor", field=f"monitor.{name}".rstrip(".")) from None
    except UsageError as exc:
        raise UsageError(f"monitor.{exc.message}", subject="monitor",
                         field=_path("monitor", exc.subject)) from None  # fmt: skip


def _path(parent: str, name: str | None) -> str:
    """``parent.name`` (``resources.memory``), or ``parent`` when the error concerns the whole object."""
    return f"{parent}.{name}" if name and name != parent else parent


def _typed(default: Any, value: Any) -> Any:
    """A JSON value as the type of a MonitorSettings field (never a bool where a number is meant)."""
    kind = type(default)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"{value!r} is not a {kind.__name__}")
    if kind is str and not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise TypeError(f"{value!r} is not a whole number")
    return kind(value)
