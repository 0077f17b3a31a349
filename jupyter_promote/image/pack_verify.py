"""The file-by-file check of a packed image: every packed file, hashed inside the image, against the pack.

The pack's manifest holds each file's sha256 as read on this machine, which its ``RECORD`` hash vouched
for; the image's interpreter hashes every file under each prefix's ``site-packages`` and every other packed
file, with no network. The image's site-packages must hold exactly the packed files, byte for byte: that
is, byte-identical to the kernel's, but for files no distribution owns (:func:`unowned`), which are named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .pack import site_packages
from .recipe import ENV_PREFIX, RUNNER_PREFIX
from .verify import run_once

#: Hashes every regular file under the site-packages given and every other path given; prints JSON.
_WALK = """
import hashlib, json, os, sys
def digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()
out = {}
roots, others = sys.argv[1].split(':'), json.loads(sys.argv[2])
for root in roots:
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out[path] = digest(path)
for path in others:
    out[path] = digest(path) if os.path.isfile(path) else None
print(json.dumps(out))
"""
#: What the image adds to a site-packages beside the pack: the runner's path to the jupyter_promote source.
_ADDED = frozenset({f"{RUNNER_PREFIX}/lib/python{{}}/site-packages/jupyter_promote.pth"})


def check_pack(image: str, manifest: dict[str, dict[str, Any]], python_version: str) -> dict[str, Any]:
    """Hash the packed files inside ``image`` and compare them with ``manifest``; the verdict, with ``ok``."""
    major_minor = ".".join(python_version.split(".")[:2])
    roots = [f"{prefix}/lib/python{major_minor}/site-packages" for prefix in (ENV_PREFIX, RUNNER_PREFIX)]
    others = sorted(p for p in manifest if not any(p.startswith(r + "/") for r in roots))
    command = [f"{RUNNER_PREFIX}/bin/python", "-I", "-c", _WALK, ":".join(roots), json.dumps(others)]
    seen: dict[str, str | None] = json.loads(run_once(image, command, role="verify"))
    added = {a.format(major_minor) for a in _ADDED}
    missing = sorted(p for p in manifest if seen.get(p) is None)
    different = sorted(p for p in manifest if seen.get(p) is not None and seen[p] != manifest[p]["sha256"])
    extra = sorted(p for p in seen if p not in manifest and p not in added)
    return {
        "ok": not (missing or different or extra),
        "files": len(manifest),
        "record_verified": sum(1 for p, e in manifest.items() if e["record"] and p not in different + missing),
        "relocated": sum(1 for e in manifest.values() if e["relocated"]),
        "missing": missing[:20],
        "different": different[:20],
        "extra": extra[:20],
    }


def unowned(groups: Iterable[Any], python_version: str) -> list[str]:
    """Files in the kernel's site-packages that no packed distribution lists (a module copied in by hand, a
    ``.pth`` file a tool wrote): not in the image, so the image is byte-identical to the kernel's
    site-packages only when this is empty. Paths relative to site-packages; compiled bytecode left out."""
    packed = {f.source for g in groups if g.target_prefix == ENV_PREFIX for f in g.files}
    sources = {g.source_prefix for g in groups if g.target_prefix == ENV_PREFIX}
    found: list[str] = []
    for prefix in sorted(sources):
        site = site_packages(prefix, python_version)
        for folder, dirs, names in os.walk(site):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            found += [
                os.path.relpath(os.path.join(folder, n), site)
                for n in sorted(names)
                if os.path.join(folder, n) not in packed and not n.endswith(".pyc")
            ]
    return found


def summary(check: dict[str, Any]) -> str:
    """One line for the build log."""
    left = check.get("unowned") or []
    if check["ok"] and left:
        return (
            f"packed: {check['record_verified']} files verified against RECORD, {check['files']} in all with the runner's "
            f"({check['relocated']} script(s) relocated); {len(left)} file(s) in the kernel's site-packages "
            f"belong to no distribution and were not packed: {', '.join(left[:3])}"
        )
    if check["ok"]:
        return (
            f"packed: {check['record_verified']} files verified against RECORD, {check['files']} in all with the runner's "
            f"(site-packages byte-identical to the kernel's; {check['relocated']} script(s) relocated)"
        )
    return (
        f"packed: the image's files differ from the pack ({len(check['missing'])} missing, "
        f"{len(check['different'])} different, {len(check['extra'])} not packed: "
        f"{', '.join((check['missing'] + check['different'] + check['extra'])[:3])})"
    )
