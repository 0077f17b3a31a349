"""Prove that a built image is the notebook's environment: introspect inside it and diff against the lock.

:func:`seal` is the end of every build: an image that reproduces the lock gets its final tag with the
verdict as a label (only such images are ever reused); one that does not is removed and refused.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ImageError
from ..freeze.lock import RUNTIME_PACKAGES, build_lock, canonical_name
from .build import tag_with_labels
from .docker_engine import client
from .recipe import ENV_PREFIX
from .ref import LABEL_VERIFICATION

INTROSPECT_IN_IMAGE = "/opt/promote/runner-src/jupyter_promote/freeze/introspect.py"


@dataclass
class Verification:
    ok: bool
    python: str
    differences: list[dict[str, Any]] = field(default_factory=list)  # {name, lock, image, problem}
    warnings: list[str] = field(default_factory=list)
    packages: int = 0
    #: how the image was made: {"mode": "pack" | "rebuild", "reason": ...}, and a pack's file-by-file check
    build: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """The differences as an aligned text table."""
        rows = [("package", "lock", "image", "problem")] + [
            (d["name"], d["lock"] or "-", d["image"] or "-", d["problem"]) for d in self.differences
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def run_once(image: str, command: list[str], *, role: str) -> bytes:
    """Run ``command`` in a throw-away container of ``image`` with no network; its stdout. The container is
    removed whatever happens.
    """
    container = client().containers.create(
        image, command, entrypoint=[], network_disabled=True, labels={"io.jupyter-promote.role": role}
    )
    try:  # created, then started: one that fails to start is removed too
        container.start()
        status = container.wait(timeout=300)
        out = bytes(container.logs(stdout=True, stderr=False))
        if status.get("StatusCode") != 0:
            err = bytes(container.logs(stdout=False, stderr=True)).decode(errors="replace").strip().splitlines()
            raise RuntimeError(
                f"{' '.join(command[:2])} exited {status.get('StatusCode')}: {(err or ['no output'])[-1]}"
            )
        return out
    finally:
        container.remove(force=True)


def diff_packages(lock: dict[str, Any], image_lock: dict[str, Any]) -> list[dict[str, Any]]:
    """Missing, extra and other-version packages between the lock and what the image holds."""
    want = {canonical_name(p["name"]): p["version"] for p in lock["packages"]}
    have = {canonical_name(p["name"]): p["version"] for p in image_lock["packages"]}
    out = []
    for name in sorted(want.keys() | have.keys()):
        if name in RUNTIME_PACKAGES:
            continue
        if name not in have:
            out.append({"name": name, "lock": want[name], "image": None, "problem": "missing"})
        elif name not in want:
            out.append({"name": name, "lock": None, "image": have[name], "problem": "extra"})
        elif want[name] != have[name]:
            out.append({"name": name, "lock": want[name], "image": have[name], "problem": "other version"})
    return out


def python_warnings(lock_python: str, image_python: str) -> list[str]:
    if lock_python == image_python:
        return []
    return [f"Python {image_python} in the image, {lock_python} in the kernel (a patch-level difference)"]


def verify_image(image: str, lock: dict[str, Any]) -> Verification:
    """Run the lock's introspection in ``image``'s frozen interpreter, with no network, and compare."""
    allowlist = ",".join(sorted(lock.get("env", {})))
    output = run_once(image, [f"{ENV_PREFIX}/bin/python", "-I", INTROSPECT_IN_IMAGE, allowlist], role="verify")
    return compare(lock, json.loads(output))


def compare(lock: dict[str, Any], doc: dict[str, Any]) -> Verification:
    """The verdict on an introspection ``doc`` of a rebuilt environment (an image, a node's venv) against ``lock``."""
    image_lock = build_lock(doc, kernel=None, created_at=0.0, host="image")
    differences = diff_packages(lock, image_lock)
    image_python = image_lock["python"]["version"]
    if image_python.split(".")[:2] != lock["python"]["version"].split(".")[:2]:
        differences.insert(
            0, {"name": "python", "lock": lock["python"]["version"], "image": image_python, "problem": "other version"}
        )
    return Verification(
        ok=not differences,
        python=image_python,
        differences=differences,
        warnings=python_warnings(lock["python"]["version"], image_python),
        packages=len(image_lock["packages"]),
    )


def seal(
    cli: str,
    image_id: str,
    tag: str,
    lock: dict[str, Any],
    on_line: Callable[[str], None],
    *,
    build: dict[str, Any] | None = None,
    files: Callable[[str], tuple[bool, str, dict[str, Any]]] | None = None,
) -> tuple[Any, Verification]:
    """Verify the freshly built ``image_id`` against ``lock`` and give it ``tag`` with the verdict as a
    label; returns the tagged image and the verdict. An image that does not reproduce the lock is removed
    and refused with the differences as a table. ``build``: how it was made, kept in the verdict; ``files``:
    a file-by-file check of the image (a pack's), returning (ok, a line for the log, details for the verdict).
    """
    on_line("verifying: the image's environment against the lock")
    try:
        verification = verify_image(image_id, lock)
        verification.build = dict(build or {})
        if files is not None and verification.ok:
            files_ok, line, details = files(image_id)
            on_line(line)
            verification.build["files"] = details
            if not files_ok:
                raise RuntimeError(line)
    except Exception as exc:
        _remove(image_id)
        raise ImageError(f"verifying the built image failed: {str(exc).splitlines()[0][:200]}", subject=tag) from None
    if not verification.ok:
        _remove(image_id)
        raise ImageError(
            f"the built image does not reproduce the lock ({len(verification.differences)} difference(s)):\n"
            + verification.table(),
            subject=tag,
        )
    for warning in verification.warnings:
        on_line(f"warning: {warning}")
    summary = json.dumps(verification.to_json(), sort_keys=True, separators=(",", ":"))
    temp = f"{tag.rsplit(':', 1)[0]}:building-{uuid.uuid4().hex[:8]}"
    tag_with_labels(cli, image_id, tag, {LABEL_VERIFICATION: summary}, temp)
    image = client().images.get(tag)
    _remove(image_id)  # the unlabelled parent stays as a layer of the tagged image; only its id goes
    on_line(f"image {tag} verified: {verification.packages} packages match the lock")
    return image, verification


def _remove(image_id: str) -> None:
    from docker.errors import APIError

    with contextlib.suppress(APIError):  # still referenced by a tag (the final image), which is what we want
        client().images.remove(image_id, noprune=True)
