"""How install steps reach packages: BuildKit secrets (CA bundle, pip.conf) or a hermetic wheelhouse.

Secrets live in a private temporary directory outside the build context and are mounted only for the
install steps; no layer ever holds them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..errors import ImageError, UsageError
from ..freeze.kernels import Interpreter

CA_BUNDLE_VARIABLES = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
#: pip settings that say where packages come from; everything else (cert, constraint, cache) stays out
_PIP_KEYS = ("index-url", "extra-index-url", "trusted-host", "find-links", "timeout", "default-timeout", "retries")


def ca_bundle(explicit: str | None) -> str | None:
    """``--ca-bundle``, else the first bundle named by PIP_CERT, REQUESTS_CA_BUNDLE or SSL_CERT_FILE."""
    if explicit:
        if not os.path.isfile(explicit):
            raise UsageError(f"--ca-bundle {explicit}: no such file", subject=explicit)
        return os.path.abspath(explicit)
    for name in CA_BUNDLE_VARIABLES:
        value = os.environ.get(name)
        if value and os.path.isfile(value):
            return value
    return None


def _reachable_from_a_build(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def _pip_config(interpreter: Interpreter) -> list[tuple[str, str]]:
    """``pip config list`` of ``interpreter`` (its config files and PIP_* variables): (key, value) pairs."""
    result = subprocess.run(
        [*interpreter.command, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
    )
    pairs = []
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs.append((key.rsplit(".", 1)[-1], value.strip().strip("'\"")))
    return pairs


def pip_cert(interpreter: Interpreter) -> str | None:
    """The CA bundle pip is configured with for ``interpreter`` (``cert`` in a pip.conf), when it exists.

    A user whose pip trusts a site's intercepting proxy through ``/etc/pip.conf`` has no PIP_CERT in their
    environment; the image build needs the same bundle.
    """
    for key, value in _pip_config(interpreter):
        if key == "cert" and os.path.isfile(value):
            return value
    return None


def pip_settings(interpreter: Interpreter) -> dict[str, list[str]]:
    """The index settings pip uses for ``interpreter`` (config files and PIP_* variables), URLs only."""
    settings: dict[str, list[str]] = {}
    for name, value in _pip_config(interpreter):
        if name not in _PIP_KEYS:
            continue
        values = value.split()
        if name in ("index-url", "extra-index-url", "find-links"):
            values = [v for v in values if _reachable_from_a_build(v)]
        for v in values:
            if v not in settings.setdefault(name, []):
                settings[name].append(v)
    return {k: v for k, v in settings.items() if v}


def render_pip_conf(settings: dict[str, list[str]], lock: dict[str, Any]) -> str:
    """A pip.conf for the install steps: the host's index settings plus the lock's inferred indexes."""
    settings = {k: list(v) for k, v in settings.items()}
    for pkg in lock["packages"]:
        index = pkg["source"].get("index")
        if index and index not in settings.get("extra-index-url", []):
            settings.setdefault("extra-index-url", []).append(index)
    if not settings:
        return ""
    lines = ["[global]"]
    for key in sorted(settings):
        lines.append(f"{key} = " + "\n    ".join(settings[key]))
    return "\n".join(lines) + "\n"


def write_secrets(directory: Path, ca: str | None, pip_conf: str) -> dict[str, str]:
    """Secret files (mode 0600) in ``directory``: id -> path."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    secrets = {}
    if ca:
        path = directory / "ca.pem"
        shutil.copyfile(ca, path)
        secrets["ca"] = str(path)
    if pip_conf:
        conf = directory / "pip.conf"
        conf.write_text(pip_conf)
        secrets["pipconf"] = str(conf)
    for secret in secrets.values():
        os.chmod(secret, 0o600)
    return secrets


def fill_wheelhouse(interpreter: Interpreter, requirements: list[Path], cache: Path, out: Path) -> None:
    """Wheels for every pin, for the kernel's own platform, downloaded (or built) on the host into ``out``.

    ``cache`` keeps them between builds; pip looks there first. Runs with the kernel's interpreter so
    the wheels' tags are the kernel's (the image's Python has the same major.minor and platform).
    """
    cache.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    for req in requirements:
        command = [
            *interpreter.command,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--prefer-binary",
            "--quiet",
            "--find-links",
            str(cache),
            "-w",
            str(out),
            "-r",
            str(req),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
        if result.returncode != 0:
            last = [x for x in result.stderr.strip().splitlines() if x.startswith("ERROR")][-1:] or ["pip wheel failed"]
            raise ImageError(f"--wheelhouse: collecting wheels for {req.name} failed: {last[0]}", subject=str(req))
    for wheel in out.glob("*.whl"):
        kept = cache / wheel.name
        if not kept.exists():
            try:
                os.link(wheel, kept)
            except OSError:
                shutil.copy2(wheel, kept)
