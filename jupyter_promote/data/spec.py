"""``--data NAME=URL``: a job's read-only input on storage the cluster reads, parsed and checked for form.

What is checked here, without touching the network and without importing an fsspec implementation (the
CLI stays fast; fsspec's registry itself is imported only when a ``--data`` is given):

- NAME is an identifier (it becomes the input's folder name and a variable of the job);
- URL has a scheme that fsspec knows and whose implementation is importable here (``s3`` needs s3fs: the
  message says what to install), and a bucket (or host);
- URL carries no credentials (userinfo, query string): they are secrets (``--secret AWS_ACCESS_KEY_ID``),
  never part of a request; the message shows the URL with them removed (:func:`~jupyter_promote.redact.redact_url`);
- ``file://`` and other local paths are refused unless the job shares this machine's filesystem
  (``allow_local=True``: the local target), since a node elsewhere would read its own disk instead.

Each refusal is a :class:`~jupyter_promote.errors.UsageError` of one line, ``data NAME: reason``, with
``subject=NAME`` and ``field="data.NAME"``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import UsageError
from ..redact import redact_url

#: What to install for the data layer (fsspec and s3fs).
INSTALL_HINT = "pip install 'jupyter_promote[data]'"
#: Schemes that name this machine's filesystem (or its memory): meaningless on another node.
LOCAL_SCHEMES = frozenset({"file", "local", "memory"})


@dataclass(frozen=True)
class Subject:
    """Who an error is about: ``label`` opens its one line; ``subject`` and ``field`` are the error's fields."""

    label: str
    subject: str
    field: str

    def error(self, reason: str) -> UsageError:
        """``LABEL: reason`` as a :class:`UsageError`."""
        return UsageError(f"{self.label}: {reason}", subject=self.subject, field=self.field)


def input_subject(name: str) -> Subject:
    """The subject of input ``name``: ``data NAME: ...``, field ``data.NAME``."""
    return Subject(f"data {name}", name, f"data.{name}" if name.isidentifier() else "data")


#: The subject of c.PromoteSettings.artifacts_url's errors.
ARTIFACTS = Subject("artifacts_url", "artifacts_url", "artifacts_url")


@dataclass(frozen=True)
class DataSpec:
    """One input: ``name`` (an identifier) and ``url`` (``scheme://bucket/prefix``, no trailing ``/``)."""

    name: str
    url: str

    @property
    def protocol(self) -> str:
        """The URL's scheme, the fsspec protocol (``s3``)."""
        return self.url.split("://", 1)[0]

    @property
    def path(self) -> str:
        """The URL without its scheme (``bucket/prefix``): the path fsspec's filesystems take."""
        return self.url.split("://", 1)[1]

    @property
    def subject(self) -> Subject:
        """Who this input's errors are about."""
        return input_subject(self.name)

    def to_json(self) -> dict[str, str]:
        """``{"name", "url"}``: how a request and job.json carry it."""
        return {"name": self.name, "url": self.url}

    @classmethod
    def from_json(cls, data: dict[str, str], *, allow_local: bool = False) -> DataSpec:
        """The input :meth:`to_json` wrote, checked again (a request body is input like any other)."""
        return parse_data(f"{data.get('name', '')}={data.get('url', '')}", allow_local=allow_local)


def parse_data(text: str, *, allow_local: bool = False) -> DataSpec:
    """``NAME=URL`` as a :class:`DataSpec`, or a one-line :class:`UsageError` naming the input and the reason.

    Parameters
    ----------
    text
        ``NAME=URL``, as ``--data`` takes it.
    allow_local
        Accept ``file://`` (and other local schemes): only where the job runs on this machine's filesystem.
    """
    name, sep, url = text.partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not name:
        raise input_subject(redact_url(name or text)).error("give it as NAME=URL (train=s3://bucket/prefix)")
    if not (name.isidentifier() and name.isascii()):
        raise input_subject(name).error(
            "NAME must be an identifier (letters, digits and '_', not starting with a digit)"
        )
    return DataSpec(name, parse_url(url, input_subject(name), allow_local=allow_local))


def parse_url(url: str, who: Subject, *, allow_local: bool = False) -> str:
    """``url`` made canonical (lower-case scheme, no trailing ``/``), or ``who``'s one-line error saying why not."""
    if "://" not in url:
        raise who.error(f"{redact_url(url) or 'an empty URL'} is not a URL (s3://bucket/prefix)")
    try:
        parts = urlsplit(url)
        has_userinfo = "@" in parts.netloc
    except ValueError:
        raise who.error(f"{redact_url(url)} is not a valid URL") from None
    protocol = parts.scheme.lower()
    if has_userinfo or parts.query:
        raise who.error(
            f"{redact_url(url)}: credentials do not belong in the URL; give them as secrets "
            "(--secret AWS_ACCESS_KEY_ID --secret AWS_SECRET_ACCESS_KEY)"
        )
    if protocol in LOCAL_SCHEMES and not allow_local:
        raise who.error(f"{url} is on this machine; a job on a cluster reads its own disk: use storage it reads")
    if not parts.netloc and protocol not in LOCAL_SCHEMES:
        raise who.error(f"{url} names no bucket ({protocol}://BUCKET/PREFIX)")
    check_protocol(protocol, who)
    return f"{protocol}://{url.split('://', 1)[1].rstrip('/')}"


def check_protocol(protocol: str, who: Subject) -> None:
    """Refuse a scheme fsspec does not know, or whose implementation is not installed here (with what to install)."""
    if importlib.util.find_spec("fsspec") is None:
        raise who.error(f"reading {protocol}:// needs fsspec: {INSTALL_HINT}")
    from fsspec.registry import known_implementations, registry

    if protocol in registry:  # registered at run time (a plugin imported earlier)
        return
    known = known_implementations.get(protocol)
    if known is None:
        some = ", ".join(p for p in ("s3", "gs", "az", "hf", "http", "https") if p in known_implementations)
        raise who.error(f"unknown scheme {protocol!r} (fsspec knows {some}, ...)")
    module = known["class"].split(".", 1)[0]
    if importlib.util.find_spec(module) is None:
        hint = INSTALL_HINT if protocol in ("s3", "s3a") else known.get("err") or f"pip install {module}"
        raise who.error(f"reading {protocol}:// needs the package {module}, not installed here: {hint}")
