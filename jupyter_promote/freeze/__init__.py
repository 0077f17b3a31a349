"""Stage 1, kernel -> environment: what a kernel really runs with, frozen into a content-addressed lock.
The freezer is in :mod:`.freezer`; finding kernels, introspecting them and writing the lock each have their
module.
"""

from .freezer import (
    DEFAULT_ENV_ALLOWLIST,
    KEY_PACKAGES,
    LOCK_FILE,
    OBSERVED_FILE,
    REQUIREMENTS_FILE,
    FrozenEnv,
    environment_card,
    freeze,
    observe,
    read_environment,
    read_lock,
    tree_hash,
)
from .kernels import Interpreter, kernel_interpreter, python_interpreter

__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "KEY_PACKAGES",
    "LOCK_FILE",
    "OBSERVED_FILE",
    "REQUIREMENTS_FILE",
    "FrozenEnv",
    "Interpreter",
    "environment_card",
    "freeze",
    "kernel_interpreter",
    "observe",
    "python_interpreter",
    "read_environment",
    "read_lock",
    "tree_hash",
]
