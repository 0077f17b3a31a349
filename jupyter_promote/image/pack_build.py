"""A packed image, built: the pack's layers written into the build context, a build with no network, the
verification of every build (the lock) and the pack's own (file by file), then the tag."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..freeze import FrozenEnv
from .build import docker_build
from .checks import base_python, refuse_python_mismatch
from .pack_layer import write_layers
from .pack_verify import check_pack, summary, unowned
from .plan import BuildPlan, base_image_id
from .ref import LABEL_LOCK, LABEL_PYTHON, LABEL_RECIPE, ImageRef
from .verify import seal


def build_packed(
    cli: str, env: FrozenEnv, plan: BuildPlan, cache_dir: str, on_line: Callable[[str], None], timeout_s: float
) -> ImageRef:
    """Build, verify and tag the packed image ``plan`` names. Raises
    :class:`~jupyter_promote.image.pack.PackRefused` while writing the layers (a file that cannot be packed),
    before anything is built: the caller falls back to the rebuild."""
    assert plan.pack is not None
    lock = env.lock
    image_python = base_python(plan.base_image, base_image_id(plan.base_image), cache_dir)
    refuse_python_mismatch(lock, plan.base_image, image_python)
    started = time.monotonic()
    manifest = write_layers(plan.pack.groups, plan.context, on_line)
    (plan.context / "Dockerfile").write_text(plan.dockerfile)
    on_line(f"building {plan.tag} from {plan.base_image} (pack mode, no network)")
    labels = {LABEL_LOCK: env.content_hash, LABEL_RECIPE: plan.tag.rsplit("-", 1)[-1], LABEL_PYTHON: image_python}
    image_id = docker_build(
        cli, plan.context, secrets={}, labels=labels, on_line=on_line, offline=True, timeout_s=timeout_s
    )

    def files(image: str) -> tuple[bool, str, dict[str, Any]]:
        check = {**check_pack(image, manifest, image_python), "unowned": left[:20], "unowned_count": len(left)}
        return bool(check["ok"]), summary(check), check

    left = unowned(plan.pack.groups, image_python)

    build = {"mode": "pack", "reason": plan.reason}
    image, verification = seal(cli, image_id, plan.tag, lock, on_line, build=build, files=files)
    seconds = round(time.monotonic() - started, 2)
    return ImageRef(plan.tag, image.id, env.content_hash, True, plan.base_image, None, verification.to_json(), seconds)
