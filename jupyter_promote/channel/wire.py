"""The channel's line format, in the job's stdout among whatever else it prints.

Every record is a line of its own, starting with ``@promote KIND MAC PAYLOAD``: ``MAC`` is the first 32 hex
digits of an HMAC-SHA256 of ``KIND PAYLOAD`` under the job's key (:mod:`.keys`), which only the runner and
the submitter hold, so nothing the notebook prints can pass for a record. The kinds:

- ``e {json}``: one line of the job's events file, when it is ASCII and short;
- ``b {"id", "kind", "name", "parts", "size", "sha256"}`` then ``parts`` lines ``p ID INDEX BASE64``: a
  message in fragments (a file, or an event line too long for one line);
- ``n {"left_out", "count", "budget"}``: the job's files that were too big to send.

A job submitted without a key (an older submitter) writes ``@promote KIND PAYLOAD``, unsigned.

Every record is written with one ``write`` of at most :data:`MAX_LINE` bytes, under ``PIPE_BUF``, after a
newline of its own: lines from the job's other writers never tear one, and one they left unfinished does not
hide it. What the runner forwards from papermill and the kernel is escaped (:func:`escape`): a printed line
starting with ``@promote`` gets one more ``@``, which the receiver takes off again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import logging
import os
import re
from typing import Any

PREFIX = "@promote "
#: The longest line written (bytes, with its newlines): under Linux's PIPE_BUF (4096), so a line is atomic.
MAX_LINE = 4000
#: Raw bytes per fragment: 3600 base64 characters.
CHUNK = 2700
#: Hex digits of a record's MAC.
MAC_DIGITS = 32
_ids = itertools.count(1)
_MARKED = re.compile(r"^(@+promote)", re.MULTILINE)


def record_mac(key: bytes, kind: str, payload: str) -> str:
    """The MAC of one record (``kind`` and ``payload`` as on the line)."""
    return hmac.new(key, f"{kind} {payload}".encode(), hashlib.sha256).hexdigest()[:MAC_DIGITS]


def record(kind: str, payload: str, key: bytes | None) -> bytes:
    """One record's line, after a newline of its own."""
    mac = f"{record_mac(key, kind, payload)} " if key is not None else ""
    return f"\n{PREFIX}{kind} {mac}{payload}\n".encode()


def escape(text: str) -> str:
    """``text`` as the runner forwards what papermill and the kernel print: never a record."""
    return _MARKED.sub(r"@\1", text)


class EscapingFormatter(logging.Formatter):
    """A log formatter whose lines are :func:`escape` d (the runner's handler for papermill's log)."""

    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


def event_lines(line: bytes, key: bytes | None = None) -> list[bytes]:
    """The channel's lines for one line of an events file."""
    line = line.rstrip(b"\n")
    if len(line) + len(PREFIX) + MAC_DIGITS + 6 <= MAX_LINE and line.isascii() and b"\n" not in line:
        return [record("e", line.decode(), key)]
    return _fragments("event", "", line, key)


def file_lines(name: str, data: bytes, key: bytes | None = None) -> list[bytes]:
    """The channel's lines for a file at ``name`` (relative to the run directory)."""
    return _fragments("file", name, data, key)


def note_lines(note: dict[str, Any], key: bytes | None = None) -> list[bytes]:
    """The channel's line for the files left out."""
    return [record("n", json.dumps(note), key)]


def _fragments(kind: str, name: str, data: bytes, key: bytes | None) -> list[bytes]:
    ident = f"{os.getpid()}.{next(_ids)}"
    parts = max(1, -(-len(data) // CHUNK))
    header = {
        "id": ident,
        "kind": kind,
        "name": name,
        "parts": parts,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    lines = [record("b", json.dumps(header), key)]
    for index in range(parts):
        chunk = base64.b64encode(data[index * CHUNK : (index + 1) * CHUNK]).decode()
        lines.append(record("p", f"{ident} {index} {chunk}", key))
    return lines
