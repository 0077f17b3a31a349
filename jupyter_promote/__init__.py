"""jupyter-promote: turn a notebook that works into a cluster job that behaves the same way.

This module holds only the Jupyter extension entry points and the public in-job API, so that
``import jupyter_promote as promote`` is cheap inside a kernel (standard library only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["__version__", "attempt", "checkpoint_dir", "data", "report"]


def report(tolerance: dict[str, Any] | None = None, **metrics: Any) -> dict[str, float]:
    """Record behavioural metrics of this run, e.g. ``promote.report(accuracy=0.93, loss=0.12)``.

    In an interactive notebook the metrics are displayed and stored in the cell's output, so the
    saved notebook carries its own baseline; in a promoted job they also become ``metric`` events.
    """
    from .runtime.report import report as _report

    return _report(tolerance=tolerance, **metrics)


def checkpoint_dir() -> Path:
    """A folder for this job's checkpoints that survives its attempts (``--retries``): save there, and load
    from there when it holds something, and a job started again after its node was lost continues from its
    last checkpoint. Empty for a new job; a fresh temporary folder in an interactive session."""
    from .runtime.checkpoints import checkpoint_dir as _checkpoint_dir

    return _checkpoint_dir()


def data(name: str) -> Path:
    """Where the job's input ``name`` (``--data NAME=URL``) lies on this node: a folder for a prefix, a file
    for one object; fetched before the kernel started and cached on the node by content."""
    from .runtime.inputs import data as _data

    return _data(name)


def attempt() -> int:
    """Which attempt of the job this is: 1, then 2, 3, ... once the infrastructure failed it."""
    from .runtime.checkpoints import attempt as _attempt

    return _attempt()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-promote"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .server.app import PromoteExtension

    return [{"module": "jupyter_promote", "app": PromoteExtension}]
