"""What a monitor check is: its declaration (name, alert kind, failure reason, settings) and the hooks it may use.

A check subclasses :class:`Check`, declares once what the rest of the system reads about it, and overrides
only the hooks it needs; the monitor core (:mod:`..monitor`) calls each hook on the checks that override it.

Declaration (class attributes):

``name``            the check's name in the registry (``"stall"``)
``kind``            the ``kind`` of the alerts it raises (``"stall"``, ``"throughput_drop"``)
``reason``          the reason a job ends with when the check fails it (``job.json``'s ``reason``); None
                    for a check that only ever alerts
``settings_class``  a frozen dataclass of its settings (:mod:`..settings`), the ``MonitorSettings`` fields
``action_setting``  the field of ``settings_class`` that says ``"fail"`` or ``"alert"``; None: always alert

Hooks (the thread each runs on in brackets; each must return quickly):

``on_step(optimizer)``       [training] after every step (``optimizer`` None for a hand-written update)
``on_skipped(scaler)``       [training] after a step AMP's GradScaler skipped
``on_backward_error(exc)``   [training] ``backward()`` raised ``exc`` (re-raised after the checks)
``on_cell_end()``            [training] a cell finished
``on_tick(now)``             [watcher] several times a second
``on_gpu(samples)``          [watcher] after each GPU sample (a list of per-device dicts, :mod:`..gpu`)

A finding is reported with :meth:`Check.fail_now` (on the training thread: alert, then raise the check's
failure into the user's code) or :meth:`Check.fail_soon` (from the watcher: alert, then interrupt the cell);
either one only alerts when the check's action is ``"alert"``. A failing alert carries the check's ``reason``:
that is what the runner records as the job's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from ..settings import CoreSettings, NoSettings

if TYPE_CHECKING:
    from ..events import EventLog

S = TypeVar("S")


class MonitorAbort(Exception):
    """Raised into the user's code when the monitor fails the job; ``reason`` says why."""

    reason = "error"


class CheckFailure(MonitorAbort):
    """A check failed the job; ``reason`` is the check's declared failure reason."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class MonitorContext(Protocol):
    """What a check sees of the monitor core."""

    log: EventLog
    run_dir: str
    core: CoreSettings  # the core's own settings (heartbeat, step window, GPU sampling)
    steps: int  # steps counted so far
    step_at: float  # time.monotonic() of the last step
    busy: bool  # a cell is running
    progress_at: float  # time.monotonic() of the last step, or of a cell's start or end
    cell: tuple[int, int | None, str]  # (segment: cells run so far, the cell's number, its first line)
    fatal: str | None  # the reason the job is failing, once a check failed it
    torch: ModuleType | None  # torch, once the job imported it
    last_loss: Any  # the loss of the last backward()

    def interrupt(self, reason: str) -> None:
        """Fail the job from the watcher thread: interrupt the running cell as Ctrl-C would."""


class Check(Generic[S]):
    """A monitor check; see the module's documentation for what a subclass declares and overrides."""

    name: ClassVar[str]
    kind: ClassVar[str]
    reason: ClassVar[str | None] = None
    settings_class: ClassVar[type[Any]] = NoSettings
    action_setting: ClassVar[str | None] = None
    failure: ClassVar[type[CheckFailure]] = CheckFailure

    def __init__(self, monitor: MonitorContext, settings: S) -> None:
        self.monitor = monitor
        self.settings = settings

    @property
    def action(self) -> str:
        """``"fail"`` or ``"alert"``: what this check does when it finds something."""
        return str(getattr(self.settings, self.action_setting)) if self.action_setting else "alert"

    # ---- hooks: the core calls each one only on the checks that override it ----------------------
    def on_step(self, optimizer: Any) -> None:
        pass

    def on_skipped(self, scaler: Any) -> None:
        pass

    def on_backward_error(self, exc: BaseException) -> None:
        pass

    def on_cell_end(self) -> None:
        pass

    def on_tick(self, now: float) -> None:
        pass

    def on_gpu(self, samples: list[dict[str, Any]]) -> None:
        pass

    def hidden_from_compiler(self) -> tuple[Callable[..., Any], ...]:
        """The functions a compiled step may call that dynamo must not trace: the training-thread hooks,
        plus whatever they call (a subclass adds its own)."""
        return (self.on_step, self.on_skipped, self.fail_now, self.alert)

    # ---- reporting -----------------------------------------------------------------------------
    def alert(self, message: str, **fields: Any) -> None:
        """An alert of this check's kind with its action (and, when it fails the job, its reason)."""
        action = self.action
        extra = {"reason": self.reason} if action == "fail" and self.reason is not None else {}
        self.monitor.log.emit("alert", kind=self.kind, message=message, action=action, **fields, **extra)

    def fail_now(self, message: str, cause: BaseException | None = None, **fields: Any) -> None:
        """On the training thread: alert; with the action ``"fail"``, raise the check's failure."""
        self.alert(message, **fields)
        if self.action == "fail":
            reason = self.reason or "error"
            self.monitor.fatal = reason
            raise self.failure(message, reason) from cause

    def fail_soon(self, message: str, **fields: Any) -> None:
        """From the watcher thread: alert; with the action ``"fail"``, interrupt the running cell."""
        self.alert(message, **fields)
        if self.action == "fail":
            self.monitor.interrupt(self.reason or "error")


def overrides(check: Check[Any], hook: str) -> bool:
    """Whether ``check`` implements ``hook`` (the core calls a hook only on the checks that do)."""
    return getattr(type(check), hook) is not getattr(Check, hook)
