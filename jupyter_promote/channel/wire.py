"""The channel's line format, in the job's stdout among whatever else it prints.

- ``@promote e {json}``: one line of the job's events file, when it is ASCII and short;
- ``@promote b {"id", "kind", "name", "parts", "size", "sha256"}`` then ``parts`` lines
  ``@promote p ID INDEX BASE64``: a message in fragments (a file, or an event line too long for one line);
- ``@promote n {"left_out", "count", "budget"}``: the job's files that were too big to send.

Every line is written with one ``write`` of at most :data:`MAX_LINE` bytes, under ``PIPE_BUF``: lines from
the job's other writers never tear one. A message whose fragments do not all arrive, or whose checksum
does not match, is dropped (and the receiver says so).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PREFIX = "@promote "
#: The longest line written (bytes, with its newline): under Linux's PIPE_BUF (4096), so a line is atomic.
MAX_LINE = 4000
_CHUNK = 2700  # raw bytes per fragment: 3600 base64 characters
_ids = itertools.count(1)


def event_lines(line: bytes) -> list[bytes]:
    """The channel's lines for one line of an events file."""
    line = line.rstrip(b"\n")
    if len(line) + len(PREFIX) + 3 <= MAX_LINE and line.isascii() and b"\n" not in line:
        return [PREFIX.encode() + b"e " + line + b"\n"]
    return _fragments("event", "", line)


def file_lines(name: str, data: bytes) -> list[bytes]:
    """The channel's lines for a file at ``name`` (relative to the run directory)."""
    return _fragments("file", name, data)


def _fragments(kind: str, name: str, data: bytes) -> list[bytes]:
    ident = f"{os.getpid()}.{next(_ids)}"
    parts = max(1, -(-len(data) // _CHUNK))
    header = {"id": ident, "kind": kind, "name": name, "parts": parts, "size": len(data),
              "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    lines = [f"{PREFIX}b {json.dumps(header)}\n".encode()]
    for index in range(parts):
        chunk = base64.b64encode(data[index * _CHUNK : (index + 1) * _CHUNK]).decode()
        lines.append(f"{PREFIX}p {ident} {index} {chunk}\n".encode())
    return lines


@dataclass
class _Pending:
    header: dict[str, Any]
    parts: dict[int, bytes] = field(default_factory=dict)


class Decoder:
    """Reads a job's stream in pieces of any size; yields ``("event", line)``, ``("file", (name, data))``,
    ``("text", line)`` (what else the job printed), ``("left_out", json)`` and ``("broken", why)``, in the stream's order."""

    def __init__(self) -> None:
        self._partial = ""
        self._pending: dict[str, _Pending] = {}

    def feed(self, text: str) -> Iterator[tuple[str, Any]]:
        text = self._partial + text
        *lines, self._partial = text.split("\n")
        for line in lines:
            yield from self._line(line.rstrip("\r"))

    def _line(self, line: str) -> Iterator[tuple[str, Any]]:
        at = line.find(PREFIX)
        if at < 0:
            yield ("text", line)
            return
        if at > 0:  # something printed without a newline just before
            yield ("text", line[:at])
        kind, _, rest = line[at + len(PREFIX) :].partition(" ")
        if kind == "e":
            yield ("event", rest)
        elif kind == "b":
            try:
                header = json.loads(rest)
                self._pending[str(header["id"])] = _Pending(header)
            except (ValueError, KeyError, TypeError):
                yield ("broken", "a fragmented message whose header does not parse")
        elif kind == "p":
            yield from self._part(rest)
        elif kind == "n":
            yield ("left_out", rest)
        else:
            yield ("text", line[at:])

    def _part(self, rest: str) -> Iterator[tuple[str, Any]]:
        ident, _, rest = rest.partition(" ")
        index, _, chunk = rest.partition(" ")
        pending = self._pending.get(ident)
        if pending is None or not index.isdigit():
            return  # the header was before where this reader started (a stream read from its middle)
        try:
            pending.parts[int(index)] = base64.b64decode(chunk, validate=True)
        except ValueError:
            del self._pending[ident]
            yield ("broken", f"a fragment of {pending.header.get('name') or 'an event'} is not base64")
            return
        header = pending.header
        if len(pending.parts) < int(header["parts"]):
            return
        del self._pending[ident]
        data = b"".join(pending.parts[i] for i in range(int(header["parts"])))
        if hashlib.sha256(data).hexdigest() != header.get("sha256"):
            yield ("broken", f"{header.get('name') or 'an event'} arrived damaged (checksum)")
        elif header.get("kind") == "file":
            yield ("file", (str(header.get("name")), data))
        else:
            yield ("event", data.decode("utf-8", "replace"))
