"""``run``'s and ``sweep``'s arguments as a request: the JobRequest body the server takes, checked by the same code.

The arguments become a ``POST jobs`` body (``components/schemas/JobRequest`` of ``server/openapi.yaml``) and
:func:`jupyter_promote.launch.body.request_from_body` makes it a request, as it does for the server. What the
command line says in its own words stays here: the papermill-style parameters (``-p -r -y -f``), the sweep's
sets, ``--monitor KEY=VALUE``, errors that name the flag (``--memory``, not ``resources.memory``), and the
options only a command line has (``--out``, the image options, ``--detach``).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..config import PromoteSettings
from ..errors import UsageError
from ..launch.body import request_from_body
from ..launch.request import GroupRequest, ImageRequest, PromoteRequest
from ..models import MonitorSettings, Resources

#: A body field that names a command-line option another way: an error about it names the option.
_FLAG_OF_FIELD = {
    "max_parallel": "--max-parallel",
    "replicas": "--replicas",
    "seeds": "--seeds",
    "contention": "--contention",
    "target": "--target",
    "notify": "--notify",
    "secrets": "--secret",
    "retries": "--retries",
    "data": "--data",
}


def image_request(args: argparse.Namespace) -> ImageRequest:
    return ImageRequest(
        base_image=args.base_image,
        ca_bundle=args.ca_bundle,
        wheelhouse=args.wheelhouse,
        push=args.push,
        registry=args.registry,
        rebuild=args.rebuild,
    )


def monitor_values(args: argparse.Namespace) -> dict[str, Any]:
    """``--monitor KEY=VALUE`` (and ``--stall-timeout``) as MonitorSettings fields of their types."""
    fields = MonitorSettings.__dataclass_fields__
    values: dict[str, Any] = {}
    for item in args.monitor:
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise UsageError(
                f"--monitor {item}: expected KEY=VALUE with KEY one of {', '.join(fields)}", subject="monitor"
            )
        kind: Any = type(fields[key].default)
        try:
            values[key] = kind(value)
        except ValueError:
            raise UsageError(f"--monitor {item}: {value!r} is not a {kind.__name__}", subject="monitor") from None
    if args.stall_timeout is not None:
        values["stall_timeout_s"] = args.stall_timeout
    return values


def monitor_settings(args: argparse.Namespace, defaults: dict[str, Any] | None = None) -> MonitorSettings:
    """The monitor settings of ``convert`` (no request: the options over ``defaults``)."""
    return MonitorSettings(**{**(defaults or {}), **monitor_values(args)}).checked()


def sweep_sets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The parameter sets of ``sweep``: the -p grid, or the sets file, never both."""
    from ..job.parameters import check_parameters, load_yaml, resolve_type
    from ..job.sweep import expand

    if args.sets_file and args.parameters:
        raise UsageError("-f and -p: give the sets in a file or as a grid, not both", subject="sweep")
    if args.sets_file:
        origin = f"-f {args.sets_file}"
        try:
            with open(args.sets_file, encoding="utf-8") as f:
                spec = load_yaml(f.read(), origin)  # bounded: an alias bomb is refused
        except OSError as exc:
            raise UsageError(f"{origin}: {exc.strerror}", subject=args.sets_file) from None
        return [check_parameters(values, origin) for values in expand(spec, origin=origin)]
    grid: dict[str, list[Any]] = {}
    for item in args.parameters:
        if len(item) < 2:
            raise UsageError(f"-p {item[0]}: give the parameter's values after its name", subject=item[0])
        grid[item[0]] = [resolve_type(v) for v in item[1:]]
    if not grid:
        raise UsageError("sweep: nothing to vary (give -p NAME V1 V2 ... or -f SETS.yaml)", subject="sweep")
    return expand(grid, origin="-p")


