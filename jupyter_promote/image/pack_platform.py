"""Can files installed here run in the base image? The platform half of the pack decision.

Installed files run unchanged in an image when the image has the kernel's OS, CPU architecture, Python
major.minor and implementation, and a C library at least as new as the distributions' wheels need: a
``manylinux_2_28_x86_64`` wheel needs glibc 2.28, one built on this machine (``linux_x86_64``) the kernel's
own glibc. The base image is asked once per image id (one container start, cached in the cache folder).
"""

from __future__ import annotations

import re
from typing import Any

#: Legacy manylinux names and the glibc each needs (PEP 513, 571, 599).
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(.+)$")
_MUSLLINUX = re.compile(r"^musllinux_(\d+)_(\d+)_(.+)$")


def _version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in (text or "").split(".")[:2])
    except ValueError:
        return ()


def _needs(platform_tag: str, kernel_glibc: tuple[int, ...]) -> tuple[str, str, tuple[int, ...]] | None:
    """(libc, architecture, least libc version) one platform tag needs; None for ``any``."""
    if platform_tag == "any":
        return None
    if m := _MANYLINUX.match(platform_tag):
        return "glibc", m.group(3), (int(m.group(1)), int(m.group(2)))
    if m := _MUSLLINUX.match(platform_tag):
        return "musl", m.group(3), (int(m.group(1)), int(m.group(2)))
    legacy, _, arch = platform_tag.partition("_")
    if legacy in _LEGACY:
        return "glibc", arch, _LEGACY[legacy]
    if platform_tag.startswith("linux_"):  # built on the kernel's machine: its own glibc
        return "glibc", platform_tag.removeprefix("linux_"), kernel_glibc
    return "other", platform_tag, ()


def _fits(needs: tuple[str, str, tuple[int, ...]], base: dict[str, Any]) -> bool:
    libc, arch, least = needs
    base_libc = "glibc" if (base.get("libc") or {}).get("name") == "glibc" else "musl"
    have = _version((base.get("libc") or {}).get("version"))
    return libc == base_libc and arch == base.get("machine") and (libc == "musl" or have >= least)


def wheel_mismatch(name: str, tags: list[str], lock: dict[str, Any], base: dict[str, Any]) -> str | None:
    """Why distribution ``name``'s wheel tags (``cp311-cp311-manylinux_2_17_x86_64``) do not run on ``base``;
    None when one of them does. A wheel's compressed tag set fits when any one of its platforms fits."""
    kernel_glibc = _version((lock.get("platform", {}).get("libc") or {}).get("version"))
    platforms = {p for tag in tags for p in tag.split("-")[-1].split(".")}
    needs = [n for p in sorted(platforms) if (n := _needs(p, kernel_glibc)) is not None]
    if not needs or any(_fits(n, base) for n in needs):
        return None
    libc, arch, least = min(needs, key=lambda n: n[2])
    have = f"{(base.get('libc') or {}).get('name') or 'no libc'} {(base.get('libc') or {}).get('version') or ''}"
    wanted = f"{libc} {'.'.join(map(str, least))}".strip()
    return f"{name}'s wheel is for {arch} with {wanted}; the base image is {base.get('machine')} with {have.strip()}"


def platform_mismatch(lock: dict[str, Any], base: dict[str, Any]) -> str | None:
    """Why the kernel's interpreter and the base image's differ in a way installed files notice; None if not."""
    kernel = lock.get("platform", {})
    python = lock["python"]
    if kernel.get("sys_platform") != base.get("sys_platform"):
        return f"the kernel runs on {kernel.get('sys_platform')}, the base image on {base.get('sys_platform')}"
    if kernel.get("machine") != base.get("machine"):
        return f"the kernel runs on {kernel.get('machine')}, the base image on {base.get('machine')}"
    if str(python.get("implementation", "")).lower() != str(base.get("implementation", "")).lower():
        return f"the kernel's Python is {python.get('implementation')}, the base image's {base.get('implementation')}"
    if python["version"].split(".")[:2] != str(base.get("python", "")).split(".")[:2]:
        return f"the kernel has Python {python['version']}, the base image {base.get('python')}"
    kernel_libc = kernel.get("libc") or {}
    base_libc = base.get("libc") or {}
    if kernel_libc.get("name") != base_libc.get("name"):
        return f"the kernel's C library is {kernel_libc.get('name')}, the base image's {base_libc.get('name')}"
    return None
