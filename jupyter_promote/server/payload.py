"""``POST jobs`` bodies and notebook paths: a request's JSON made into a request at the server's door
(:func:`jupyter_promote.launch.body.request_from_body`, every error a 400 naming its field as a dotted
path such as ``resources.cpus``), its notebook path resolved as the contents manager resolves it and
confined to the server's root.
"""

from __future__ import annotations

import os
from typing import Any

from ..config import PromoteSettings
from ..errors import ForbiddenPath, UsageError
from ..launch.body import MAX_BODY_DEPTH, Resolve, check_body, request_from_body
from ..launch.request import GroupRequest, PromoteRequest

__all__ = ["MAX_BODY_DEPTH", "check_body", "confine", "relative_to_root", "request_from_payload"]


def confine(root: str, path: Any, field: str = "notebook", allow_hidden: bool = True) -> str:
    """``path`` (relative to the server's root) as the absolute path the contents manager serves, or an error.

    Resolved as jupyter_server's ``FileContentsManager`` resolves it: ``root`` with ``~`` expanded, the path
    joined to it lexically (a symlink inside the root is followed wherever it leads, as the file browser
    follows it), absolute paths and ``..`` refused, hidden files refused unless the contents manager allows
    them. Nothing is read before the path is accepted.
    """
    if not isinstance(path, str) or not path.strip():
        raise UsageError(f"{field}: must be a path relative to the server's root", subject=field, field=field)
    if "\x00" in path:
        raise UsageError(f"{field}: a path cannot contain a NUL character", subject=field, field=field)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if os.path.isabs(path) or ".." in parts:
        raise ForbiddenPath(f"{field} {path!r}: outside the server's root", subject=field, field=field)
    if not allow_hidden and any(p.startswith(".") for p in parts):
        message = f"{field} {path!r}: a hidden file (ContentsManager.allow_hidden is off)"
        raise ForbiddenPath(message, subject=field, field=field)
    full = os.path.join(os.path.abspath(os.path.expanduser(root)), *parts)
    if not os.path.isfile(full):
        raise UsageError(f"{field} {path!r}: no such notebook", subject=field, field=field)
    return full


def relative_to_root(root: str, path: str) -> str | None:
    """``path`` relative to the server's root (what the contents API takes), or None when it is outside.

    The inverse of :func:`confine`: lexical, with ``~`` expanded, so a notebook reached through a symlink
    maps back to the path the file browser shows.
    """
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(os.path.expanduser(root)))
    return None if relative == ".." or relative.startswith("../") else relative.replace(os.sep, "/")


def request_from_payload(
    payload: Any, resolve: Resolve, settings: PromoteSettings
) -> tuple[PromoteRequest, GroupRequest | None]:
    """A ``POST jobs`` body made into the request, and the group it asks for (None for one job).

    ``resolve`` is the server's: the notebook path confined to its root (:func:`confine`); the rest is
    :func:`~jupyter_promote.launch.body.request_from_body`, the same at both doors.
    """
    return request_from_body(payload, resolve, settings)
