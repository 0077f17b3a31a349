"""Seeds and determinism flags, applied to torch only once the notebook imports it."""

from __future__ import annotations

import os
import random
import sys
from types import ModuleType

from .imports import when_imported


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (torch when, and as soon as, it is imported)."""
    seed = int(seed)
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # for subprocesses and DataLoader workers started from here
    numpy = sys.modules.get("numpy")
    if numpy is None:
        try:
            import numpy
        except ImportError:
            numpy = None
    if numpy is not None:
        numpy.random.seed(seed % 2**32)

    def seed_torch(torch: ModuleType) -> None:
        torch.manual_seed(seed)  # seeds every CUDA device too, lazily

    when_imported("torch", seed_torch)


def enable_determinism() -> None:
    """Ask for deterministic kernels: cuBLAS workspace (before CUDA starts), cuDNN flags, deterministic algorithms."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    def pin(torch: ModuleType) -> None:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    when_imported("torch", pin)
