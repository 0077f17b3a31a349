"""What the image stage produces: :class:`ImageRef`, and the labels an environment image carries.

An image with ``LABEL_VERIFICATION`` whose ``ok`` is true was verified to reproduce its lock; no other
image is reused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

LABEL_LOCK = "io.jupyter-promote.lock"
LABEL_RECIPE = "io.jupyter-promote.recipe"
LABEL_VERIFICATION = "io.jupyter-promote.verification"
LABEL_PYTHON = "io.jupyter-promote.python"


@dataclass
class ImageRef:
    """The image of one environment, as job.json records it."""

    ref: str
    id: str
    lock_hash: str
    built: bool
    base_image: str
    digest: str | None = None  # repo@sha256:... once pushed (what cluster nodes pull)
    verification: dict[str, Any] = field(default_factory=dict)
    build_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
