"""The in-job monitor: counts optimizer steps, catches NaN/Inf, stalls, throughput drops and GPU memory trouble.

The training thread pays one Python call per optimizer step, or per ``backward()`` in a loop with no
optimizer (a counter), and one finiteness check every ``check_every`` steps: on CPU tensors a plain read;
on CUDA tensors no host sync at all (the verdict is computed on the device, copied to pinned memory without
blocking, and read at a later check once its event has passed, so a divergence is reported a check or two
later instead of every check stalling the device's queue). Everything else (heartbeats, windows, stall
detection, NVML) happens in one background thread. Trainers (Lightning, Hugging Face, compiled steps, AMP's
GradScaler) are covered by the same hooks; what they need beyond them is in :mod:`.trainers`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import signal
import sys
import threading
import time
from collections import deque
from types import ModuleType
from typing import Any

from .cells import CellNames, describe
from .events import EventLog
from .gpu import GpuSampler, memory_alerts
from .imports import when_imported
from .throughput import Drop, ThroughputJudge
from .trainers import MIN_LOSS_SCALE, anomaly_nan, hide_from_compiler, watch_grad_scaler

_monotonic = time.monotonic


class MonitorAbort(Exception):
    """Raised into the user's code when the monitor fails the job; ``reason`` says why."""

    reason = "error"


class NonFiniteError(MonitorAbort):
    """NaN or Inf in the loss or the parameters."""

    reason = "nan"


class StallError(MonitorAbort):
    """No progress for longer than the stall timeout."""

    reason = "stall"


