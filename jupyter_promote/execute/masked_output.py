"""The job's own output with its secrets masked: its log (stdout and stderr) and its output notebook.

When the job was given secrets (:mod:`jupyter_promote.runtime.masking`), the runner:

- puts a pipe under file descriptors 1 and 2 before the kernel starts, so that everything the runner, the
  kernel and anything they start write there passes through :func:`~..runtime.masking.mask` on its way
  to the job log (a target's log file, a container's or a pod's log). A line is passed on as soon as it
  ends; a line still being written waits only while its end could be the start of a secret's value;
- registers a papermill I/O handler for the output notebook's path (papermill's own extension point for
  where notebooks are written), so that every save of ``output.ipynb`` (after each cell, the periodic
  saves of a long cell, the failed cell's) is masked before it reaches the disk.

Without secrets, neither happens: the job's output is not touched.
"""

from __future__ import annotations

import json
import os
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..runtime.masking import NOTEBOOK_STRUCTURE, longest, mask, mask_tree, secret_values

#: How long a line being written may wait for its end while it could hide a secret's start (seconds).
_PARTIAL_WAIT_S = 0.25
_CHUNK = 65536


def _held_back(buffer: str, values: tuple[str, ...]) -> int:
    """How many characters at the end of ``buffer`` could be the start of a secret's value."""
    for size in range(min(len(buffer), longest(values) - 1), 0, -1):
        tail = buffer[-size:]
        if any(value.startswith(tail) for value in values):
            return size
    return 0


class _Relay:
    """One descriptor's output, read from a pipe and written, masked, to where it went before."""

    def __init__(self, fd: int, values: tuple[str, ...]) -> None:
        self.fd, self.values = fd, values
        self.saved = os.dup(fd)
        read_end, write_end = os.pipe()
        self.read_end = read_end
        os.dup2(write_end, fd)
        os.close(write_end)
        self.thread = threading.Thread(target=self._pump, name=f"promote-mask-{fd}", daemon=True)
        self.thread.start()

    def _write(self, text: str) -> None:
        data = mask(text, self.values).encode("utf-8", "surrogateescape")
        while data:
            data = data[os.write(self.saved, data) :]

    def _pump(self) -> None:
        pending = ""
        while True:
            ready, _, _ = select.select([self.read_end], [], [], _PARTIAL_WAIT_S)
            if not ready:  # quiet: pass on what cannot be the start of a secret
                keep = _held_back(pending, self.values)
                if len(pending) > keep:
                    self._write(pending[: len(pending) - keep])
                    pending = pending[len(pending) - keep :]
                continue
            chunk = os.read(self.read_end, _CHUNK)
            if not chunk:
                break
            pending += chunk.decode("utf-8", "surrogateescape")
            cut = pending.rfind("\n") + 1
            if cut:
                self._write(pending[:cut])
                pending = pending[cut:]
        if pending:
            self._write(pending)

    def close(self, timeout: float = 5.0) -> None:
        """Give the descriptor its old target back, then pass on what is still in the pipe."""
        os.dup2(self.saved, self.fd)  # the pipe ends once nothing else holds it (the kernel is gone)
        self.thread.join(timeout)
        os.close(self.read_end)


@contextmanager
def masked_streams() -> Iterator[None]:
    """Stdout and stderr (this process's and its children's) masked for as long as the context lasts."""
    import sys

    values = secret_values()
    if not values:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    relays = [_Relay(1, values), _Relay(2, values)]
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for relay in relays:
            relay.close()


class _MaskingHandler:
    """A papermill I/O handler for one path: papermill's local handler, with what it writes masked."""

    def __init__(self, local: Any, values: tuple[str, ...]) -> None:
        self.local, self.values = local, values

    def read(self, path: str) -> Any:
        return self.local.read(path)

    def listdir(self, path: str) -> Any:
        return self.local.listdir(path)

    def pretty_path(self, path: str) -> Any:
        return self.local.pretty_path(path)

    def write(self, buf: str, path: str) -> Any:
        return self.local.write(masked_notebook_text(buf, self.values), path)


def masked_notebook_text(text: str, values: tuple[str, ...] | None = None) -> str:
    """A notebook's JSON text with the secrets in its cells masked, its structure untouched, written as
    nbformat writes it; text that is not a notebook's JSON is masked as text."""
    try:
        nb = json.loads(text)
    except ValueError:
        return mask(text, values)
    if not isinstance(nb, dict):
        return mask(text, values)
    nb["cells"] = mask_tree(nb.get("cells", []), NOTEBOOK_STRUCTURE, values)
    return json.dumps(nb, sort_keys=True, indent=1, separators=(",", ": "), ensure_ascii=False) + "\n"


def mask_notebook_writes(path: str) -> None:
    """Every write papermill makes to ``path`` (the output notebook) masked, when the job has secrets."""
    values = secret_values()
    if not values:
        return
    from papermill.iorw import papermill_io

    papermill_io.register(path, _MaskingHandler(papermill_io.get_handler(path), values))
