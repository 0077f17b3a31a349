"""The base of every REST handler: authenticated and authorized (resource ``jupyter_promote``), errors users
can cause mapped once to their HTTP status with ``{"message", "subject", "field"}``, JSON bodies read as
browsers write them, and notebook paths resolved as the contents manager resolves them.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_server.base.handlers import APIHandler

from ..errors import PromoteError, UsageError
from .manager import JobManager
from .payload import confine

AUTH_RESOURCE = "jupyter_promote"
MAX_PAGE = 200
MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER: a larger offset or seq is refused, not a 500 (the fuzz test found it)


def maps_errors(method: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """PromoteError -> its HTTP status with ``{"message", "subject", "field"}``; never a 500 for a user's mistake."""

    @functools.wraps(method)
    async def wrapper(self: PromoteHandler, *args: Any, **kwargs: Any) -> None:
        try:
            await method(self, *args, **kwargs)
        except PromoteError as exc:
            self.set_status(exc.http_status)
            self.finish(json.dumps(exc.to_json()))

    return wrapper


def _non_finite(name: str) -> Any:
    raise UsageError(f"body: {name} is not a JSON number (only finite numbers are)", subject="body")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UsageError(f"body: {text[:40]} is beyond a finite number", subject="body")
    return value


class PromoteHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def manager(self) -> JobManager:
        manager: JobManager = self.settings["jupyter_promote_jobs"]
        return manager

    @property
    def root_dir(self) -> str:
        """The contents manager's root, as it resolves paths (``settings["server_root_dir"]`` is only for
        display: it keeps the home directory contracted to ``~``).
        """
        return os.path.expanduser(str(self.contents_manager.root_dir))

    @property
    def username(self) -> str:
        """Who asks (jupyter_server's current user): a job's owner, and ``{username}`` in ``runs_dir``."""
        user = self.current_user
        name = getattr(user, "username", None) or (user.get("name") if isinstance(user, dict) else user)
        return str(name or "")

    def notebook_argument(self, path: Any, field: str = "notebook") -> str:
        """A notebook path from a request, resolved as the contents manager resolves it (see :func:`confine`)."""
        return confine(
            self.root_dir, path, field, allow_hidden=bool(getattr(self.contents_manager, "allow_hidden", True))
        )

    def body(self) -> Any:
        """The request's JSON body, as browsers' JSON.parse would read it: no NaN, no Infinity, no overflow."""
        try:
            return json.loads(self.request.body or b"{}", parse_constant=_non_finite, parse_float=_finite_float)
        except RecursionError:
            raise UsageError("body: nested too deeply", subject="body") from None
        except UsageError:
            raise
        except ValueError:
            raise UsageError("body: not valid JSON", subject="body") from None

    def int_argument(self, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        raw = self.get_argument(name, None)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{name}: {raw!r} is not a whole number", subject=name) from None
        if value < minimum or value > (MAX_INTEGER if maximum is None else maximum):
            raise UsageError(f"{name}: {raw} is out of range", subject=name)
        return value