class Monitor:
    """Watches one job from inside its kernel.

    Parameters
    ----------
    log
        Where events go.
    settings
        :class:`jupyter_promote.models.MonitorSettings` as a dict.
    run_dir
        Where stack dumps go.
    """

    def __init__(self, log: EventLog, settings: dict[str, Any], run_dir: str) -> None:
        self.log = log
        self.run_dir = run_dir
        self.stall_timeout = float(settings.get("stall_timeout_s", 600.0))
        self.nan_action = settings.get("nan_action", "fail")
        self.stall_action = settings.get("stall_action", "fail")
        self.throughput_action = settings.get("throughput_action", "alert")
        self.check_every = int(settings.get("check_every", 10))
        self.heartbeat_s = float(settings.get("heartbeat_s", 5.0))
        self.window_s = float(settings.get("window_s", 2.0))
        self.gpu_sample_s = max(1.0, float(settings.get("gpu_sample_s", 5.0)))
        self.steps = 0
        self._step_at = _monotonic()  # when the last step ended (the throughput judge's clock)
        self._segment = 0  # the cells run so far: a new cell is a new segment of training
        self._cells = CellNames(os.path.join(run_dir, "job.ipynb"))
        self._cell: tuple[int, int | None, str] = (0, None, "")  # (segment, the cell's number, its first line)
        self.fatal: str | None = None
        self.busy = False
        self._progress_at = time.monotonic()
        self._last_loss: Any = None
        self._backward_pending = False  # a backward() seen, no optimizer step since
        self._optimizer_seen = False
        self._manual = (0, 0)  # (segment, steps) counted from backward() alone before any optimizer step
        self._stepped = 0  # optimizer steps the hook saw
        self._skipped = 0  # consecutive steps a GradScaler skipped
        self._restore: list[Any] = []
        self._torch: ModuleType | None = None
        self._handles: list[Any] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stalled = False
        self._throughput = ThroughputJudge(self.window_s, _monotonic())
        self._gpu_alerted: set[tuple[int, str]] = set()
        self._verdicts: deque[tuple[int, list[str], Any, Any]] = deque()  # (step, wheres, pinned flags, event)
        self._pinned: list[Any] = []  # a small ring of pinned host flags, reused

    # ---- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        when_imported("torch", self._hook_torch)
        self._hook_ipython()
        self._thread = threading.Thread(target=self._watch, name="jupyter-promote-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and emit the last step count."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        for restore in self._restore:
            restore()
        self._restore.clear()
        if self._torch is not None and getattr(self._torch.autograd, "backward", None) is self._backward:
            self._torch.autograd.backward = self._orig_backward
        self._unhook_ipython()

    # ---- hooks on the training thread ---------------------------------------------------------
    def _hook_torch(self, torch: ModuleType) -> None:
        self._torch = torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._on_step))
        # remember the last loss a backward() started from, so the finiteness check sees it too
        self._orig_backward = torch.autograd.backward
        torch.autograd.backward = self._backward
        scaler = watch_grad_scaler(torch, lambda: self._stepped, self._on_skipped)
        if scaler is not None:
            self._restore.append(scaler[1])
        wrappers = [self._backward] + ([scaler[0]] if scaler is not None else [])
        when_imported("torch._dynamo", lambda _: self._hide_from_compiler(wrappers))

    def _hide_from_compiler(self, wrappers: list[Any]) -> None:
        hide_from_compiler(wrappers, recursive=False)  # what they wrap is the user's, compiled as usual
        own = (self._on_step, self._on_skipped, self._count_step, self._check_finite, self._judge)
        hide_from_compiler((*own, self._copy_async, self._read_verdicts, self._diverged, self._fail_nan, self.alert))

    def _backward(self, tensors: Any, *args: Any, **kwargs: Any) -> Any:
        """Every ``backward()``: its loss is remembered for the finiteness check. In a loop that updates its
        weights by hand (``W.data -= lr * W.grad``: no optimizer), a backward that the next one follows with no
        optimizer step between them is a step of its own, counted and checked like an optimizer's."""
        torch = self._torch
        if torch is not None and isinstance(tensors, torch.Tensor):
            self._last_loss = tensors  # kept as is (a detach costs as much as the rest of the hook): read at a check
        manual = self._backward_pending and not self._optimizer_seen  # no optimizer step after the last one
        self._backward_pending = True
        if manual:
            segment, counted = self._manual
            self._manual = (self._segment, counted + 1 if segment == self._segment else 1)
            self._count_step(None)
        try:
            return self._orig_backward(tensors, *args, **kwargs)
        except RuntimeError as exc:  # anomaly detection (Lightning's detect_anomaly) found a NaN gradient
            if self.fatal is None and anomaly_nan(exc):
                self._fail_nan(
                    f"NaN in the gradients of the loss at optimizer step {self.steps + 1} (torch's anomaly detection: "
                    f"{exc}); the loss diverged: lower the learning rate, clip gradients, or check the input data",
                    exc,
                    self.steps + 1,
                )
            raise

    def _on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._optimizer_seen:  # from now on, steps are the optimizer's
            self._optimizer_seen = True
            segment, counted = self._manual
            if segment == self._segment:  # the backward() calls of its first gradient accumulation: not steps
                self.steps -= counted
        self._backward_pending, self._stepped, self._skipped = False, self._stepped + 1, 0
        self._count_step(optimizer)

    def _on_skipped(self, scaler: Any) -> None:
        """A step AMP's GradScaler skipped (Inf/NaN gradients at its scale): progress, its loss not judged,
        unless the scale collapsed (see :mod:`.trainers`)."""
        self._backward_pending, self._optimizer_seen, self._skipped = False, True, self._skipped + 1
        self.steps += 1
        self._step_at = _monotonic()
        if self.fatal is not None:
            return
        scale = scaler.get_scale()  # the skip synchronised with the device already
        if scale < MIN_LOSS_SCALE:
            self._fail_nan(
                f"NaN or Inf in the loss's gradients at every loss scale: GradScaler skipped {self._skipped} "
                f"optimizer steps in a row and its scale fell to {scale:.2g} (under {MIN_LOSS_SCALE:g}) at "
                f"optimizer step {self.steps}; the loss diverged: lower the learning rate, clip gradients, "
                "or check the input data"
            )

    def _count_step(self, optimizer: Any) -> None:
        self.steps += 1
        self._step_at = _monotonic()
        if self.steps % self.check_every == 0 and self.fatal is None:
            self._check_finite(optimizer)

    def _check_finite(self, optimizer: Any) -> None:
        """The last loss every ``check_every`` steps (NaN parameters make the next loss NaN), and all
        parameters every tenth check, or at every check when no loss was seen."""
        torch = self._torch
        assert torch is not None
        self._read_verdicts()
        loss = self._last_loss
        if loss is not None and loss.numel() != 1:
            loss = None  # not a loss (backward() of a tensor with explicit gradients)
        params = optimizer is not None and (loss is None or self.steps % (self.check_every * 10) == 0)
        if loss is not None and not params and not loss.is_cuda:  # the usual check: one read of a CPU scalar
            if not math.isfinite(loss.item()):
                self._diverged("the loss", self.steps, loss)
            return
        with torch.no_grad():
            checks: list[tuple[str, Any]] = []
            if loss is not None:
                checks.append(("the loss", torch.isfinite(loss.detach()).all()))
            if params:
                tensors = [p for group in optimizer.param_groups for p in group["params"]]
                sums = [t.detach().sum(dtype=torch.float32) for t in tensors]
                if sums:
                    checks.append(
                        ("the parameters", torch.isfinite(torch.stack([s.to(sums[0].device) for s in sums])).all())
                    )
            if not checks:
                return
            flags = torch.stack([flag.to(checks[0][1].device) for _, flag in checks])
            wheres = [where for where, _ in checks]
            if flags.is_cuda:  # never wait for the device on the training thread: read at a later check
                self._verdicts.append((self.steps, wheres, *self._copy_async(flags)))
                return
            self._judge(self.steps, wheres, flags.tolist())

    def _judge(self, step: int, wheres: list[str], flags: list[bool]) -> None:
        for where, finite in zip(wheres, flags, strict=True):
            if not finite:
                self._diverged(where, step, self._last_loss)
                return

    def _copy_async(self, flags: Any) -> tuple[Any, Any]:
        torch = self._torch
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
            if not all(flags) and self.fatal is None:
                self._verdicts.clear()
                self._judge(step, wheres, flags)

    def _diverged(self, where: str, step: int, loss: Any) -> None:
        torch = self._torch
        assert torch is not None
        kind = "NaN" if where == "the loss" and loss is not None and bool(torch.isnan(loss).any()) else "NaN or Inf"
        message = (
            f"{kind} in {where} at optimizer step {step} (checked every {self.check_every} steps); "
            "the loss diverged: lower the learning rate, clip gradients, or check the input data"
        )
        self._fail_nan(message, step=step)

    def _fail_nan(self, message: str, cause: BaseException | None = None, step: int | None = None) -> None:
        """Alert; with ``nan_action`` fail, fail the job (raise into the training loop)."""
        step = self.steps if step is None else step
        self.alert("nan", message, self.nan_action, step=step)
        if self.nan_action == "fail":
            self.fatal = "nan"
            raise NonFiniteError(message) from cause

    def _hook_ipython(self) -> None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
        if shell is None:
            return
        self._shell = shell
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)

    def _unhook_ipython(self) -> None:
        shell = getattr(self, "_shell", None)
        if shell is None:
            return
        for name, fn in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
            with contextlib.suppress(ValueError):
                shell.events.unregister(name, fn)

    def _pre_run_cell(self, info: Any = None) -> None:
        number, line = self._cells.started(str(getattr(info, "raw_cell", "") or ""))
        self._segment += 1
        self._cell = (self._segment, number, line)  # one assignment: the watcher reads all three at once
        self.busy = True
        self._progress_at = time.monotonic()

    def _post_run_cell(self, result: Any = None) -> None:
        if self._verdicts:  # the device's last verdicts of the cell's loop (the cell is over: waiting is free)
            with contextlib.suppress(NonFiniteError):  # its alert (action fail) fails the job through the runner
                self._read_verdicts(wait=True)
        self.busy = False
        self._progress_at = time.monotonic()

    # ---- the watcher thread -------------------------------------------------------------------
    def alert(self, kind: str, message: str, action: str, **fields: Any) -> None:
        self.log.emit("alert", kind=kind, message=message, action=action, **fields)

    def _watch(self) -> None:
        while True:
            try:
                self._watch_loop()
                return
            except Exception as exc:  # the watcher must outlive any bug of its own
                print(f"jupyter-promote monitor: {type(exc).__name__}: {exc}; restarting", file=sys.stderr)
                if self._stop.wait(1.0):
                    return

    def _watch_loop(self) -> None:
        gpu = GpuSampler()
        gpu_previous: dict[int, dict[str, Any]] = {}
        now = time.monotonic()
        next_beat = now
        next_gpu = now
        window_start, window_steps = now, self.steps
        seen_steps = self.steps
        tick = min(0.5, self.window_s / 4, self.heartbeat_s / 2)
        while True:
            stopping = self._stop.wait(tick)
            now = time.monotonic()
            steps = self.steps
            if steps != seen_steps:
                seen_steps = steps
                self._progress_at = now
            if stopping or now - window_start >= self.window_s:
                done = steps - window_steps
                if done > 0:
                    rate = done / (now - window_start)
                    self.log.emit(
                        "step", steps=steps, steps_per_s=round(rate, 3), window_s=round(now - window_start, 3)
                    )
                window_start, window_steps = now, steps
            segment, number, line = self._cell
            drop = self._throughput.observe(segment, steps, self._step_at, now)
            if drop is not None:
                self._throughput_drop(drop, number, line)
            if stopping:
                return
            if now >= next_beat:
                next_beat = now + self.heartbeat_s
                self.log.emit("heartbeat", pid=os.getpid(), steps=steps, busy=self.busy, rss_bytes=_rss_bytes())
            if gpu.available and now >= next_gpu:
                next_gpu = now + self.gpu_sample_s
                self._sample_gpu(gpu, gpu_previous)
            idle = now - self._progress_at
            if self.busy and idle > self.stall_timeout and not self._stalled:
                self._stall(idle)

    def _throughput_drop(self, drop: Drop, cell: int | None, line: str) -> None:
        self.alert(
            "throughput_drop",
            drop.message(describe(cell, line)),
            self.throughput_action,
            cell=cell,
            cell_source=line,
            steps_per_s=round(drop.steps_per_s, 3),
            baseline=round(drop.baseline, 3),
            since_step=drop.since_step,
            since_s=round(drop.since_s, 1),
        )
        if self.throughput_action == "fail":
            self._abort("throughput_drop")

    def _stall(self, idle: float) -> None:
        self._stalled = True
        path = os.path.join(self.run_dir, f"stacks-{int(time.time())}.txt")
        try:
            with open(path, "w") as f:
                faulthandler.dump_traceback(f, all_threads=True)
        except OSError:
            path = ""
        message = (
            f"no optimizer step and no cell progress for {idle:.0f} s (stall timeout {self.stall_timeout:g} s)"
            + (f"; Python stacks saved to {os.path.basename(path)}" if path else "")
        )
        self.alert("stall", message, self.stall_action, idle_s=round(idle, 1), stacks=os.path.basename(path) or None)
        if self.stall_action == "fail":
            self._abort("stall")

    def _abort(self, reason: str) -> None:
        """Fail the job from the watcher thread: interrupt the running cell like Ctrl-C would."""
        self.fatal = reason
        os.kill(os.getpid(), signal.SIGINT)

    def _sample_gpu(self, gpu: GpuSampler, previous: dict[int, dict[str, Any]]) -> None:
        try:
            samples = gpu.sample()
        except Exception as exc:
            print(f"jupyter-promote: GPU sampling failed: {exc}", file=sys.stderr)
            return
        if not samples:
            return
        self.log.emit("gpu", devices=samples)
        for sample in samples:
            for key, message in memory_alerts(previous.get(sample["index"]), sample):
                if (sample["index"], key) not in self._gpu_alerted:
                    self._gpu_alerted.add((sample["index"], key))
                    self.alert("memory", message, "alert", gpu=sample["index"], finding=key)
            previous[sample["index"]] = sample


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
