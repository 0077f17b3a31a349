"""Stage 2, environment -> image: a frozen environment's content-addressed container image, built (or found),
verified to reproduce the lock, and pushed. The builder is in :mod:`.builder`; what it produces in :mod:`.ref`;
planning, the checks before a build, the Dockerfile's recipe, the build, the registry and verification each
have their module.

The names below are imported when first asked for: a job process that needs only :mod:`.shipped` or
:mod:`.venv` (a Ray worker, a Slurm node) never imports the Docker builder through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import ImageBuilder as ImageBuilder
    from .plan import BuildPlan as BuildPlan
    from .ref import LABEL_LOCK as LABEL_LOCK
    from .ref import LABEL_PYTHON as LABEL_PYTHON
    from .ref import LABEL_RECIPE as LABEL_RECIPE
    from .ref import LABEL_VERIFICATION as LABEL_VERIFICATION
    from .ref import ImageRef as ImageRef

_WHERE = {
    "BuildPlan": ".plan",
    "ImageBuilder": ".builder",
    "ImageRef": ".ref",
    "LABEL_LOCK": ".ref",
    "LABEL_PYTHON": ".ref",
    "LABEL_RECIPE": ".ref",
    "LABEL_VERIFICATION": ".ref",
}

__all__ = [
    "LABEL_LOCK",
    "LABEL_PYTHON",
    "LABEL_RECIPE",
    "LABEL_VERIFICATION",
    "BuildPlan",
    "ImageBuilder",
    "ImageRef",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)
