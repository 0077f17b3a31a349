"""The store: a filesystem for a URL with short timeouts, its listing made safe, and its errors as one line.

- :func:`open_store` makes the fsspec filesystem of a protocol from ``storage_options`` (empty: the
  implementation's own configuration, for S3 botocore's ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL``, ``AWS_DEFAULT_REGION`` variables). For S3 the connect timeout
  is a few seconds and retries are few (one attempt before a submit, four on a node), so that a store that
  does not answer is said in seconds, not after minutes of backoff; ``config_kwargs`` given win.
- :func:`list_objects` lists every object under a URL (or the one object it names) with its size and its
  version (the ETag, else a content hash or a modification time), sorted by key, and refuses a key that
  would be written outside the folder it is fetched into (``..``, ``.``, an empty segment, a leading ``/``)
  or one that is both a file and a folder.
- :func:`store_errors` turns what a store raises into the subject's one-line
  :class:`~jupyter_promote.errors.UsageError`: missing bucket, access denied, no credentials, endpoint
  unreachable. No message carries a credential: reasons are this module's words, and anything quoted from
  an exception goes through :func:`~jupyter_promote.redact.redact_text`.

fsspec and the implementation are imported when a function is called, never at import time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..redact import redact_text, redact_url
from .spec import Subject

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

#: Seconds to wait for a connection to the store before saying it cannot be reached.
CONNECT_TIMEOUT = 3
#: Attempts per request (botocore's "standard" retry mode): before a submit, and on a node.
ATTEMPTS_CHECK, ATTEMPTS_NODE = 1, 4
#: Object fields that change when the content does, in order of preference (S3, GCS, Azure, local).
_VERSION_FIELDS = ("ETag", "etag", "md5Hash", "content_md5", "crc32c", "LastModified", "last_modified", "mtime")
#: Exception class names (anywhere in the class's MRO) that mean the endpoint did not answer.
_UNREACHABLE = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ClientConnectorError",
        "ClientConnectionError",
        "ConnectionError",
        "ServerTimeoutError",
        "TimeoutError",
        "FSTimeoutError",
    }
)
_NO_CREDENTIALS = frozenset({"NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError"})


@dataclass(frozen=True)
class RemoteObject:
    """One object: ``key`` relative to the listed URL (``/``-separated, safe), full ``path``, ``size``, ``version``."""

    key: str
    path: str
    size: int
    version: str


def open_store(protocol: str, storage_options: Mapping[str, Any] | None, *, patient: bool) -> AbstractFileSystem:
    """The fsspec filesystem for ``protocol``; ``patient`` (on a node) retries more than a check before submit."""
    import fsspec

    options = dict(storage_options or {})
    if protocol in ("s3", "s3a"):
        config = {
            "connect_timeout": CONNECT_TIMEOUT,
            "retries": {"max_attempts": ATTEMPTS_NODE if patient else ATTEMPTS_CHECK, "mode": "standard"},
        }
        config.update(options.get("config_kwargs") or {})
        options["config_kwargs"] = config
    options.setdefault("skip_instance_cache", True)  # fresh listings, and no instance shared across a fork
    return fsspec.filesystem(protocol, **options)


def endpoint_of(protocol: str, storage_options: Mapping[str, Any] | None) -> str:
    """The endpoint requests go to, for messages (credentials removed)."""
    options = storage_options or {}
    client = options.get("client_kwargs") or {}
    given = options.get("endpoint_url") or client.get("endpoint_url")
    if not given and protocol in ("s3", "s3a"):
        given = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return redact_url(str(given)) if given else f"{protocol}'s default endpoint"


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def reason_of(exc: BaseException, url: str, endpoint: str, *, missing: str) -> str:
    """Why ``exc`` happened, in one line; ``missing`` is what a FileNotFoundError means where it was raised."""
    names = _names(exc)
    if names & _NO_CREDENTIALS:
        return f"no credentials to read {url}: give them as secrets (--secret AWS_ACCESS_KEY_ID --secret AWS_SECRET_ACCESS_KEY)"
    if isinstance(exc, PermissionError):
        return f"access denied to {url} at {endpoint} (the credentials given may not list or read it)"
    if names & _UNREACHABLE:
        return f"cannot reach the storage endpoint {endpoint}: it does not answer (waited {CONNECT_TIMEOUT} s at most)"
    if isinstance(exc, FileNotFoundError):
        return missing
    detail = redact_text(str(exc).splitlines()[0] if str(exc) else "")[:200]
    return f"{url} at {endpoint}: {type(exc).__name__}" + (f": {detail}" if detail else "")


@contextmanager
def store_errors(
    who: Subject, url: str, protocol: str, storage_options: Mapping[str, Any] | None, *, missing: str
) -> Iterator[None]:
    """Any error a store raises inside, as ``who``'s one-line :class:`UsageError` (:func:`reason_of`)."""
    try:
        yield
    except UsageError:
        raise
    except Exception as exc:
        raise who.error(reason_of(exc, url, endpoint_of(protocol, storage_options), missing=missing)) from None


