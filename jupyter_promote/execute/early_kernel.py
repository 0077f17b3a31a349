"""The job's kernel, started before the runner's heavy imports, so that it boots while they load.

papermill imports nbformat, nbclient and their schemas (over a second on a small node), then starts the
kernel, then runs; a kernel takes about as long to boot. The runner starts the kernel first, with
jupyter_client alone, exactly as nbclient would (its kernel manager class, its ``--HistoryManager.hist_file``
argument, the job's working directory), and hands the kernel manager to nbclient, which then only connects.

A kernel that cannot be started here is not an error yet: nbclient starts one itself, as without this
module, and reports why if it cannot either.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

#: nbclient's default ``ipython_hist_file``: the job's kernel keeps no history on disk.
HIST_FILE_ARGUMENT = "--HistoryManager.hist_file=:memory:"

log = logging.getLogger(__name__)


def start(kernel_name: str, cwd: str) -> Any | None:
    """Start kernel ``kernel_name`` in ``cwd``; its ``AsyncKernelManager``, or None when it did not start."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    manager = AsyncKernelManager(kernel_name=kernel_name)
    arguments = [HIST_FILE_ARGUMENT] if manager.ipykernel else []
    try:
        run_sync(manager.start_kernel)(extra_arguments=arguments, cwd=cwd)
    except Exception as exc:  # a kernelspec not found, a launcher that fails: nbclient tries and says why
        log.debug("the early kernel did not start: %s", exc)
        shut_down(manager)
        return None
    except BaseException:  # cancelled while it started: the kernel is stopped before the runner unwinds
        shut_down(manager)
        raise
    return manager


def shut_down(manager: Any | None) -> None:
    """Stop the kernel ``manager`` started, if it still runs (a job stopped before nbclient connected)."""
    if manager is None or not manager.has_kernel:
        return
    from jupyter_core.utils import run_sync

    try:
        run_sync(manager.shutdown_kernel)(now=True)
    except Exception as exc:  # the runner is ending either way: the kernel's process group is its own
        print(f"jupyter-promote: could not stop the job's kernel: {exc}", file=sys.stderr, flush=True)
