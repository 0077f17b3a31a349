"""A job request as a JSON body (the JobRequest schema of ``server/openapi.yaml``) made into a request.

Both doors come through here: the server with a ``POST jobs`` body (its notebook confined to the server's
root), the command line with the body its arguments make. The schema (:mod:`.schema`) checks a body's
shape; here is only what a schema cannot say: the notebook resolved by the door, a target offered here,
parameter names and sizes, an installed kernel, sizes such as ``4G``, monitor settings, a sweep's sets and
a group's options: each field with such a rule has its handler here (:data:`JOB_FIELDS` for one job,
:data:`~.request.GROUP_FIELDS` for a group). A field without one needs nothing here: the schema checks it and
it reaches job.json's ``request`` as asked, read where it takes effect. Every error is one line naming its
field as a dotted path (``resources.cpus``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import PromoteSettings
from ..errors import UsageError
from ..job.parameters import MAX_VALUE_DEPTH, check_parameters, nested_deeper_than
from ..job.sweep import expand
from ..models import JobRecord, MonitorSettings
from .launcher import check_kernel
from .request import GroupRequest, PromoteRequest, group_request
from .schema import job_request_schema

#: A door's reading of a request's notebook path: the full path of a notebook it may run, or an error.
Resolve = Callable[[Any], str]
#: One field of a job's request: (the validated body, the door's resolve, the settings) -> its value.
FieldHandler = Callable[[dict[str, Any], Resolve, PromoteSettings], Any]
#: The deepest a request body may nest: a parameter value's limit, in its object, in the body.
MAX_BODY_DEPTH = MAX_VALUE_DEPTH + 2


def check_body(body: Any) -> dict[str, Any]:
    """``body`` when it is a JSON object nesting at most :data:`MAX_BODY_DEPTH` deep, else a 400: what is
    deeper than any field needs would exhaust the stack of the code that reads it."""
    if not isinstance(body, dict):
        raise UsageError("body: must be a JSON object", subject="body", field="body")
    if nested_deeper_than(body, MAX_BODY_DEPTH):
        raise UsageError(f"body: nests more than {MAX_BODY_DEPTH} deep", subject="body", field="body")
    return body


def request_from_body(
    body: Any, resolve: Resolve, settings: PromoteSettings
) -> tuple[PromoteRequest, GroupRequest | None]:
    """The request a JobRequest ``body`` asks for, and the group it asks for (None for one job).

    ``resolve`` reads the notebook path (the server confines it to its root). Resources and monitor
    settings the body leaves out come from ``settings``. The request's ``body`` is what job.json keeps
    (see :func:`stored_body`).
    """
    valid = job_request_schema().validate(check_body(body))
    request = PromoteRequest(**{name: handle(valid, resolve, settings) for name, handle in JOB_FIELDS.items()})
    sets = _sweep_sets(valid["sweep"]) if "sweep" in valid else None
    group = group_request(
        sets, valid.get("max_parallel"), valid.get("replicas"), valid.get("seeds"), valid.get("contention")
    )
    request.body = stored_body(valid, request, settings)
    return request, group


def stored_body(valid: dict[str, Any], request: PromoteRequest, settings: PromoteSettings) -> dict[str, Any]:
    """The request as job.json keeps it: the body as asked (the schema's defaults filled in) with what the
    door filled in: the notebook's full path, the target, the site's default resources and monitor
    settings. A rerun under other defaults, or through the other door, asks for the same."""
    stored = {**valid, "notebook": os.path.abspath(request.notebook), "target": request.target}
    resources = {**settings.default_resources, **valid.get("resources", {})}
    monitor = {**settings.monitor_defaults, **valid.get("monitor", {})}
    filled = {"resources": resources, "monitor": monitor, "secrets": request.secrets}
    return {**stored, **{name: value for name, value in filled.items() if value}}


def _notebook(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> str:
    return resolve(body.get("notebook"))


def _target(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> str:
    target: str = body.get("target", settings.default_target)
    offered = settings.target_names()
    if target not in offered:
        raise UsageError(
            f"target {target!r}: no such target here (available: {', '.join(offered)})",
            subject="target",
            field="target",
        )
    return target


def _parameters(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> dict[str, Any]:
    return _checked_parameters(body.get("parameters", {}), "parameters")


def _deterministic(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> bool:
    return bool(body.get("deterministic", False))


def _kernel(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> str | None:
    kernel: str | None = body.get("kernel")
    check_kernel(kernel)
    return kernel


def _notify(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> list[str] | None:
    notify: list[str] | None = body.get("notify")
    return notify


def _secrets(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> dict[str, str]:
    """The job's secrets (the site's defaults it can get, under the request's own), each checked to be there
    now: a source that is not is a 400, before the job is accepted (the values are read again at submit)."""
    from ..secrets import check_target, deliverable_defaults, refs_of, stored
    from ..secrets import resolve as values_of

    target = body.get("target", settings.default_target)
    refs = refs_of(body.get("secrets", {}), deliverable_defaults(settings.secrets, target))
    check_target(refs, target)
    values_of(refs)
    return stored(refs)


def _data(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> dict[str, str]:
    """The job's inputs, each parsed (a scheme fsspec knows and can open here): reachability is checked when
    the job is prepared, with its secrets."""
    from ..data import parse_data

    return {name: parse_data(f"{name}={url}").url for name, url in body.get("data", {}).items()}


def _retries(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> int:
    return int(body.get("retries", 0))


def _resources(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> Any:
    try:
        return settings.resources(body.get("resources", {}))
    except UsageError as exc:
        message = f"resources.{exc.message.removeprefix('--')}"
        raise UsageError(message, subject="resources", field=_path("resources", exc.subject)) from None


def _monitor(body: dict[str, Any], resolve: Resolve, settings: PromoteSettings) -> MonitorSettings:
    monitor: dict[str, Any] = body.get("monitor", {})
    fields = MonitorSettings.__dataclass_fields__
    unknown = sorted(set(monitor) - set(fields))
    if unknown:
        message = f"monitor.{unknown[0]}: unknown setting ({', '.join(fields)})"
        raise UsageError(message, subject="monitor", field=f"monitor.{unknown[0]}")
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
        raise UsageError(f"monitor.{exc.message}", subject="monitor", field=_path("monitor", exc.subject)) from None


#: One job's fields of the JobRequest schema, each with its handler, in the order their errors are found.
JOB_FIELDS: dict[str, FieldHandler] = {
    "notebook": _notebook,
    "target": _target,
    "parameters": _parameters,
    "deterministic": _deterministic,
    "kernel": _kernel,
    "notify": _notify,
    "secrets": _secrets,
    "retries": _retries,
    "data": _data,
    "resources": _resources,
    "monitor": _monitor,
}


def _sweep_sets(sweep: Any) -> list[dict[str, Any]]:
    """A sweep's parameter sets, each checked as parameters are; an error names the field ``sweep``."""
    try:
        sets = expand(sweep)
    except UsageError as exc:
        raise UsageError(exc.message, subject=exc.subject, field="sweep") from None
    for index, values in enumerate(sets):
        _checked_parameters(values, f"sweep[{index}]")
    return sets


def _checked_parameters(parameters: dict[str, Any], field: str) -> dict[str, Any]:
    """Names that are identifiers and values of bounded size, as the CLI checks them; a 400 naming ``field``."""
    try:
        return check_parameters(parameters, field)
    except UsageError as exc:
        raise UsageError(exc.message, subject=field, field=field) from None


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


def rerun_request(
    record: JobRecord, owner: str = "", settings: PromoteSettings | None = None, resolve: Resolve | None = None
) -> PromoteRequest:
    """The request of ``record``'s job, asked again by ``owner``: the JobRequest job.json keeps, made into a
    request again (``resolve`` reads its notebook path: by default, it must still exist); a new id and run
    directory, the image options are the target's configuration. A record written before job.json kept
    the request is read field by field."""
    if record.request:
        # the notebook is the record's own, the path the server confined (a stored request cannot name another)
        body = {**record.request, "notebook": record.notebook}
        request, _ = request_from_body(body, resolve or _existing, settings or PromoteSettings())
        request.owner = owner
        return request
    return PromoteRequest(
        notebook=record.notebook,
        target=record.target,
        parameters=dict(record.parameters),
        resources=record.resources,
        monitor=record.monitor,
        deterministic=record.deterministic,
        kernel=record.kernel or None,
        notify=list(record.notify),
        owner=owner,
    )


def _existing(path: Any) -> str:
    """A stored request's notebook: its full path, while the notebook is there."""
    if not isinstance(path, str) or not Path(path).is_file():
        raise UsageError(f"notebook {path}: no longer exists", subject=str(path), field="notebook")
    return path
