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

#: ``#7 [3/8] RUN python3 -m venv ...`` in BuildKit's plain progress output
_STEP = re.compile(r"^#(\d+) \[(?:[^\]]*?\s)?(\d+)/(\d+)\] (.*)$")
_DONE = re.compile(r"^#(\d+) (DONE [\d.]+s|CACHED)$")
_ERROR = re.compile(r"^#(\d+) ERROR: (.*)$")


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
    steps: dict[str, str] = {}
    logs: dict[str, deque[str]] = defaultdict(lambda: deque(maxlen=25))
    failed: tuple[str, str] | None = None
    tail: deque[str] = deque(maxlen=25)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            tail.append(line)
            if m := _STEP.match(line):
                vertex, number, total, what = m.groups()
                steps[vertex] = f"step {number}/{total}: {what}"
                on_line(f"build {steps[vertex][:110]}")
            elif _DONE.match(line):
                pass
            elif m := _ERROR.match(line):
                failed = failed or (m.group(1), m.group(2))
            elif line.startswith("#") and " " in line:
                vertex = line[1:].split(" ", 1)[0]
                logs[vertex].append(line.split(" ", 2)[-1] if re.match(r"^#\d+ [\d.]+ ", line) else line)
        code = proc.wait(timeout=timeout_s)
        image_id = Path(iidfile).read_text().strip() if os.path.exists(iidfile) else ""
    finally:
        Path(iidfile).unlink(missing_ok=True)
    if code == 0 and image_id:
        return image_id
    if failed:
        vertex, message = failed
        where = steps.get(vertex, f"step #{vertex}")
        last = "\n".join(f"    {x}" for x in list(logs[vertex])[-15:])
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
