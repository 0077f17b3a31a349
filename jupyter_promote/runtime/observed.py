"""The torch settings in force in the job's kernel, reported in its last heartbeat.

With the introspection the runner makes of the kernel's interpreter at the end of the job, they form
``observed_env.json``: what the job really ran with, which parity's environment diff compares with the
notebook kernel's lock (a package the image or the node's venv got wrong, thread counts, flags).
"""

from __future__ import annotations

import sys
from typing import Any


def torch_settings() -> dict[str, Any] | None:
    """torch's settings in force in this process, when the job imported torch (never imports it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    settings: dict[str, Any] = {"threads": torch.get_num_threads()}
    try:
        settings["deterministic_algorithms"] = bool(torch.are_deterministic_algorithms_enabled())
        settings["deterministic_warn_only"] = bool(torch.is_deterministic_algorithms_warn_only_enabled())
        settings["cudnn_deterministic"] = bool(torch.backends.cudnn.deterministic)
        settings["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
        if torch.cuda.is_available():
            settings["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            settings["cudnn_runtime"] = torch.backends.cudnn.version()
    except Exception as exc:  # an old or partial torch: what was read stays
        settings["error"] = str(exc)[:200]
    return settings
