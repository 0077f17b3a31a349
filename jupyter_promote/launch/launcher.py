"""One launcher for both doors: a request's target opened and checked, and the pipeline that runs it.

The CLI and the server extension each ask a :class:`Launcher` for the same things: the target instance
(one per name, so a target that polls in batches sees all its jobs), the checks before anything is
prepared (the target answers, the kernel exists, the resources fit), and a :class:`Pipeline` built
from the settings. The wording of every refusal is therefore the same at both doors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import PromoteSettings
from ..errors import KernelError, TargetUnavailable, UsageError
from ..targets import Target, target_class
from .pipeline import Pipeline
from .request import ImageRequest, PromoteRequest


class Launcher:
    """Opens targets for requests and builds pipelines from one set of settings.

    Parameters
    ----------
    settings
        The settings both doors read from ``jupyter_promote_config.py``.
    config
        The traitlets config the targets and the image builder are configured from.
    make_target
        Target name -> target instance (default: the installed target class, configured from ``config``).
    """

    def __init__(
        self,
        settings: PromoteSettings,
        config: Any = None,
        make_target: Callable[[str], Target] | None = None,
    ) -> None:
        self.settings = settings
        self.config = config
        self.make_target = make_target or (lambda name: target_class(name)(config=config))
        self._targets: dict[str, Target] = {}
        from ..notify import Notifications, Notifier
        from ..tracking import MlflowExport, MlflowExporter

        self.notifications = Notifications(config=config)
        #: told of every job's alerts and end, in background threads: the notifications, the MLflow export
        self.reporters = (Notifier(self.notifications), MlflowExporter(MlflowExport(config=config)))

    def target(self, name: str) -> Target:
        """One instance per target name for the launcher's lifetime."""
        if name not in self._targets:
            self._targets[name] = self.make_target(name)
        return self._targets[name]

    def open(self, request: PromoteRequest) -> tuple[Target, list[str]]:
        """The request's target, once it answers, the kernel exists and the target accepts the resources;
        with the target's warnings about them. Blocking (it may ask an engine or a controller): the server
        calls it in a thread.
        """
        target = self.target(request.target)
        ok, why = target.available()
        if not ok:
            raise TargetUnavailable(
                f"target {request.target}: unavailable: {why}", subject=request.target, field="target"
            )
        check_kernel(request.kernel)
        request.notify = self.notifications.choose(request.notify)
        warnings = target.check_resources(request.resources)
        if not target.needs_image:
            request.image = None
        elif request.image is None:
            request.image = ImageRequest()
        if target.pulls_images and request.image is not None and not request.image.push:
            # its nodes pull the image: pushed to the configured registry (both doors; a server's request
            # has no --push of its own)
            from ..image import ImageBuilder

            request.image.push = bool(request.image.registry or ImageBuilder(config=self.config).registry)
        return target, list(warnings or [])

    def pipeline(self, on_line: Callable[[str], None] = lambda line: None) -> Pipeline:
        """A pipeline with the settings' runs directory, environment allow-list, poll interval and tolerances."""
        from ..image import ImageBuilder

        settings = self.settings
        pipeline = Pipeline(
            settings.runs_dir,
            tuple(settings.env_allowlist),
            settings.poll_interval,
            image_builder=ImageBuilder(config=self.config) if self.config is not None else None,
            on_line=on_line,
            parity_tolerance=settings.parity_tolerance,
            reporters=self.reporters,
        )
        pipeline.retry_backoff_s = settings.retry_backoff_s
        pipeline.artifacts_url, pipeline.storage_options = settings.artifacts_url, dict(settings.storage_options)
        return pipeline

    def close(self, timeout: float = 60.0) -> None:
        """Deliver what the reporters still hold (notifications, exports), for at most ``timeout`` seconds each."""
        for reporter in self.reporters:
            reporter.close(timeout)


def check_kernel(kernel: str | None) -> None:
    """``kernel`` names an installed Python kernelspec (else one line listing the installed ones)."""
    if kernel is None:
        return
    if not isinstance(kernel, str) or not kernel.strip():
        raise UsageError("kernel: must be a kernelspec name", subject="kernel", field="kernel")
    from ..freeze import kernel_interpreter

    try:
        kernel_interpreter(kernel)
    except KernelError as exc:
        raise UsageError(exc.message, subject=kernel, field="kernel") from None
