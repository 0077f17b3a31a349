"""Ray's job-submission SDK logs its uploads and warnings; they belong in the build log of the job being
submitted (and this package's log at debug level), never on the user's terminal."""

from __future__ import annotations

import contextlib
import logging
import os
import threading

_SDK_LOGGERS = ("ray.dashboard.modules", "ray._private.runtime_env", "ray.job_submission")  # off the terminal
_LOG = logging.getLogger("jupyter_promote.targets.ray")
_submitting = threading.local()  # .build_log: the build log of the job this thread submits


class _SdkLog(logging.Handler):
    """Ray's SDK records: into the build log of the job being submitted, and this module's log at debug."""

    def emit(self, record: logging.LogRecord) -> None:
        line = f"ray: {record.getMessage()}"
        _LOG.debug("%s", line)
        path = getattr(_submitting, "build_log", None)
        if path is not None:
            with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as log:
                log.write(line + "\n")


_SDK_HANDLER = _SdkLog(logging.INFO)


def route_sdk_log() -> None:
    """Ray's SDK loggers into :class:`_SdkLog`, off the terminal."""
    for name in _SDK_LOGGERS:
        sdk = logging.getLogger(name)
        sdk.handlers, sdk.propagate = [_SDK_HANDLER], False
        sdk.setLevel(logging.INFO)


def sdk_log_into(path: str | os.PathLike[str] | None) -> None:
    """The build log this thread's submission writes Ray's SDK records to (None: none)."""
    _submitting.build_log = path
