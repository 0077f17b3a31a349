"""``promote.report(...)``: behavioural metrics, displayed in the notebook and recorded as events."""

from __future__ import annotations

import math
import numbers
from typing import Any

#: The mimetype of a report output; the saved notebook's baseline is read back from it.
REPORT_MIMETYPE = "application/vnd.jupyter-promote.report+json"


def metric_value(name: str, value: Any) -> float | int | bool | str:
    """A JSON-safe metric value: numbers (numpy and torch scalars included) as numbers, NaN/Inf as strings."""
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars and 1-element tensors
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    raise TypeError(f"promote.report({name}=...): {type(value).__name__} is not a number")


def report(tolerance: dict[str, Any] | None = None, **metrics: Any) -> dict[str, Any]:
    from . import current_job

    values = {name: metric_value(name, value) for name, value in metrics.items()}
    payload: dict[str, Any] = {"metrics": values}
    if tolerance:
        payload["tolerance"] = dict(tolerance)
    job = current_job()
    if job is not None:
        job.log.emit("metric", **payload)
    _display(payload)
    return values


def _display(payload: dict[str, Any]) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    text = "promote.report: " + ", ".join(f"{k}={v}" for k, v in payload["metrics"].items())
    display({REPORT_MIMETYPE: payload, "text/plain": text}, raw=True)  # type: ignore[no-untyped-call, unused-ignore]  # IPython ships none
