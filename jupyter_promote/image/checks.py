"""What is checked before any build starts, so that a build that cannot succeed is refused in one line.

The base image's Python must have the kernel's major.minor and meet every package's ``Requires-Python``;
every package must be on an index the build can reach (or come as a wheel from this machine). Each refusal
is an :class:`~jupyter_promote.errors.ImageError` naming the fix. The base image's platform (its Python, C
library, architecture) is asked once per image id (one container start) and kept in the cache folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ImageError
from .verify import run_once

#: What the base image is asked: its Python and its platform, as the freeze's introspection records them.
_PROBE = (
    "import json, platform, sys; libc = platform.libc_ver(); print(json.dumps({"
    "'python': platform.python_version(), 'implementation': sys.implementation.name, "
    "'sys_platform': sys.platform, 'machine': platform.machine(), "
    "'libc': {'name': libc[0] or None, 'version': libc[1] or None}}))"
)


def base_platform(base: str, image_id: str, cache_dir: str) -> dict[str, Any]:
    """The platform of the image ``base`` (whose id is ``image_id``), asked once and kept in ``cache_dir``."""
    known = Path(cache_dir) / "base-platforms.json"
    try:
        platforms: dict[str, Any] = json.loads(known.read_text())
    except (OSError, ValueError):
        platforms = {}
    if isinstance(platforms.get(image_id), dict):
        return dict(platforms[image_id])
    found: dict[str, Any] = json.loads(run_once(base, ["python3", "-c", _PROBE], role="probe"))
    with contextlib.suppress(OSError):
        known.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".base-platforms-", dir=known.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({**platforms, image_id: found}, f)
        os.replace(tmp, known)
    return found


def base_python(base: str, image_id: str, cache_dir: str) -> str:
    """The Python version of the image ``base`` (whose id is ``image_id``): the platform probe's, one probe."""
    return str(base_platform(base, image_id, cache_dir)["python"])


def refuse_unbuildable(lock: dict[str, Any], base_image: str, image_python: str, *, wheelhouse: bool) -> None:
    """Every check before a build of ``lock`` on ``base_image`` (whose Python is ``image_python``)."""
    kernel_python = lock["python"]["version"]
    if image_python.split(".")[:2] != kernel_python.split(".")[:2]:
        raise ImageError(
            f"--base-image {base_image}: has Python {image_python}, the kernel has {kernel_python} "
            "(major.minor must match)",
            subject=base_image,
        )
    refuse_conda(lock)
    if not wheelhouse:
        refuse_unreachable(lock)
    refuse_python_mismatch(lock, base_image, image_python)


def refuse_conda(lock: dict[str, Any]) -> None:
    """Packages conda installed: no index has them as pip knows them, so a rebuild cannot reinstall them."""
    conda = [f"{p['name']}=={p['version']}" for p in lock["packages"] if p["source"].get("kind") == "conda"]
    if conda:
        raise ImageError(
            f"{', '.join(conda[:5])}{' ...' if len(conda) > 5 else ''}: installed by conda, which a rebuild from an "
            "index cannot reinstall; the pack path (the kernel's prefix packed into the image, "
            "jupyter_promote.image.pack) is the way for conda environments and does not take conda prefixes yet "
            "(README: 'Images from the kernel's own files')",
            subject=conda[0],
        )


def refuse_unreachable(lock: dict[str, Any]) -> None:
    """Packages no index the build can reach has (a local version label whose index was not recorded, and
    no wheel of it found on this machine), named with the fix."""
    missing = [
        f"{p['name']}=={p['version']}"
        for p in lock["packages"]
        if p["source"]["kind"] == "index"
        and "index" in p["source"]
        and p["source"]["index"] is None
        and "wheel" not in p["source"]
    ]
    if missing:
        raise ImageError(
            f"{', '.join(missing)}: on no index the build can reach and no wheel of it on this machine's find-links "
            "folders; build with --wheelhouse (wheels fetched on this machine) or install them from an index",
            subject=missing[0],
        )


def refuse_python_mismatch(lock: dict[str, Any], base_image: str, image_python: str) -> None:
    """Packages whose ``Requires-Python`` the base image's Python does not meet."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    refused = []
    for pkg in lock["packages"]:
        try:
            if pkg.get("requires_python") and not SpecifierSet(pkg["requires_python"]).contains(image_python):
                refused.append(f"{pkg['name']}=={pkg['version']} requires Python {pkg['requires_python']}")
        except InvalidSpecifier:
            continue  # pip ignores a malformed Requires-Python too
    if refused:
        kernel = lock["python"]["version"]
        raise ImageError(
            f"--base-image {base_image}: has Python {image_python}, but {'; '.join(refused)}; use a base image with "
            f"the kernel's Python {kernel} (e.g. python:{kernel}-slim)",
            subject=base_image,
        )
