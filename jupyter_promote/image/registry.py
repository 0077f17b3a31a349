"""Push an environment image to a registry so cluster nodes can pull it by digest."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ImageError
from .docker_engine import client


def push(ref: str, on_line: Callable[[str], None]) -> str:
    """Push ``ref`` (REPO:TAG); returns the pullable ``REPO@sha256:...`` digest."""
    repository, tag = ref.rsplit(":", 1)
    on_line(f"pushing {ref}")
    digest = None
    last_status = None
    for item in client().images.push(repository, tag=tag, stream=True, decode=True):
        if "error" in item:
            raise ImageError(f"--push {ref}: {item['error']}", subject=ref)
        aux = item.get("aux") or {}
        if aux.get("Digest"):
            digest = aux["Digest"]
        status = item.get("status")
        if status and status != last_status and not item.get("progressDetail"):
            last_status = status
    if not digest:
        raise ImageError(f"--push {ref}: the registry returned no digest", subject=ref)
    pullable = f"{repository}@{digest}"
    on_line(f"pushed {pullable}")
    return pullable