def bucket_of(path: str) -> str:
    """The bucket (the first segment) of an fsspec path."""
    return path.split("/", 1)[0]


def safe_key(key: str) -> bool:
    """Whether ``key`` names a place inside a folder: relative, no ``..``, ``.`` or empty segment, no NUL."""
    return bool(key) and "\0" not in key and all(part not in ("", ".", "..") for part in key.split("/"))


def local_path(folder: Path, key: str, who: Subject) -> Path:
    """Where object ``key`` goes under ``folder``; refused when it would land outside (checked twice: by form,
    and by where the path resolves, so that a symbolic link in ``folder`` leads nowhere else)."""
    if not safe_key(key):
        raise who.error(f"object key {key!r} would be written outside its folder: refused")
    target = folder.joinpath(*key.split("/"))
    if not target.resolve().is_relative_to(folder.resolve()):
        raise who.error(f"object key {key!r} leads outside its folder through a link: refused")
    return target


def _version(info: Mapping[str, Any]) -> str:
    for field in _VERSION_FIELDS:
        value = info.get(field)
        if value:
            return str(value).strip('"')
    return ""


def list_objects(fs: AbstractFileSystem, path: str, who: Subject) -> list[RemoteObject]:
    """The objects under ``path`` (``bucket/prefix``), or the object ``path`` names, sorted by key; a key that
    cannot be a file under one folder is refused. Empty when there is nothing there (the bucket exists)."""
    path = path.rstrip("/")
    fs.invalidate_cache()
    found: dict[str, dict[str, Any]] = fs.find(path, detail=True)
    objects = []
    for full, info in found.items():
        if info.get("type") == "directory" or (full.endswith("/") and not info.get("size")):
            continue  # a folder marker
        if full == path:  # the URL names one object
            if len(found) > 1:
                raise who.error(f"{path!r} is both an object and a folder of objects: name one or the other")
            key = path.rsplit("/", 1)[-1]
        elif full.startswith(path + "/"):
            key = full[len(path) + 1 :]
        else:
            raise who.error(f"the store listed {full!r} under {path!r}")
        if not safe_key(key):
            raise who.error(f"object key {key!r} would be written outside its folder: refused")
        objects.append(RemoteObject(key, full, int(info.get("size") or 0), _version(info)))
    objects.sort(key=lambda o: o.key)
    keys = {o.key for o in objects}
    for obj in objects:
        parent = obj.key.rsplit("/", 1)[0] if "/" in obj.key else ""
        while parent:
            if parent in keys:
                raise who.error(f"{parent!r} is both an object and a folder of objects: cannot be fetched as files")
            parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
    return objects


def download(fs: AbstractFileSystem, objects: list[RemoteObject], folder: Path, who: Subject) -> int:
    """Every object into ``folder`` at its key (concurrently, as the filesystem batches); the bytes written.
    Refused when a file comes back with a size other than the one listed (it changed while read)."""
    targets = [local_path(folder, obj.key, who) for obj in objects]
    for target in {t.parent for t in targets}:
        target.mkdir(parents=True, exist_ok=True)
    if objects:
        fs.get([obj.path for obj in objects], [str(t) for t in targets])
    total = 0
    for obj, target in zip(objects, targets, strict=True):
        size = target.stat().st_size if target.exists() else -1
        if size != obj.size:
            raise who.error(f"object {obj.key!r} came back with {size} bytes, listed with {obj.size}: try again")
        total += size
    return total
