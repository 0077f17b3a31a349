"""Errors a user can cause, each mapped once to a CLI exit code and an HTTP status."""

from __future__ import annotations

from typing import Any

#: Exit codes of ``jupyter promote``, documented in README.md.
EXIT_OK = 0
EXIT_JOB_FAILED = 1
EXIT_USAGE = 2
EXIT_PARITY_FAILED = 3
EXIT_IMAGE_FAILED = 4
EXIT_CANCELLED = 130


class PromoteError(Exception):
    """Base of every error a user can cause; ``str()`` is one line naming the input and the reason.

    Parameters
    ----------
    message
        One line, saying what was wrong and with which input.
    subject
        The input concerned (a path, a parameter, a target name), when there is one.
    field
        Where in a request the input is, as a dotted path (``resources.cpus``, ``parameters.lr``), so that
        a client places the error beside its field without reading the message.
    """

    exit_code: int = EXIT_USAGE
    http_status: int = 400

    def __init__(self, message: str, *, subject: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.subject = subject
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:  # picklable with its keyword fields
        return (_rebuild, (type(self), self.message, self.subject, self.field))

    def to_json(self) -> dict[str, str | None]:
        """The body of an HTTP error: ``{"message", "subject", "field"}``."""
        return {"message": self.message, "subject": self.subject, "field": self.field}

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[PromoteError], message: str, subject: str | None, field: str | None = None) -> PromoteError:
    return cls(message, subject=subject, field=field)


class UsageError(PromoteError):
    """A command line, a payload or an option that is not valid."""


class NotebookError(PromoteError):
    """A notebook that cannot be read, parsed or converted."""

    @classmethod
    def at(cls, path: str, reason: str) -> NotebookError:
        return cls(f"{path}: {reason}", subject=path)


class KernelError(PromoteError):
    """A kernel (or interpreter) that cannot be found or introspected."""


class FreezeError(PromoteError):
    """An environment that cannot be frozen reproducibly."""


class ImageError(PromoteError):
    """An image that could not be built, tagged, pushed, or that does not reproduce its lock."""

    exit_code = EXIT_IMAGE_FAILED
    http_status = 422


class TargetError(PromoteError):
    """An unknown target, or a target that refused a job."""


class TargetUnavailable(TargetError):
    """A target that exists but is down."""

    http_status = 503


class JobCancelled(PromoteError):
    """A job cancelled before it was submitted (Ctrl-C, or a DELETE while it was being prepared)."""

    exit_code = EXIT_CANCELLED
    http_status = 409


class JobNotFinished(PromoteError):
    """A request that only applies to a finished job (removing it) made while it runs."""

    http_status = 409


class ForbiddenPath(PromoteError):
    """A path outside the server's root (absolute, ``..``, or a symlink that leads out)."""

    http_status = 403


class JobNotFound(PromoteError):
    """A run directory or job id that does not exist."""

    http_status = 404
