"""``docker build`` through a BuildKit-capable docker CLI, with a progress line per step.

The build leaves no tag behind on failure: it writes only an image id (``--iidfile``); tagging happens
after verification, in :mod:`jupyter_promote.image`.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path

from ..errors import ImageError

#: ``#7 [runner 3/8] RUN python3 -m venv ...`` in BuildKit's plain progress output (printed again each time
#: the output switches back to that step: shown once)
_STEP = re.compile(r"^#(\d+) \[(?:([^\]]*?)\s)?(\d+)/(\d+)\] (.*)$")
_DONE = re.compile(r"^#(\d+) (?:DONE ([\d.]+)s|(CACHED))$")
_ERROR = re.compile(r"^#(\d+) ERROR: (.*)$")
#: ``#12 4.031 Collecting numpy==2.2.0``: a step's own output, with seconds since the step started
_LOG = re.compile(r"^#(\d+) (?:[\d.]+ )?(.*)$")
#: What pip says that a person watching a build wants: each package as it is fetched (with its size) and
#: installed; progress bars and the rest stay in the failure report's tail only.
_PIP_SHOWN = (
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Processing ",
    "Installing collected packages",
    "Successfully installed",
    "ERROR",
    "WARNING",
)
#: Longest line shown ("Successfully installed" lists every package)
_WIDTH = 240


class _BuildLog:
    """BuildKit's plain progress output -> the lines a person watches: each step once, with its time or
    "cached", and what pip does inside it; the last lines of each step kept for a failure report."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self.on_line = on_line
        self.steps: dict[str, str] = {}  # vertex -> "step 4/6: RUN ..."
        self.stages: dict[str, str] = {}  # vertex -> "runner" | "environment" (the stage it builds)
        self.shown: set[str] = set()
        self.logs: dict[str, deque[str]] = defaultdict(lambda: deque(maxlen=25))
        self.failed: tuple[str, str] | None = None
        self.exporting = False

    def feed(self, line: str) -> None:
        if m := _STEP.match(line):
            vertex, stage, number, total, what = m.groups()
            if vertex not in self.steps:
                self.steps[vertex] = f"step {number}/{total}: {what}"
                self.stages[vertex] = "runner" if stage == "runner" else "environment"
            return
        if m := _DONE.match(line):
            vertex, seconds, cached = m.groups()
            if vertex in self.steps and vertex not in self.shown:
                self._header(vertex, " (cached)" if cached else f" ({float(seconds):.1f} s)")
            elif vertex in self.steps and seconds and float(seconds) >= 1:
                step = self.steps[vertex].split(": ", 1)[0]
                self.on_line(f"build {step} ({self.stages[vertex]}) done in {float(seconds):.1f} s")
            return
        if m := _ERROR.match(line):
            self.failed = self.failed or (m.group(1), m.group(2))
            return
        if line.startswith("#") and " exporting to image" in line and not self.exporting:
            self.exporting = True
            self.on_line("build exporting the image")
            return
        m = _LOG.match(line)
        if m is None:
            return
        vertex, text = m.groups()
        self.logs[vertex].append(text)
        if vertex not in self.steps:
            return
        shown = text.strip()
        if shown.startswith(_PIP_SHOWN):
            if vertex not in self.shown:
                self._header(vertex, "")
            shown = shown if len(shown) <= _WIDTH else shown[: _WIDTH - 5] + " ..."
            self.on_line(f"  {self.stages[vertex]} | {shown}")

    def _header(self, vertex: str, suffix: str) -> None:
        self.shown.add(vertex)
        step, what = self.steps[vertex].split(": ", 1)
        self.on_line(f"build {step} ({self.stages[vertex]}): {what[:100]}{suffix}")


def docker_build(
    cli: str,
    context: Path,
    *,
    secrets: dict[str, str],
    labels: dict[str, str],
    on_line: Callable[[str], None],
    offline: bool = False,
    timeout_s: float = 3600,
) -> str:
    """Build ``context`` (its ``Dockerfile``); returns the image id. Raises :class:`ImageError` naming the
    failing step and its last log lines.
    """
    fd, iidfile = tempfile.mkstemp(prefix=".iid-")
    os.close(fd)
    command = [cli, "build", "--progress=plain", "--iidfile", iidfile]
    if offline:
        command.append("--network=none")  # hermetic: a step that reaches for the network fails
    for sid, src in sorted(secrets.items()):
        command += ["--secret", f"id={sid},src={src}"]
    for key, value in sorted(labels.items()):
        command += ["--label", f"{key}={value}"]
    command.append(str(context))
    env = {**os.environ, "DOCKER_BUILDKIT": "1", "BUILDKIT_PROGRESS": "plain"}
    log = _BuildLog(on_line)
    tail: deque[str] = deque(maxlen=25)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            tail.append(line)
            log.feed(line)
        code = proc.wait(timeout=timeout_s)
        image_id = Path(iidfile).read_text().strip() if os.path.exists(iidfile) else ""
    finally:
        Path(iidfile).unlink(missing_ok=True)
    if code == 0 and image_id:
        return image_id
    if log.failed:
        vertex, message = log.failed
        where = log.steps.get(vertex, f"step #{vertex}")
        last = "\n".join(f"    {x}" for x in list(log.logs[vertex])[-15:])
        raise ImageError(f"image build failed at {where}: {message}\n  last log lines:\n{last}", subject=str(context))
    last = "\n".join(f"    {x}" for x in list(tail)[-15:])
    raise ImageError(
        f"image build failed (docker build exited {code})\n  last log lines:\n{last}", subject=str(context)
    )


def tag_with_labels(cli: str, image_id: str, tag: str, labels: dict[str, str], temp_tag: str) -> None:
    """Give ``image_id`` its final ``tag`` with ``labels`` added (a metadata-only build, no new layer)."""
    from .docker_engine import client

    engine = client()
    engine.images.get(image_id).tag(temp_tag)
    try:
        command = [cli, "build", "--progress=plain", "-t", tag]
        for key, value in sorted(labels.items()):
            command += ["--label", f"{key}={value}"]
        command.append("-")
        result = subprocess.run(
            command,
            input=f"FROM {temp_tag}\n",
            check=False,
            capture_output=True,
            text=True,
            env={**os.environ, "DOCKER_BUILDKIT": "1"},
            timeout=600,
        )
        if result.returncode != 0:
            last = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise ImageError(f"tagging {tag} failed: {' / '.join(last)}", subject=tag)
    finally:
        with contextlib.suppress(Exception):  # the temporary tag may already be gone; nothing else to undo
            engine.images.remove(temp_tag, noprune=True)
