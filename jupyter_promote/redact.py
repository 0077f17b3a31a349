"""Credentials out of URLs before a URL is recorded (a lock, ``mlflow.jsonl``) or logged (an error message).

One rule for every record and log line: a URL loses its userinfo (``https://user:password@host`` and
``https://TOKEN@pypi.fury.io``), its query string (``?token=...``) and the tokens that services recognisably
put in its path (Gemfury ``https://pypi.fury.io/TOKEN/USER/``, Cloudsmith
``https://dl.cloudsmith.io/TOKEN/OWNER/REPO/``, Anaconda ``https://conda.anaconda.org/t/TOKEN/CHANNEL``),
the last replaced by :data:`REDACTED` so the URL still reads as what it is. A recorded URL is for people;
the tools that need the credentials read them from their own configuration (pip's, MLflow's), never from a
record. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit, urlunsplit

#: What a credential in a URL's path becomes.
REDACTED = "***"
#: A URL in free text (an error message), up to whitespace, quotes or angle brackets.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
#: Cloudsmith paths that are not tokens.
_CLOUDSMITH_PUBLIC = frozenset({"public", "basic"})
#: Shortest credential piece replaced in free text (shorter ones would blank ordinary words).
_MIN_SECRET = 4


def _token_positions(host: str, segments: list[str]) -> list[int]:
    """Indices of the path segments that are credentials, for the services that put them there."""
    if host == "fury.io" or host.endswith(".fury.io"):
        # https://pypi.fury.io/USER/ is public; https://pypi.fury.io/TOKEN/USER/ is not
        return [0] if len(segments) >= 2 and segments[1] != "simple" else []
    if host == "dl.cloudsmith.io":
        return [0] if segments and segments[0] not in _CLOUDSMITH_PUBLIC else []
    if host.endswith("anaconda.org") or host.endswith("anaconda.cloud"):
        return [i + 1 for i, part in enumerate(segments[:-1]) if part == "t"]
    return []


def _parts(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return None
    return parts if parts.scheme and parts.netloc else None


def redact_url(url: str) -> str:
    """``url`` without its userinfo, its query string and recognisable path tokens; other text unchanged."""
    parts = _parts(url)
    if parts is None:
        return url
    host = (parts.hostname or "").lower()
    netloc = parts.netloc.rsplit("@", 1)[-1]
    segments = parts.path.split("/")
    filled = [i for i, segment in enumerate(segments) if segment]  # positions of the non-empty segments
    for index in _token_positions(host, [segments[i] for i in filled]):
        segments[filled[index]] = REDACTED
    return urlunsplit((parts.scheme, netloc, "/".join(segments), "", parts.fragment))


def secrets_of(url: str) -> list[str]:
    """The credential pieces of ``url`` (user, password, path tokens), to blank wherever they appear."""
    parts = _parts(url)
    if parts is None:
        return []
    found = [p for p in (parts.username, parts.password) if p]
    segments = [s for s in parts.path.split("/") if s]
    found += [segments[i] for i in _token_positions((parts.hostname or "").lower(), segments)]
    return [s for s in found if len(s) >= _MIN_SECRET]


def redact_text(text: str, known_urls: Iterable[str] = ()) -> str:
    """``text`` (a log line, an error message) with every URL in it redacted, and the credentials of
    ``known_urls`` (a configured tracking URI) blanked wherever else they appear."""
    text = _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
    for url in known_urls:
        for secret in secrets_of(url):
            text = text.replace(secret, REDACTED)
    return text
