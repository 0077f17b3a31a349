"""Stage 2, environment -> image: a frozen environment's content-addressed container image, built (or found),
verified to reproduce the lock, and pushed. The builder is in :mod:`.builder`; the Dockerfile's recipe, the
build, the registry and verification each have their module.
"""

from .builder import LABEL_LOCK, LABEL_PYTHON, LABEL_RECIPE, LABEL_VERIFICATION, BuildPlan, ImageBuilder, ImageRef

__all__ = [
    "LABEL_LOCK",
    "LABEL_PYTHON",
    "LABEL_RECIPE",
    "LABEL_VERIFICATION",
    "BuildPlan",
    "ImageBuilder",
    "ImageRef",
]
