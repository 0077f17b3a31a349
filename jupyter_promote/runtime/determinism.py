"""Seeds and determinism flags, applied to torch only once the notebook imports it."""

from __future__ import annotations

import os
import random
import sys
import warnings
from types import ModuleType
from typing import Any

from .imports import when_imported


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (torch when, and as soon as, it is imported)."""
    seed = int(seed)
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # for subprocesses and DataLoader workers started from here
    numpy = sys.modules.get("numpy")
    if numpy is None:
        try:
            import numpy  # type: ignore[no-redef, unused-ignore]  # no-redef only where numpy is not installed
        except ImportError:
            numpy = None
    if numpy is not None:
        numpy.random.seed(seed % 2**32)

    def seed_torch(torch: ModuleType) -> None:
        torch.manual_seed(seed)  # seeds every CUDA device too, lazily

    when_imported("torch", seed_torch)


def enable_determinism(log: Any = None) -> None:
    """Ask for deterministic kernels: cuBLAS workspace (before CUDA starts), cuDNN flags, deterministic
    algorithms, and seeded DataLoader workers. An operation with no deterministic implementation raises an
    ``alert`` event naming it and its cell (the job goes on: the alert says its result may not reproduce).
    """
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    def pin(torch: ModuleType) -> None:
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    when_imported("torch", pin)
    when_imported("torch.utils.data", _seed_data_loaders)
    if log is not None:
        _alert_on_nondeterministic_ops(log)


def _seed_data_loaders(data: ModuleType) -> None:
    """DataLoaders the notebook makes get a seeded ``generator`` and ``worker_init_fn`` unless given them."""
    loader = data.DataLoader
    if getattr(loader.__init__, "_promote_seeded", False):
        return
    original = loader.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        import torch

        if kwargs.get("generator") is None:
            kwargs["generator"] = torch.Generator().manual_seed(torch.initial_seed())
        if kwargs.get("worker_init_fn") is None:
            kwargs["worker_init_fn"] = seed_worker
        original(self, *args, **kwargs)

    __init__._promote_seeded = True  # type: ignore[attr-defined]
    loader.__init__ = __init__


def seed_worker(worker_id: int) -> None:
    """A DataLoader worker's Python and numpy generators, from the seed torch gave the worker."""
    import torch

    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


_NONDETERMINISTIC = "does not have a deterministic implementation"


def _alert_on_nondeterministic_ops(log: Any) -> None:
    seen: set[tuple[str, str]] = set()
    warnings.filterwarnings("always", message=f".*{_NONDETERMINISTIC}")
    previous = warnings.showwarning

    def showwarning(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        text = str(message)
        if _NONDETERMINISTIC in text:
            op = text.split(_NONDETERMINISTIC, maxsplit=1)[0].strip()
            cell = _current_cell()
            if (op, cell) not in seen:
                seen.add((op, cell))
                message = (
                    f"{op} has no deterministic implementation ({cell}): with --deterministic its "
                    "results may still differ from run to run"
                )
                log.emit(
                    "alert",
                    kind="nondeterministic_op",
                    action="alert",
                    op=op,
                    cell=cell,
                    source="monitor",
                    message=message,
                )
            return
        previous(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def _current_cell() -> str:
    """The running cell, as ``cell N: its first line`` (IPython's execution count and input history)."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        source = shell.user_ns.get("In", [""])[-1] if shell is not None else ""
        first = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
        return f"cell {shell.execution_count}: {first[:80]}" if shell is not None else "outside a cell"
    except Exception:
        return "an unknown cell"