def _group_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The body's group fields, after the checks whose words name the command line's options."""
    if args.command == "sweep":
        if args.max_parallel is not None and args.max_parallel < 1:
            raise UsageError(
                f"--max-parallel {args.max_parallel}: must be at least 1", subject="max_parallel", field="max_parallel"
            )
        return {"sweep": sweep_sets(args), "max_parallel": args.max_parallel}
    if args.replicas is not None and args.replicas < 1:
        raise UsageError(f"--replicas {args.replicas}: must be at least 1", subject="replicas", field="replicas")
    if args.contention and (args.replicas is not None or args.seeds is not None):
        raise UsageError(
            "--contention with --replicas/--seeds: one at a time", subject="contention", field="contention"
        )
    if args.detach and (args.replicas is not None or args.seeds is not None or args.contention):
        raise UsageError("--detach: applies to one job (not to --replicas, --seeds or --contention)", subject="detach")
    return {"replicas": args.replicas, "seeds": args.seeds, "contention": args.contention}


def _count(name: str, value: str | None) -> int | None:
    """``--cpus``/``--gpus`` as the schema types it (an integer), or refused in the option's words with its value."""
    count: int | None = None if value is None else getattr(Resources.parse(**{name: value}), name)
    return count


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """``run``'s or ``sweep``'s arguments as a JobRequest body (fields left out where the command line is silent)."""
    from ..job.parameters import collect_parameters

    parameters: dict[str, Any] = {}
    if args.command != "sweep":
        parameters = collect_parameters(
            args.parameters, args.parameters_raw, args.parameters_yaml, args.parameters_file
        )
    resources = {
        "cpus": _count("cpus", args.cpus),
        "memory": args.memory,
        "gpus": _count("gpus", args.gpus),
        "time": args.time,
    }
    body: dict[str, Any] = {
        "notebook": args.notebook,
        "kernel": args.kernel,
        "target": args.target,
        "parameters": parameters,
        "resources": {name: value for name, value in resources.items() if value is not None},
        "monitor": monitor_values(args),
        "deterministic": args.deterministic,
        "notify": args.notify,
        "secrets": _secrets(args.secret),
        "retries": args.retries,
        "data": _data(args.data),
        **_group_fields(args),
    }
    return {name: value for name, value in body.items() if value is not None}


def _data(given: list[str] | None) -> dict[str, str] | None:
    """``--data NAME=URL`` options as the body's ``data``; a name given twice is refused (one would be lost)."""
    if not given:
        return None
    data: dict[str, str] = {}
    for text in given:
        name, _, url = text.partition("=")
        if name in data:
            raise UsageError(f"--data {name}: given twice", subject=name, field=f"data.{name}")
        data[name] = url
    return data


def _secrets(given: list[str] | None) -> dict[str, str] | None:
    """``--secret NAME[=SOURCE]`` options as the body's ``secrets`` (None when none was given)."""
    from ..secrets import parse_option

    return dict(parse_option(text) for text in given) if given else None


def in_cli_words(exc: UsageError) -> UsageError:
    """A request error as the command line says it: the option, not the body's field path."""
    message, field = exc.message, exc.field or ""
    if field.startswith("resources.") and message.startswith("resources."):
        message = "--" + message.removeprefix("resources.")
    elif field.startswith("monitor") and message.startswith("monitor"):
        message = "--monitor " + message.removeprefix("monitor").lstrip(".: ")
    elif field in _FLAG_OF_FIELD and message.startswith(field):
        message = _FLAG_OF_FIELD[field] + message.removeprefix(field)
    return UsageError(message, subject=exc.subject, field=exc.field)


def _in_words_of(args: argparse.Namespace, exc: UsageError) -> UsageError:
    """A request error in the words of what was typed: the option, or the setting a default came from."""
    field = exc.field or ""
    if field.startswith("monitor.") and exc.message.startswith(field):
        name, reason = field.removeprefix("monitor."), exc.message.removeprefix(field).lstrip()
        if name == "stall_timeout_s" and args.stall_timeout is not None:
            return UsageError(f"--stall-timeout {reason}", subject=exc.subject, field=field)
        if not any(item.partition("=")[0] == name for item in args.monitor):  # from the site's defaults
            return UsageError(f"c.PromoteSettings.monitor_defaults: {name} {reason}", subject=exc.subject, field=field)
    return in_cli_words(exc)


def _as_given(notebook: Any) -> str:
    """The command line's notebook, a path on this machine as given (read, and refused if it must be, later)."""
    if not isinstance(notebook, str) or not notebook:
        raise UsageError("notebook: give the path of a notebook", subject="notebook", field="notebook")
    return notebook


def request_from_args(
    args: argparse.Namespace, settings: PromoteSettings
) -> tuple[PromoteRequest, GroupRequest | None]:
    """``run``'s or ``sweep``'s arguments as the request both doors make, and the group they ask for."""
    body = request_body(args)
    try:
        request, group = request_from_body(body, _as_given, settings)
    except UsageError as exc:
        raise _in_words_of(args, exc) from None
    return dataclasses.replace(request, out=args.out, image=image_request(args)), group
