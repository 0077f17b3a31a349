"""The JobRequest schema of ``server/openapi.yaml``, the one declaration of what a job request holds.

:func:`job_request_schema` reads it once and compiles it on first use (fastjsonschema: a validator
generated as Python code, defaults filled in). A body that does not conform is refused with one line
naming its field as a dotted path (``resources.cpus``); array items are shown in the message
(``seeds[0]``) and belong to their array's field (``seeds``), the input a form shows.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UsageError

#: The REST API's description; ``components/schemas/JobRequest`` is a job request.
OPENAPI = Path(__file__).resolve().parent.parent / "server" / "openapi.yaml"
SCHEMA_NAME = "JobRequest"

#: How a JSON Schema type reads in a message.
_TYPE_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


class RequestSchema:
    """One JobRequest schema (``path``: an OpenAPI document), compiled on first use."""

    def __init__(self, path: Path = OPENAPI, name: str = SCHEMA_NAME) -> None:
        import yaml

        self.document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        self.name = name
        self.schema: dict[str, Any] = self.document["components"]["schemas"][name]

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields a request may hold, in the schema's order."""
        return tuple(self.schema.get("properties", {}))

    @functools.cached_property
    def _validator(self) -> Callable[[Any], Any]:
        return self._compile(self.schema)

    def _compile(self, schema: dict[str, Any]) -> Callable[[Any], Any]:
        """A validator of ``schema``, its ``$ref`` resolved against the whole document."""
        import fastjsonschema

        root = {**schema, "components": self.document.get("components", {})}
        validator: Callable[[Any], Any] = fastjsonschema.compile(root, use_default=True)
        return validator

    def validate(self, body: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``body`` with the schema's defaults filled in, or a :class:`UsageError` naming the field."""
        import fastjsonschema

        try:
            valid: dict[str, Any] = self._validator(copy.deepcopy(body))
        except fastjsonschema.JsonSchemaValueException as exc:
            raise self._refusal(body, exc.path[1:], exc) from None
        return valid

    def _refusal(self, body: Any, path: list[str], exc: Any) -> UsageError:
        """The one-line error for the value of ``body`` at ``path`` that breaks a rule of its schema (``exc``)."""
        rule, expected, value, schema = exc.rule, exc.rule_definition, exc.value, exc.definition
        if rule == "required":
            missing = next(name for name in expected if name not in value)
            return _error(body, [*path, missing], "required")
        if rule == "additionalProperties":
            allowed = sorted(schema.get("properties", {}))
            unknown = sorted(set(value) - set(allowed))[0]
            return _error(body, [*path, unknown], f"unknown field (expected {', '.join(allowed)})")
        if rule == "oneOf":
            return self._no_alternative(body, path, expected, value)
        if rule == "type":
            kinds = [expected] if isinstance(expected, str) else list(expected)
            return _error(body, path, "must be " + " or ".join(_TYPE_WORDS.get(k, k) for k in kinds))
        if rule == "minimum":
            return _error(body, path, f"{_shown(value)} must be at least {expected}")
        if rule == "maximum":
            return _error(body, path, f"{_shown(value)} must be at most {expected}")
        if rule == "minItems":
            return _error(body, path, f"must hold at least {expected} item{'s' if expected != 1 else ''}")
        if rule == "enum":
            return _error(body, path, f"{_shown(value)} must be one of {', '.join(map(str, expected))}")
        if rule in _LENGTH_WORDS:
            unit = "character" if isinstance(value, str) else "item"
            return _error(body, path, f"{_LENGTH_WORDS[rule]} {expected} {unit}{'s' if expected != 1 else ''}")
        if rule == "pattern":
            return _error(body, path, f"{_shown(value)} must match {expected}")
        return _error(body, path, f"does not conform to the {self.name} schema ({rule})")

    def _no_alternative(self, body: Any, path: list[str], alternatives: list[dict[str, Any]], value: Any) -> UsageError:
        """A value that matches none of ``oneOf``: the alternative of the value's own type says what is wrong."""
        import fastjsonschema

        for alternative in alternatives:
            if alternative.get("type") == _json_type(value):
                try:
                    self._compile(alternative)(copy.deepcopy(value))
                except fastjsonschema.JsonSchemaValueException as exc:
                    return self._refusal(body, [*path, *exc.path[1:]], exc)
        kinds = sorted({_TYPE_WORDS.get(str(a.get("type")), str(a.get("type"))) for a in alternatives})
        return _error(body, path, "must be " + " or ".join(kinds))


#: The bounds on a string's or a list's length, in words.
_LENGTH_WORDS = {
    "maxLength": "must be at most",
    "minLength": "must be at least",
    "maxItems": "must hold at most",
}


@functools.cache
def job_request_schema() -> RequestSchema:
    """The package's JobRequest schema (read on first use, compiled on first validation)."""
    return RequestSchema()


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "null"


def _error(body: Any, path: list[str], reason: str) -> UsageError:
    """The error at ``path`` in ``body``: its message names every step (``sweep[1]``, ``resources.cpus``), its
    field the steps down to the first array item (``seeds[0]`` is the field ``seeds``, the input a form shows)."""
    shown, field, node = "", "", body
    for step in path:
        if isinstance(node, list):
            field = field or shown
            shown += f"[{step}]"
            node = node[int(step)] if step.isdigit() and int(step) < len(node) else None
        else:
            shown = f"{shown}.{_name(step)}" if shown else _name(step)
            node = node.get(step) if isinstance(node, dict) else None
    field = field or shown or "body"
    return UsageError(f"{shown or 'body'}: {reason}", subject=path[0] if path else "body", field=field)


def _name(step: str) -> str:
    """A field's name as a message shows it: as it is, or quoted when it is empty or not printable."""
    return step if step and step.isprintable() else repr(step)


def _shown(value: Any) -> str:
    """A value as a message shows it: short, one line."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        text = "a number"
    return text if len(text) <= 40 else text[:37] + "..."
