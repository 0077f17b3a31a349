"""Images from the files the kernel already has: the pack path, chosen when it applies.

A cold rebuild downloads and installs every package again inside the container. The kernel's environment
is already on disk, exactly as the notebook used it, so when the base image can run those files (same OS,
CPU architecture, Python major.minor, a new enough C library: :mod:`.pack_platform`) they are packed, as
conda-pack and venv-pack ship environments to clusters: every file each distribution's ``RECORD`` lists,
relocated from the kernel's prefix to the image's, in deterministic tars (:mod:`.pack_layer`): one per large
or mid-size distribution and a few shared by the rest, chosen by a hash of each one's name, so a one-package
change rewrites one small layer (:func:`_layers`). The runner's own closure is
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

#: A distribution whose files add up to this many bytes gets a layer of its own, added first (torch, the
#: nvidia-* ones); one of MID_LAYER_BYTES or more gets one too, after those (numpy, debugpy); the others share
#: BUCKETS layers, chosen by a hash of their name. At most MAX_OWN_LAYERS own layers per prefix (the largest):
#: with the buckets, the runner's and the base image's, an image stays far under Docker's 127 layers.
OWN_LAYER_BYTES = 64 << 20
MID_LAYER_BYTES = 4 << 20
MAX_OWN_LAYERS = 40
BUCKETS = 8


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
    root, strip = prefix.rstrip("/") + "/", len(prefix.rstrip("/"))
    with open(record, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if not row:
                continue
            # strings, not Paths, and normpath only where needed: a RECORD has thousands of rows, read at every plan
            path = row[0] if row[0].startswith("/") else f"{site}/{row[0]}"
            source = posixpath.normpath(path) if "/." in path or "//" in path else path
            if not source.startswith(root):
                raise PackRefused(f"{dist}: {row[0]} is installed outside the kernel's prefix {prefix}")
            files.append(
                PackFile(
                    source,
                    target_prefix + source[strip:],
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
    buckets: int = BUCKETS,
) -> list[PackGroup]:
    """The layers of the distributions ``pins`` ((name, version) pairs) installed in ``prefix``, in the
    order they are added (:func:`_layers`); the shared ones are called ``name.<bucket>``."""
    site = site_packages(prefix, python_version)
    if _uses_system_site(prefix):
        raise PackRefused(f"{prefix} also uses the system's site-packages (include-system-site-packages = true)")
    infos = _dist_infos(Path(site))
    dists: list[tuple[str, list[PackFile], int, bytes]] = []
    for dist_name, version in sorted(pins, key=lambda p: canonical_name(p[0])):
        label = f"{dist_name}=={version}"
        folder = infos.get((canonical_name(dist_name), version))
        if folder is None:
            raise PackRefused(f"{label}: not installed in {site} (the environment changed since it was frozen)")
        if check_tags is not None and (why := check_tags(label, _wheel_tags(folder))):
            raise PackRefused(why)
        files, size = _record(label, folder, site, prefix, target_prefix)
        dists.append((canonical_name(dist_name), files, size, f"{label}\n".encode() + (folder / "RECORD").read_bytes()))
    return [
        PackGroup(group, _key(target_prefix, b"".join(e for _, _, _, e in members)), prefix, target_prefix, packed)
        for group, members in _layers(name, dists, buckets)
        if (packed := tuple(f for _, fs, _, _ in members for f in fs))
    ]


def _layers(
    name: str, dists: list[tuple[str, list[PackFile], int, bytes]], buckets: int
) -> list[tuple[str, list[tuple[str, list[PackFile], int, bytes]]]]:
    """(layer name, its distributions), in the order they are added, most expensive to redo first: each
    distribution of :data:`OWN_LAYER_BYTES` or more, then each of :data:`MID_LAYER_BYTES` or more (as many as
    :data:`MAX_OWN_LAYERS` allows, the largest), then the rest in ``buckets`` by a hash of the name.

    A one-package change so rewrites one small layer (and redoes the small ones after it: Docker 20.10's
    builder has no ``COPY --link``); a distribution stays in its layer as others come and go."""
    sized = sorted(dists, key=lambda d: (-d[2], d[0]))
    own = [d for d in sized if d[2] >= MID_LAYER_BYTES][:MAX_OWN_LAYERS]
    named = {d[0] for d in own}
    shared: dict[int, list[tuple[str, list[PackFile], int, bytes]]] = {}
    for dist in dists:
        if dist[0] not in named:
            shared.setdefault(int(hashlib.sha256(dist[0].encode()).hexdigest(), 16) % buckets, []).append(dist)
    big = sorted((d for d in own if d[2] >= OWN_LAYER_BYTES), key=lambda d: d[0])
    mid = sorted((d for d in own if d[2] < OWN_LAYER_BYTES), key=lambda d: d[0])
    return [
        *[(d[0], [d]) for d in (*big, *mid)],
        *[(f"{name}.{i}" if buckets > 1 else name, shared[i]) for i in sorted(shared)],
    ]


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
    pins = runner_pins(runner_requirements)
    runner = collect("runner", pins, sys.prefix, version, RUNNER_PREFIX, host_tags, buckets=1)  # changes seldom
    libc = base.get("libc") or {}
    reason = (
        f"the base image runs the kernel's files ({base.get('machine')}, {libc.get('name')} {libc.get('version')}, "
        f"Python {base.get('python')}): {sum(len(g.files) for g in groups)} files packed from {origin.get('prefix')}"
    )
    return PackPlan((*runner, *groups), reason)


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
