"""The in-job monitor's core: counts steps, emits the job's heartbeat, step and GPU events, and runs the checks.

What is watched for (NaN/Inf, stalls, throughput drops, GPU memory trouble, a site's own) is the checks'
(:mod:`.checks`, loaded from the registry); the core gives them the job's progress through a few hooks.
The training thread pays one Python call per optimizer step, or per ``backward()`` in a loop with no
optimizer (a counter), plus the checks' step hooks (the NaN check's: a finiteness check every
``check_every`` steps). Everything else (heartbeats, windows, the checks' ticks, NVML) happens in one
background thread. Trainers (Lightning, Hugging Face, compiled steps, AMP's GradScaler) are covered by the
same hooks; what they need beyond them is in :mod:`.trainers`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from types import ModuleType
from typing import Any

from .cells import CellNames
from .checks import Check, MonitorAbort, NonFiniteError, StallError, load_checks
from .checks.base import overrides
from .events import EventLog
from .gpu import GpuSampler
from .imports import when_imported
from .settings import CoreSettings, values_for
from .trainers import hide_from_compiler, watch_grad_scaler

__all__ = ["Monitor", "MonitorAbort", "NonFiniteError", "StallError"]

_monotonic = time.monotonic


class Monitor:
    """Watches one job from inside its kernel.

    Parameters
    ----------
    log
        Where events go.
    settings
        ``jupyter_promote.models.MonitorSettings`` as a dict; each check reads its own fields from it.
    run_dir
        Where stack dumps go.
    """

    def __init__(self, log: EventLog, settings: dict[str, Any], run_dir: str) -> None:
        self.log = log
        self.run_dir = run_dir
        self.core = values_for(CoreSettings, settings)
        self.heartbeat_s = self.core.heartbeat_s
        self.window_s = self.core.window_s
        self.gpu_sample_s = max(1.0, self.core.gpu_sample_s)
        self.steps = 0
        self.step_at = _monotonic()  # when the last step ended (the throughput judge's clock)
        self.progress_at = _monotonic()
        self.cell: tuple[int, int | None, str] = (0, None, "")  # (segment, the cell's number, its first line)
        self.fatal: str | None = None
        self.busy = False
        self.torch: ModuleType | None = None
        self.last_loss: Any = None
        self._cells = CellNames(os.path.join(run_dir, "job.ipynb"))
        self._backward_pending = False  # a backward() seen, no optimizer step since
        self._optimizer_seen = False
        self._manual = (0, 0)  # (segment, steps) counted from backward() alone before any optimizer step
        self._stepped = 0  # optimizer steps the hook saw
        self._restore: list[Any] = []
        self._handles: list[Any] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registry = load_checks()
        self.checks: list[Check[Any]] = [c(self, values_for(c.settings_class, settings)) for c in self.registry.checks]
        self._hooked = {hook: [c for c in self.checks if overrides(c, hook)] for hook in _HOOKS}
        self._hooks = {hook: [getattr(c, hook) for c in self._hooked[hook]] for hook in _HOOKS}
        self._on_step = self._hooks["on_step"]  # the training thread's hot path: looked up once

    def _each(self, hook: str) -> list[Any]:
        """The bound ``hook`` of each check that implements it (and has not been switched off)."""
        return self._hooks[hook]

    def _call(self, hooks: list[Any], *args: Any) -> None:
        """Each of ``hooks`` with ``args``. A check's failure (:class:`MonitorAbort`) goes on to the user's
        code; any other exception is the check's own bug: one ``monitor_check`` alert, and the check is off
        for the rest of the job, so that a broken check never stops the training or the heartbeat."""
        broken = None
        for hook in hooks:
            try:
                hook(*args)
            except MonitorAbort:
                raise
            except Exception as exc:
                broken = (hook, exc)
        if broken is not None:
            self._switch_off(*broken)

    def _switch_off(self, hook: Any, exc: Exception) -> None:
        check = hook.__self__
        for hooks in self._hooks.values():
            hooks[:] = [h for h in hooks if h.__self__ is not check]
        message = f"the monitor check {check.name} is not watching this job any more: {type(exc).__name__}: {exc}"
        self.log.emit(
            "alert", kind="monitor_check", action="alert", source="monitor", plugin=check.name, message=message
        )

    # ---- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        for plugin, why in self.registry.skipped:
            message = f"the monitor check {plugin} is not watching this job: {why}"
            self.log.emit(
                "alert", kind="monitor_check", action="alert", source="monitor", plugin=plugin, message=message
            )
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
        if self.torch is not None and getattr(self.torch.autograd, "backward", None) is self._backward:
            self.torch.autograd.backward = self._orig_backward
        self._unhook_ipython()

    def interrupt(self, reason: str) -> None:
        """Fail the job from the watcher thread: interrupt the running cell like Ctrl-C would."""
        self.fatal = reason
        os.kill(os.getpid(), signal.SIGINT)

    # ---- hooks on the training thread ---------------------------------------------------------
    def _hook_torch(self, torch: ModuleType) -> None:
        self.torch = torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._on_optimizer_step))
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
        checks = [f for check in self.checks for f in check.hidden_from_compiler()]
        hide_from_compiler((self._on_optimizer_step, self._on_skipped, self._count_step, *checks))

    def _backward(self, tensors: Any, *args: Any, **kwargs: Any) -> Any:
        """Every ``backward()``: its loss is remembered for the finiteness check. In a loop that updates its
        weights by hand (``W.data -= lr * W.grad``: no optimizer), a backward that the next one follows with no
        optimizer step between them is a step of its own, counted and checked like an optimizer's."""
        torch = self.torch
        if torch is not None and isinstance(tensors, torch.Tensor):
            self.last_loss = tensors  # kept as is (a detach costs as much as the rest of the hook): read at a check
        manual = self._backward_pending and not self._optimizer_seen  # no optimizer step after the last one
        self._backward_pending = True
        if manual:
            segment, counted = self._manual
            self._manual = (self.cell[0], counted + 1 if segment == self.cell[0] else 1)
            self._count_step(None)
        try:
            return self._orig_backward(tensors, *args, **kwargs)
        except RuntimeError as exc:  # anomaly detection (Lightning's detect_anomaly) found a NaN gradient
            self._call(self._each("on_backward_error"), exc)
            raise

    def _on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._optimizer_seen:  # from now on, steps are the optimizer's
            self._optimizer_seen = True
            segment, counted = self._manual
            if segment == self.cell[0]:  # the backward() calls of its first gradient accumulation: not steps
                self.steps -= counted
        self._backward_pending, self._stepped = False, self._stepped + 1
        self._count_step(optimizer)

    def _on_skipped(self, scaler: Any) -> None:
        """A step AMP's GradScaler skipped (Inf/NaN gradients at its scale): progress, judged by the checks."""
        self._backward_pending, self._optimizer_seen = False, True
        self.steps += 1
        self.step_at = _monotonic()
        self._call(self._each("on_skipped"), scaler)

    def _count_step(self, optimizer: Any) -> None:
        self.steps += 1
        self.step_at = _monotonic()
        self._call(self._on_step, optimizer)

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
        self.cell = (self.cell[0] + 1, number, line)  # one assignment: the watcher reads all three at once
        self.busy = True
        self.progress_at = time.monotonic()

    def _post_run_cell(self, result: Any = None) -> None:
        self._call(self._each("on_cell_end"))
        self.busy = False
        self.progress_at = time.monotonic()

    # ---- the watcher thread -------------------------------------------------------------------
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
        ticks, on_gpu = self._each("on_tick"), self._each("on_gpu")
        now = time.monotonic()
        next_beat = next_gpu = now
        window_start, window_steps = now, self.steps
        seen_steps = self.steps
        tick = min(0.5, self.window_s / 4, self.heartbeat_s / 2)
        while True:
            stopping = self._stop.wait(tick)
            now = time.monotonic()
            steps = self.steps
            if steps != seen_steps:
                seen_steps = steps
                self.progress_at = now
            if stopping or now - window_start >= self.window_s:
                done, elapsed = steps - window_steps, now - window_start
                if done > 0:
                    rate = round(done / elapsed, 3)
                    self.log.emit("step", steps=steps, steps_per_s=rate, window_s=round(elapsed, 3))
                window_start, window_steps = now, steps
            if not stopping and now >= next_beat:  # before the checks: whatever they do, the job is heard
                next_beat = now + self.heartbeat_s
                self.log.emit("heartbeat", pid=os.getpid(), steps=steps, busy=self.busy, rss_bytes=_rss_bytes())
            self._call(ticks, now)
            if stopping:
                return
            if gpu.available and now >= next_gpu:
                next_gpu = now + self.gpu_sample_s
                self._sample_gpu(gpu, on_gpu)

    def _sample_gpu(self, gpu: GpuSampler, on_gpu: list[Any]) -> None:
        try:
            samples = gpu.sample()
        except Exception as exc:
            print(f"jupyter-promote: GPU sampling failed: {exc}", file=sys.stderr)
            return
        if not samples:
            return
        self.log.emit("gpu", devices=samples)
        self._call(on_gpu, samples)


_HOOKS = ("on_step", "on_skipped", "on_backward_error", "on_cell_end", "on_tick", "on_gpu")


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
