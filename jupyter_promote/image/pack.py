"""Images from the files the kernel already has: the pack path, chosen when it applies.

A cold rebuild downloads and installs every package again inside the container. The kernel's environment
is already on disk, exactly as the notebook used it, so when the base image can run those files (same OS,
CPU architecture, Python major.minor, a new enough C library: :mod:`.pack_platform`) they are packed, as
conda-pack and venv-pack ship environments to clusters: every file each distribution's ``RECORD`` lists,
relocated from the kernel's prefix to the image's, in deterministic tars (:mod:`.pack_layer`), one per large
distribution and one for the rest, so a one-package change rebuilds one layer. The runner's own closure is
packed the same way from this process's environment, so a packed build needs no index and no network.

Whatever cannot be packed (no ``RECORD``, an editable install whose files live elsewhere, a conda prefix, a
platform the base image does not have; when the files are read: a file that differs from its ``RECORD``
or embeds the kernel's prefix) is a :class:`PackRefused` whose reason the builder reports as it falls back
to the rebuild.
"""

from __future__ import annotations

import csv
import hashlib
import posixpath
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..freeze.lock import canonical_name
from .pack_platform import platform_mismatch, wheel_mismatch

#: A distribution whose files add up to this many bytes gets a layer of its own (torch, the nvidia-* ones).
OWN_LAYER_BYTES = 64 << 20


class PackRefused(Exception):
    """The environment cannot be packed; ``reason`` says why, in words for the build log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PackFile:
    """One installed file: where it is here, where it goes in the image, and what its RECORD says."""

    source: str
    target: str  # inside the image, absolute
    record_hash: str | None  # "sha256=<urlsafe base64>" from RECORD; None for RECORD itself
    dist: str


@dataclass(frozen=True)
class PackGroup:
    """The files of one layer: a large distribution, the rest of the environment, or the runner."""

    name: str
    key: str  # sha256 over target prefix, names, versions and RECORDs: the same files, the same key
    source_prefix: str
    target_prefix: str
    files: tuple[PackFile, ...]

    @property
    def tar(self) -> str:
        """The tar's path in the build context."""
        return f"pack/{self.name}-{self.key[:16]}.tar"


@dataclass(frozen=True)
class PackPlan:
    """The layers of a packed image and why packing applies."""

    groups: tuple[PackGroup, ...]
    reason: str


def site_packages(prefix: str, python_version: str) -> str:
    """Where a POSIX venv or prefix keeps its distributions."""
    return f"{prefix.rstrip('/')}/lib/python{'.'.join(python_version.split('.')[:2])}/site-packages"


