"""Targets are plugins: built-ins first, then the ``jupyter_promote.targets`` entry point group."""

from __future__ import annotations

import functools
import logging
from importlib.metadata import entry_points

from ..errors import TargetError
from .base import Target, TargetStatus
from .docker import DockerTarget
from .kubernetes import KubernetesTarget
from .local import LocalTarget
from .ray import RayTarget
from .slurm import SlurmTarget

__all__ = ["BUILTIN_TARGETS", "Target", "TargetStatus", "load_target_classes", "target_class"]

ENTRY_POINT_GROUP = "jupyter_promote.targets"
BUILTIN_TARGETS: dict[str, type[Target]] = {
    "local": LocalTarget,
    "docker": DockerTarget,
    "slurm": SlurmTarget,
    "ray": RayTarget,
    "kubernetes": KubernetesTarget,
}
log = logging.getLogger("jupyter_promote")


def load_target_classes() -> dict[str, type[Target]]:
    """Every target: the built-ins, then the entry points (one that fails to load is logged and skipped).

    Read once per process: scanning the installed distributions' entry points takes milliseconds.
    """
    return dict(_load_target_classes())


@functools.cache
def _load_target_classes() -> dict[str, type[Target]]:
    classes = dict(BUILTIN_TARGETS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in classes:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin must not break the tool
            log.warning(
                "jupyter-promote: target plugin %r (%s) failed to load and is skipped: %s", ep.name, ep.value, exc
            )
            continue
        if not (isinstance(cls, type) and issubclass(cls, Target)):
            log.warning("jupyter-promote: target plugin %r (%s) is not a Target subclass; skipped", ep.name, ep.value)
            continue
        classes[ep.name] = cls
    return classes


def target_class(name: str) -> type[Target]:
    classes = load_target_classes()
    if name not in classes:
        raise TargetError(f"--target {name}: no such target (available: {', '.join(sorted(classes))})", subject=name)
    return classes[name]
