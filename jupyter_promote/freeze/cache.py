"""Introspections kept while a kernel's environment is unchanged: a freeze costs a few ``stat`` calls, not an
interpreter start, until something is installed or removed.

An entry is found by the interpreter's command, the recorded variables' values, the pip variables, the
host and its boot (hardware is in the lock), and used only while the *fingerprint* of the paths the
introspection names (the interpreter, ``pyvenv.cfg``, every ``sys.path`` folder with its ``*.dist-info``
and ``*.pth`` entries, pip's configuration files) is the one taken as it ran. A ``pip install`` or
``uninstall`` changes a folder's listing and so the fingerprint. Entries hold the introspection document
only (credentials already stripped); the variables' values reach the key as a hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from .introspect import PIP_ENV, fingerprint
from .kernels import Interpreter

#: Bumped when the introspection document or the fingerprint changes shape.
CACHE_VERSION = 1
#: Variables that change what the introspection reads besides the allow-listed ones.
_READ_VARIABLES = (*PIP_ENV, "PIP_CONFIG_FILE", "XDG_CONFIG_DIRS", "HOME")


#: Set (to anything but 0) to introspect every time.
NO_CACHE_VARIABLE = "JUPYTER_PROMOTE_NO_FREEZE_CACHE"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/jupyter-promote/freeze`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jupyter-promote" / "freeze"


def _boot_id() -> str:
    """This boot of the machine: Linux's boot id, else (macOS) its boot time through psutil."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        pass
    import psutil

    try:
        return f"booted {psutil.boot_time():.0f}"
    except (OSError, psutil.Error):
        return ""


def _key(interpreter: Interpreter, env_allowlist: tuple[str, ...]) -> str:
    digest = hashlib.sha256(f"v{CACHE_VERSION}\0{socket.gethostname()}\0{_boot_id()}\0".encode())
    for part in (*interpreter.command, os.path.realpath(interpreter.command[0])):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for name in (*sorted(env_allowlist), "\0", *_READ_VARIABLES):
        digest.update(f"{name}={os.environ.get(name, '')}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:40]


def load(interpreter: Interpreter, env_allowlist: tuple[str, ...]) -> dict[str, Any] | None:
    """The kept introspection of ``interpreter`` when its environment is unchanged since; else None (always
    with ``JUPYTER_PROMOTE_NO_FREEZE_CACHE=1``: a kernel started through a wrapper that changes its environment
    in ways no file shows, such as a site's module system)."""
    if os.environ.get(NO_CACHE_VARIABLE, "") not in ("", "0"):
        return None
    try:
        entry = json.loads((cache_dir() / f"{_key(interpreter, env_allowlist)}.json").read_text(encoding="utf-8"))
        paths, doc = entry["doc"]["fingerprint"]["paths"], entry["doc"]
        if fingerprint(paths) != doc["fingerprint"]["sha256"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return doc if isinstance(doc, dict) else None


def store(interpreter: Interpreter, env_allowlist: tuple[str, ...], doc: dict[str, Any]) -> None:
    """Keep ``doc`` for :func:`load`; a cache that cannot be written is no error (the next freeze introspects)."""
    if "fingerprint" not in doc:
        return
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".entry-", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": CACHE_VERSION, "doc": doc}, f, sort_keys=True)
        os.replace(tmp, directory / f"{_key(interpreter, env_allowlist)}.json")
    except OSError:
        Path(tmp).unlink(missing_ok=True)
