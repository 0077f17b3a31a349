"""GPU memory fragmentation: over 30 % of the reserved memory free but unusable while the allocator keeps
retrying ``cudaMalloc`` (new ``num_alloc_retries`` since the previous sample); one alert per GPU."""

from __future__ import annotations

from typing import Any

from .base import Check, MonitorContext

#: The share of reserved memory left unallocated, with allocation retries, that is fragmentation.
FRAGMENTED_SHARE = 0.3


class FragmentationCheck(Check[Any]):
    name = "fragmentation"
    kind = "memory"

    def __init__(self, monitor: MonitorContext, settings: Any) -> None:
        super().__init__(monitor, settings)
        self.alerted: set[int] = set()
        self.retries: dict[int, int] = {}  # each GPU's allocation retries at the previous sample

    def on_gpu(self, samples: list[dict[str, Any]]) -> None:
        for sample in samples:
            index = sample["index"]
            retries = sample.get("alloc_retries", 0) - self.retries.get(index, 0)
            self.retries[index] = sample.get("alloc_retries", 0)
            reserved = sample.get("reserved", 0)
            if index in self.alerted or not reserved or retries <= 0:
                continue
            fragmented = 1 - sample.get("allocated", 0) / reserved
            if fragmented > FRAGMENTED_SHARE:
                self.alerted.add(index)
                message = (
                    f"GPU {index} memory fragmentation: {fragmented:.0%} of reserved memory is free but unusable "
                    f"and the allocator retried {retries} allocation(s); "
                    "try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                )
                self.alert(message, gpu=index, finding="fragmentation")
