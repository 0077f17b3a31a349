"""What the monitor must know of training loops beyond a plain ``optimizer.step()``.

* **Compiled steps** (``torch.compile``): dynamo would try to trace the monitor's hooks (called from a
  compiled step's ``backward()`` and ``optimizer.step()``), compiling throw-away graphs for them and guarding
  on the step counter. :func:`hide_from_compiler` marks their code as never traced, once dynamo is imported
  (importing it costs seconds: a job that never compiles never pays that).
* **AMP's GradScaler**: ``scaler.step(optimizer)`` skips ``optimizer.step()`` when the scaled gradients hold
  Inf/NaN, then ``scaler.update()`` halves the scale. That is how fp16 training finds its scale, not a
  divergence: such a step is progress and its (scaled, non-finite) loss is not judged. A loss that diverged
  makes every step's gradients non-finite at every scale, so the scale only falls: under
  :data:`MIN_LOSS_SCALE` the loss has diverged (fairseq's rule; DeepSpeed stops at its own minimum scale).
  :func:`watch_grad_scaler` wraps ``GradScaler.step`` to tell the two apart.
* **Anomaly detection** (``torch.autograd.set_detect_anomaly``, Lightning's ``Trainer(detect_anomaly=True)``):
  it raises a RuntimeError from ``backward()`` at the first NaN gradient; :func:`anomaly_nan` recognises it,
  so the job fails as a NaN like any other.

Lightning, the Hugging Face Trainer (through accelerate) and plain loops all call ``torch.optim`` optimizers
and ``backward()``: the monitor's generic hooks count them, no trainer callback is needed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

#: A GradScaler whose scale fell under this skips steps because its loss diverged, not to find its scale.
MIN_LOSS_SCALE = 1e-4

_ANOMALY_NAN = "returned nan values in its"  # torch/csrc/autograd/engine.cpp, under anomaly detection


def hide_from_compiler(functions: Iterable[Callable[..., Any]], recursive: bool = True) -> None:
    """Never let dynamo trace ``functions``: where a compiled step calls one, it runs as plain Python, with no
    graph and no guard of its own (``torch._dynamo.skip``); with ``recursive``, what it calls too.

    Only once dynamo is imported (see :func:`.imports.when_imported`). Its frame strategies are private API:
    if they moved, a compiled step is still counted, only compiled more slowly.
    """
    try:
        from torch._C._dynamo.eval_frame import _FrameAction as FrameAction
        from torch._C._dynamo.eval_frame import _FrameExecStrategy as FrameExecStrategy
        from torch._C._dynamo.eval_frame import set_code_exec_strategy
    except ImportError:
        return
    strategy = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP if recursive else FrameAction.DEFAULT)
    for each in functions:
        function: Any = getattr(each, "__func__", each)
        function._torchdynamo_disable = True  # never inlined into a graph: a clean break at the call
        codes = [function.__code__]
        while codes:  # and the comprehensions inside (their own frames before Python 3.12)
            code = codes.pop()
            set_code_exec_strategy(code, strategy)
            codes.extend(c for c in code.co_consts if isinstance(c, type(code)))


def watch_grad_scaler(
    torch: ModuleType, stepped: Callable[[], int], skipped: Callable[[Any], None]
) -> tuple[Callable[..., Any], Callable[[], None]] | None:
    """Call ``skipped(scaler)`` after every ``GradScaler.step`` that did not step its optimizer.

    ``stepped()`` is the count of optimizer steps the monitor's hook saw. Returns the wrapper and the function
    that undoes the wrapping, or None when this torch has no GradScaler.
    """
    grad_scaler = getattr(getattr(torch, "amp", None), "grad_scaler", None)
    cls = getattr(grad_scaler, "GradScaler", None)
    original = getattr(cls, "step", None)
    if cls is None or original is None:
        return None

    @functools.wraps(original)
    def step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        before = stepped()
        result = original(scaler, optimizer, *args, **kwargs)
        if stepped() == before and scaler.is_enabled():
            skipped(scaler)
        return result

    cls.step = step

    def restore() -> None:
        if cls.step is step:
            cls.step = original

    return step, restore


def anomaly_nan(exc: BaseException) -> bool:
    """Whether ``exc`` is anomaly detection's report of a NaN gradient."""
    return isinstance(exc, RuntimeError) and _ANOMALY_NAN in str(exc)