def _dist_infos(site: Path) -> dict[tuple[str, str], Path]:
    """(canonical name, version) -> its ``.dist-info`` folder in ``site``, from each METADATA's header."""
    found: dict[tuple[str, str], Path] = {}
    for folder in sorted(site.glob("*.dist-info")):
        fields: dict[str, str] = {}
        try:
            with open(folder / "METADATA", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    if key in ("Name", "Version") and key not in fields:
                        fields[key] = value.strip()
        except OSError:
            continue
        if "Name" in fields and "Version" in fields:
            found[(canonical_name(fields["Name"]), fields["Version"])] = folder
    return found


def _record(dist: str, folder: Path, site: str, prefix: str, target_prefix: str) -> tuple[list[PackFile], int]:
    """The files ``folder``'s RECORD lists (relocated), and their size in bytes."""
    record = folder / "RECORD"
    if not record.is_file():
        raise PackRefused(f"{dist}: its {folder.name} has no RECORD, so its files are not known")
    files, size = [], 0
    with open(record, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if not row:
                continue
            path = Path(site, row[0]).as_posix() if not row[0].startswith("/") else row[0]
            source = posixpath.normpath(path)
            if not (source + "/").startswith(prefix.rstrip("/") + "/"):
                raise PackRefused(f"{dist}: {row[0]} is installed outside the kernel's prefix {prefix}")
            files.append(
                PackFile(
                    source,
                    target_prefix + source[len(prefix.rstrip("/")) :],
                    row[1] if len(row) > 1 and row[1] else None,
                    dist,
                )
            )
            size += int(row[2]) if len(row) > 2 and row[2].isdigit() else 0
    return files, size


def _wheel_tags(folder: Path) -> list[str]:
    try:
        text = (folder / "WHEEL").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]


def collect(
    name: str,
    pins: list[tuple[str, str]],
    prefix: str,
    python_version: str,
    target_prefix: str,
    check_tags: Callable[[str, list[str]], str | None] | None = None,
) -> list[PackGroup]:
    """The layers of the distributions ``pins`` ((name, version) pairs) installed in ``prefix``: one per
    distribution of :data:`OWN_LAYER_BYTES` or more, the rest in a group called ``name``."""
    site = site_packages(prefix, python_version)
    if _uses_system_site(prefix):
        raise PackRefused(f"{prefix} also uses the system's site-packages (include-system-site-packages = true)")
    infos = _dist_infos(Path(site))
    own: list[tuple[str, list[PackFile], bytes]] = []
    rest: list[PackFile] = []
    rest_digest = hashlib.sha256()
    for dist_name, version in sorted(pins, key=lambda p: canonical_name(p[0])):
        label = f"{dist_name}=={version}"
        folder = infos.get((canonical_name(dist_name), version))
        if folder is None:
            raise PackRefused(f"{label}: not installed in {site} (the environment changed since it was frozen)")
        if check_tags is not None and (why := check_tags(label, _wheel_tags(folder))):
            raise PackRefused(why)
        files, size = _record(label, folder, site, prefix, target_prefix)
        entry = f"{label}\n".encode() + (folder / "RECORD").read_bytes()
        if size >= OWN_LAYER_BYTES:
            own.append((canonical_name(dist_name), files, entry))
        else:
            rest += files
            rest_digest.update(entry)
    groups = [
        PackGroup(dist, _key(target_prefix, entry), prefix, target_prefix, tuple(files)) for dist, files, entry in own
    ]
    rest_digest.update(target_prefix.encode())
    groups.append(PackGroup(name, rest_digest.hexdigest(), prefix, target_prefix, tuple(rest)))
    return groups


def _uses_system_site(prefix: str) -> bool:
    """Whether the venv at ``prefix`` sees its base interpreter's packages: some are then not in the venv."""
    try:
        text = (Path(prefix) / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(
        key.strip().lower() == "include-system-site-packages" and value.strip().lower() == "true"
        for key, _, value in (line.partition("=") for line in text.splitlines())
    )


def _key(target_prefix: str, entry: bytes) -> str:
    return hashlib.sha256(entry + target_prefix.encode()).hexdigest()


def runner_pins(requirements: str) -> list[tuple[str, str]]:
    """The ``name==version`` pins of the runner's requirements."""
    pins = [line.split("==", 1) for line in requirements.splitlines() if "==" in line and not line.startswith("#")]
    return [(n.strip(), v.strip()) for n, v in pins]


def choose(lock: dict[str, Any], base: dict[str, Any], runner_requirements: str) -> PackPlan:
    """The pack of ``lock``'s environment (and this process's runner) for a base image whose platform is
    ``base``; raises :class:`PackRefused` when the files cannot run there or cannot be listed."""
    from .recipe import ENV_PREFIX, RUNNER_PREFIX

    origin = lock.get("origin", {})
    if origin.get("conda"):
        raise PackRefused(
            "the kernel is a conda prefix (conda-meta/): packing one is designed (README, 'Images from the "
            "kernel's own files') but not built yet"
        )
    local = [f"{p['name']}=={p['version']}" for p in lock["packages"] if p["source"].get("kind") == "editable"]
    if local:
        raise PackRefused(f"{', '.join(local)}: editable install(s), whose files live outside the environment")
    if why := platform_mismatch(lock, base):
        raise PackRefused(why)
    python = lock["python"]["version"]

    def tags(label: str, wheel_tags: list[str]) -> str | None:
        return wheel_mismatch(label, wheel_tags, lock, base)

    pins = [(p["name"], p["version"]) for p in lock["packages"]]
    groups = collect("env", pins, origin.get("prefix") or "", python, ENV_PREFIX, tags)
    host = _host_lock()
    if why := platform_mismatch(host, base):
        raise PackRefused(f"the runner (this process's environment): {why}")

    def host_tags(label: str, wheel_tags: list[str]) -> str | None:
        return wheel_mismatch(label, wheel_tags, host, base)

    version = host["python"]["version"]
    runner = collect("runner", runner_pins(runner_requirements), sys.prefix, version, RUNNER_PREFIX, host_tags)
    libc = base.get("libc") or {}
    reason = (
        f"the base image runs the kernel's files ({base.get('machine')}, {libc.get('name')} {libc.get('version')}, "
        f"Python {base.get('python')}): {sum(len(g.files) for g in groups)} files packed from {origin.get('prefix')}"
    )
    big = [g for g in groups if g.name != "env"]
    return PackPlan((*runner, *big, *[g for g in groups if g.name == "env"]), reason)


def _host_lock() -> dict[str, Any]:
    """This process's interpreter, described as a lock describes the kernel's (the runner's files come from here)."""
    import platform

    libc = platform.libc_ver()
    return {
        "python": {"version": platform.python_version(), "implementation": sys.implementation.name},
        "platform": {
            "sys_platform": sys.platform,
            "machine": platform.machine(),
            "libc": {"name": libc[0] or None, "version": libc[1] or None},
        },
    }
