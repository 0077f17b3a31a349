"""NaN/Inf: the loss and the parameters stay finite; a divergence fails the job within a few steps.

One finiteness check every ``check_every`` steps: the last loss (NaN parameters make the next loss NaN), and
all parameters every tenth check, or at every check when no loss was seen. On CPU tensors a plain read; on
CUDA tensors no host sync at all: the verdict is computed on the device, copied to pinned memory without
blocking, and read at a later check once its event has passed (or when the cell ends), so a divergence is
reported a check or two later instead of every check stalling the device's queue. Torch's anomaly detection
(a NaN gradient) and a GradScaler whose scale collapsed are divergences too (see :mod:`..trainers`).
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..settings import action, setting
from ..trainers import MIN_LOSS_SCALE, anomaly_nan
from .base import Check, CheckFailure, MonitorContext

_ADVICE = "the loss diverged: lower the learning rate, clip gradients, or check the input data"


class NonFiniteError(CheckFailure):
    """NaN or Inf in the loss or the parameters."""


@dataclass(frozen=True)
class NanSettings:
    nan_action: str = action("fail", help="NaN or Inf in the loss or the parameters: fail the job, or only alert")
    check_every: int = setting(
        10, minimum=1, help="optimizer steps between finiteness checks (no host sync on CUDA: read a check later)"
    )


class NanCheck(Check[NanSettings]):
    name = "nan"
    kind = "nan"
    reason = "nan"
    settings_class = NanSettings
    action_setting = "nan_action"
    failure = NonFiniteError

    def __init__(self, monitor: MonitorContext, settings: NanSettings) -> None:
        super().__init__(monitor, settings)
        self.check_every = settings.check_every
        self._verdicts: deque[tuple[int, list[str], Any, Any]] = deque()  # (step, wheres, pinned flags, event)
        self._pinned: list[Any] = []  # a small ring of pinned host flags, reused
        self._skipped = 0  # consecutive steps a GradScaler skipped

    def hidden_from_compiler(self) -> tuple[Callable[..., Any], ...]:
        own = (self._check_finite, self._judge, self._copy_async, self._read_verdicts, self._diverged)
        return (*super().hidden_from_compiler(), *own)

    # ---- hooks -------------------------------------------------------------------------------
    def on_step(self, optimizer: Any) -> None:
        if optimizer is not None:
            self._skipped = 0
        if self.monitor.steps % self.check_every == 0 and self.monitor.fatal is None:
            self._check_finite(optimizer)

    def on_skipped(self, scaler: Any) -> None:
        """A step AMP's GradScaler skipped: not judged, unless the scale collapsed (see :mod:`..trainers`)."""
        self._skipped += 1
        if self.monitor.fatal is not None:
            return
        scale = scaler.get_scale()  # the skip synchronised with the device already
        if scale < MIN_LOSS_SCALE:
            self.fail_now(
                f"NaN or Inf in the loss's gradients at every loss scale: GradScaler skipped {self._skipped} "
                f"optimizer steps in a row and its scale fell to {scale:.2g} (under {MIN_LOSS_SCALE:g}) at "
                f"optimizer step {self.monitor.steps}; {_ADVICE}",
                step=self.monitor.steps,
            )

    def on_backward_error(self, exc: BaseException) -> None:
        """Anomaly detection (Lightning's ``detect_anomaly``) found a NaN gradient."""
        if self.monitor.fatal is None and anomaly_nan(exc):
            step = self.monitor.steps + 1
            self.fail_now(
                f"NaN in the gradients of the loss at optimizer step {step} (torch's anomaly detection: {exc}); "
                + _ADVICE,
                exc,
                step=step,
            )

    def on_cell_end(self) -> None:
        if self._verdicts:  # the device's last verdicts of the cell's loop (the cell is over: waiting is free)
            with contextlib.suppress(NonFiniteError):  # its alert (action fail) fails the job through the runner
                self._read_verdicts(wait=True)

    # ---- the check ---------------------------------------------------------------------------
    def _check_finite(self, optimizer: Any) -> None:
        torch = self.monitor.torch
        assert torch is not None
        self._read_verdicts()
        steps = self.monitor.steps
        loss = self.monitor.last_loss
        if loss is not None and loss.numel() != 1:
            loss = None  # not a loss (backward() of a tensor with explicit gradients)
        params = optimizer is not None and (loss is None or steps % (self.check_every * 10) == 0)
        if loss is not None and not params and not loss.is_cuda:  # the usual check: one read of a CPU scalar
            if not math.isfinite(loss.item()):
                self._diverged("the loss", steps, loss)
            return
        with torch.no_grad():
            checks: list[tuple[str, Any]] = []
            if loss is not None:
                checks.append(("the loss", torch.isfinite(loss.detach()).all()))
            if params:
                tensors = [p for group in optimizer.param_groups for p in group["params"]]
                sums = [t.detach().sum(dtype=torch.float32) for t in tensors]
                if sums:
                    finite = torch.isfinite(torch.stack([s.to(sums[0].device) for s in sums])).all()
                    checks.append(("the parameters", finite))
            if not checks:
                return
            flags = torch.stack([flag.to(checks[0][1].device) for _, flag in checks])
            wheres = [where for where, _ in checks]
            if flags.is_cuda:  # never wait for the device on the training thread: read at a later check
                self._verdicts.append((steps, wheres, *self._copy_async(flags)))
                return
            self._judge(steps, wheres, flags.tolist())

    def _judge(self, step: int, wheres: list[str], flags: list[bool]) -> None:
        for where, finite in zip(wheres, flags, strict=True):
            if not finite:
                self._diverged(where, step, self.monitor.last_loss)
                return

    def _copy_async(self, flags: Any) -> tuple[Any, Any]:
        torch = self.monitor.torch
        assert torch is not None
        if len(self._verdicts) >= 4:  # the device is far behind: wait for the oldest verdict
            self._verdicts[0][3].synchronize()
            self._read_verdicts()
        free = [i for i, host in enumerate(self._pinned) if host.numel() == flags.numel()]
        host = self._pinned.pop(free[0]) if free else torch.empty(flags.numel(), dtype=torch.bool, pin_memory=True)
        host.copy_(flags, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        return host, event

    def _read_verdicts(self, wait: bool = False) -> None:
        """The device's verdicts that are in (all of them when ``wait``): the first non-finite one is reported."""
        while self._verdicts and (wait or self._verdicts[0][3].query()):
            step, wheres, host, event = self._verdicts.popleft()
            if wait:
                event.synchronize()
            flags = host.tolist()
            self._pinned.append(host)
            if not all(flags) and self.monitor.fatal is None:
                self._verdicts.clear()
                self._judge(step, wheres, flags)

    def _diverged(self, where: str, step: int, loss: Any) -> None:
        torch = self.monitor.torch
        assert torch is not None
        nan = where == "the loss" and loss is not None and bool(torch.isnan(loss).any())
        kind = "NaN" if nan else "NaN or Inf"
        checked = f"checked every {self.check_every} steps"
        self.fail_now(f"{kind} in {where} at optimizer step {step} ({checked}); {_ADVICE}", step=step)
