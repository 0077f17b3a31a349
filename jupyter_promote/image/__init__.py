"""Stage 2, environment -> image: a frozen environment's content-addressed container image, built (or found),
verified to reproduce the lock, and pushed. The builder is in :mod:`.builder`; what it produces in :mod:`.ref`;
planning, the checks before a build, the Dockerfile's recipe, the build, the registry and verification each
have their module.
"""

from .builder import BuildPlan, ImageBuilder
from .ref import LABEL_LOCK, LABEL_PYTHON, LABEL_RECIPE, LABEL_VERIFICATION, ImageRef

__all__ = [
    "LABEL_LOCK",
    "LABEL_PYTHON",
    "LABEL_RECIPE",
    "LABEL_VERIFICATION",
    "BuildPlan",
    "ImageBuilder",
    "ImageRef",
]
