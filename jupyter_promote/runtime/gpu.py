"""GPU samples from NVML (``nvidia-ml-py``'s ``pynvml``) and ``torch.cuda.memory_stats``, when present.

What is judged from them (memory pressure, fragmentation) is the checks' (:mod:`.checks`).
"""

from __future__ import annotations

import sys
from typing import Any

_TORCH_FIELDS = {
    "allocated_bytes.all.current": "allocated",
    "allocated_bytes.all.peak": "allocated_peak",
    "reserved_bytes.all.current": "reserved",
    "reserved_bytes.all.peak": "reserved_peak",
    "inactive_split_bytes.all.current": "inactive_split",
    "num_alloc_retries": "alloc_retries",
    "num_ooms": "ooms",
}


class GpuSampler:
    """Samples every visible GPU; :meth:`sample` is cheap enough for once a second, off the training thread."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self._nvml = pynvml
        except Exception:  # no driver, no library, no GPU: nothing to sample
            self._nvml = None

    @property
    def available(self) -> bool:
        return bool(self._handles) or self._torch_cuda() is not None

    @staticmethod
    def _torch_cuda() -> Any:
        torch = sys.modules.get("torch")  # never import torch, never initialise CUDA from here
        cuda = getattr(torch, "cuda", None)  # None too while torch is still being imported
        try:
            return cuda if cuda is not None and cuda.is_initialized() else None
        except Exception:
            return None

    def sample(self) -> list[dict[str, Any]]:
        samples: dict[int, dict[str, Any]] = {}
        nvml = self._nvml
        for index, handle in enumerate(self._handles):
            entry = samples.setdefault(index, {"index": index})
            try:
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                entry.update(memory_used=int(memory.used), memory_total=int(memory.total))
                entry["utilization"] = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                entry["temperature"] = int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            except Exception as exc:  # a GPU that stops answering is itself worth reporting
                entry["error"] = str(exc)
        cuda = self._torch_cuda()
        if cuda is not None:
            for index in range(cuda.device_count()):
                stats = cuda.memory_stats(index)
                entry = samples.setdefault(index, {"index": index})
                entry.update({short: int(stats.get(key, 0)) for key, short in _TORCH_FIELDS.items()})
                if "memory_total" not in entry:
                    entry["memory_total"] = int(cuda.get_device_properties(index).total_memory)
        return [samples[i] for i in sorted(samples)]
