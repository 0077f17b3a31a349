"""Reading a job's stream back into records, whatever else it holds, in bounded time and memory.

:class:`Decoder` takes the stream in pieces of any size and yields, in the stream's order, ``("event",
text)``, ``("file", (name, data))``, ``("left_out", text)``, ``("text", line)`` (what else the job printed)
and ``("fault", (what, message))`` for what it set aside. Only a line that starts with ``@promote`` and whose
MAC verifies under the job's key is a record; any other line is text (one that looks like a record is also
a ``fault``, so the job's owner hears of it once). Bounds: a line past :data:`MAX_LINE_CHARS` is cut (never
re-joined piece by piece), at most :data:`MAX_OPEN` fragmented messages wait for their fragments, holding at
most :data:`MAX_OPEN_BYTES`, each for at most :data:`MAX_AGE_LINES` lines after its last fragment was due.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .wire import CHUNK, MAC_DIGITS, PREFIX, record_mac

#: The longest line kept whole (characters); a record is never longer than 4000.
MAX_LINE_CHARS = 65536
#: The most fragmented messages open at once, and the most bytes their fragments hold together.
MAX_OPEN = 16
MAX_OPEN_BYTES = 320 << 20
#: Lines a message may still wait for its fragments after they were all due (other writers' lines between).
MAX_AGE_LINES = 10000
_UNSIGNED = (
    "the job printed lines that look like the channel's records but are not signed by its runner; "
    "they are kept as printed text"
)
_ESCAPED = re.compile(r"^@(@+promote)")
_ID = re.compile(r"[0-9A-Za-z._-]{1,64}\Z")
_SHA = re.compile(r"[0-9a-f]{64}\Z")


class Unusable(ValueError):
    """A record that is well signed but cannot be used (its fields are wrong)."""


@dataclass
class _Pending:
    header: dict[str, Any]
    due: int  # the line count by which all its fragments should have come
    parts: dict[int, bytes] = field(default_factory=dict)
    size: int = 0


class Decoder:
    """One job's stream into records; ``key`` None reads an unsigned stream (a job from before keys)."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key
        self._pieces: list[str] = []
        self._length = 0
        self._cut = 0  # characters of the current line dropped past MAX_LINE_CHARS
        self._pending: dict[str, _Pending] = {}
        self._open_bytes = 0
        self._lines = 0
        self._blank = False  # a blank line held back: the newline a record starts with

    def feed(self, text: str) -> Iterator[tuple[str, Any]]:
        start = 0
        while True:
            end = text.find("\n", start)
            if end < 0:
                self._keep(text[start:])
                return
            self._keep(text[start:end])
            line, cut = "".join(self._pieces), self._cut
            self._pieces, self._length, self._cut = [], 0, 0
            start = end + 1
            if cut:
                why = f"a line the job printed was over {MAX_LINE_CHARS} characters; what was past them is not kept"
                yield ("fault", ("long_line", why))
                line += f" ... ({cut} characters cut)"
            yield from self._guarded(line.rstrip("\r"))

    def _keep(self, piece: str) -> None:
        room = MAX_LINE_CHARS - self._length
        if len(piece) > room:
            self._cut += len(piece) - max(room, 0)
            piece = piece[: max(room, 0)]
        if piece:
            self._pieces.append(piece)
            self._length += len(piece)

    def _guarded(self, line: str) -> Iterator[tuple[str, Any]]:
        self._lines += 1
        try:
            items = list(self._line(line))
        except Exception as exc:  # one record, whatever it holds, never the stream
            items = [("fault", ("record", f"a record the job sent could not be read ({type(exc).__name__})"))]
        is_record = line.startswith(PREFIX) and not (items and items[0][0] == "text")
        if self._blank and not is_record:  # the newline a record starts with is not the job's
            yield ("text", "")
        self._blank = line == ""
        if not self._blank:
            yield from items
        if self._pending and self._lines % 256 == 0:
            yield from self._expire()

    def _line(self, line: str) -> Iterator[tuple[str, Any]]:
        if not line.startswith(PREFIX):
            escaped = _ESCAPED.match(line)
            yield ("text", line[1:] if escaped else line)
            return
        kind, _, rest = line[len(PREFIX) :].partition(" ")
        if self.key is not None:
            mac, _, rest = rest.partition(" ")
            if len(mac) != MAC_DIGITS or not hmac.compare_digest(mac, record_mac(self.key, kind, rest)):
                yield ("text", line)
                yield ("fault", ("unsigned", _UNSIGNED))
                return
        if kind == "e":
            yield ("event", rest)
        elif kind == "b":
            yield from self._header(rest)
        elif kind == "p":
            yield from self._part(rest)
        elif kind == "n":
            yield ("left_out", rest)
        else:
            yield ("fault", ("record", f"a record of an unknown kind {kind[:20]!r} was set aside"))

    def _header(self, rest: str) -> Iterator[tuple[str, Any]]:
        header = json.loads(rest)
        if not isinstance(header, dict):
            raise Unusable("not an object")
        ident, parts, size = header.get("id"), header.get("parts"), header.get("size")
        if not (isinstance(ident, str) and _ID.match(ident) and isinstance(size, int) and isinstance(parts, int)):
            raise Unusable("id, parts or size")
        if isinstance(size, bool) or not 0 <= size <= MAX_OPEN_BYTES or parts != max(1, -(-size // CHUNK)):
            raise Unusable("size")
        if header.get("kind") not in ("file", "event") or not _SHA.match(str(header.get("sha256"))):
            raise Unusable("kind or checksum")
        self._drop(ident)
        while len(self._pending) >= MAX_OPEN:
            yield from self._lose(next(iter(self._pending)), "too many fragmented messages were open at once")
        self._pending[ident] = _Pending(header, self._lines + parts + MAX_AGE_LINES)

    def _part(self, rest: str) -> Iterator[tuple[str, Any]]:
        ident, index_text, chunk = rest.split(" ", 2)
        pending = self._pending.get(ident)
        if pending is None:
            return  # its header was before where this reader started (a stream read from its middle)
        header = pending.header
        index = int(index_text) if index_text.isdigit() and len(index_text) < 10 else -1
        try:
            data = base64.b64decode(chunk, validate=True)
        except (ValueError, binascii.Error):
            data = b""
            index = -1
        if not 0 <= index < header["parts"] or len(data) > CHUNK or index in pending.parts:
            yield from self._lose(ident, "a fragment of it was damaged or out of place")
            return
        if self._open_bytes + len(data) > MAX_OPEN_BYTES:
            yield from self._lose(ident, f"the open messages would hold over {MAX_OPEN_BYTES >> 20} MiB")
            return
        pending.parts[index] = data
        pending.size += len(data)
        self._open_bytes += len(data)
        if len(pending.parts) < header["parts"]:
            return
        self._drop(ident)
        data = b"".join(pending.parts[i] for i in range(header["parts"]))
        if hashlib.sha256(data).hexdigest() != header["sha256"]:
            yield ("fault", ("damaged", f"{_what(header)} arrived damaged (checksum); it was dropped"))
        elif header["kind"] == "file":
            yield ("file", (header.get("name"), data))
        else:
            yield ("event", data.decode("utf-8", "replace"))

    def _expire(self) -> Iterator[tuple[str, Any]]:
        for ident in [i for i, p in self._pending.items() if p.due < self._lines]:
            yield from self._lose(ident, "its fragments stopped coming")

    def _lose(self, ident: str, why: str) -> Iterator[tuple[str, Any]]:
        pending = self._drop(ident)
        if pending is not None:
            yield ("fault", ("dropped", f"{_what(pending.header)} was dropped: {why}"))

    def _drop(self, ident: str) -> _Pending | None:
        pending = self._pending.pop(ident, None)
        if pending is not None:
            self._open_bytes -= pending.size
        return pending


def _what(header: dict[str, Any]) -> str:
    name = header.get("name")
    return f"the job's file {name[:200]!r}" if isinstance(name, str) and name else "an event of the job's"
