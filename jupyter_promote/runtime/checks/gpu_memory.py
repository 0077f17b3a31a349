"""GPU memory pressure: the caching allocator's reserved peak above 90 % of a device; one alert per GPU."""

from __future__ import annotations

from typing import Any

from .base import Check, MonitorContext

#: The share of a device's memory reserved at peak above which it is under pressure.
PRESSURE_SHARE = 0.9


class GpuMemoryCheck(Check[Any]):
    name = "gpu_memory"
    kind = "memory"

    def __init__(self, monitor: MonitorContext, settings: Any) -> None:
        super().__init__(monitor, settings)
        self.alerted: set[int] = set()

    def on_gpu(self, samples: list[dict[str, Any]]) -> None:
        for sample in samples:
            index = sample["index"]
            total = sample.get("memory_total") or 0
            reserved_peak = sample.get("reserved_peak", sample.get("memory_used", 0))
            if index in self.alerted or not total or reserved_peak / total <= PRESSURE_SHARE:
                continue
            self.alerted.add(index)
            message = (
                f"GPU {index} memory pressure: {reserved_peak / total:.0%} of {total / 2**30:.1f} GiB in use at peak"
            )
            self.alert(message, gpu=index, finding="pressure")
