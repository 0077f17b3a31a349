"""Planning a build: the build context of a frozen environment and its content-addressed tag.

Nothing is built. The tag is ``REPOSITORY:<lock hash>-<recipe hash>``, where the recipe hash covers the
recipe version, the canonical Dockerfile, the base image's id and every file of the context: the same
environment on the same base image always gets the same tag, and any change gets another. Each plan has a
context folder of its own, so two promotes of one environment at once never share (or delete) one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ImageError
from ..freeze import FrozenEnv, tree_hash
from . import recipe
from .docker_engine import client
from .pack import PackPlan


@dataclass
class BuildPlan:
    """What ``--dry-run`` shows: the tag, the Dockerfile and every file of the build context."""

    tag: str
    base_image: str
    context: Path
    dockerfile: str
    files: list[str]
    #: "pack" (the kernel's installed files, :mod:`.pack`) or "rebuild" (pip installs the lock's pins)
    mode: str = "rebuild"
    #: why that mode: what made packing apply, or why it does not
    reason: str = ""
    pack: PackPlan | None = None


def plan_build(
    env: FrozenEnv,
    options: recipe.BuildOptions,
    cache_dir: str,
    *,
    pull: bool = True,
    pack: PackPlan | str = "",
) -> BuildPlan:
    """Assemble the build context for ``env`` under ``cache_dir`` and name its image; ``pull``: the base
    image may be pulled to learn its id (a preview says it is missing instead). ``pack``: the packed layers
    when packing applies, else why it does not (the image is then rebuilt from the lock's pins)."""
    lock = env.lock
    contexts = Path(cache_dir) / "contexts"
    contexts.mkdir(parents=True, exist_ok=True)
    context = Path(tempfile.mkdtemp(prefix=env.content_hash.split(":")[-1][:24] + "-", dir=contexts))
    (context / "requirements.lock.txt").write_text(recipe.pinned_requirements(lock))
    (context / "runner-requirements.txt").write_text(recipe.runner_requirements(lock["python"]["version"]))
    recipe.copy_runner_source(context / "runner")
    (context / "runner" / "kernel.json").write_text(recipe.kernelspec())
    wheels = env.directory / "wheels"
    if wheels.is_dir() and any(wheels.iterdir()):
        shutil.copytree(wheels, context / "wheels")
    carry_found_wheels(lock, context / "wheels")
    has_wheels = (context / "wheels").is_dir()
    if isinstance(pack, PackPlan):
        tars = [group.tar for group in pack.groups if group.files]
        canonical = recipe.render_pack_dockerfile(lock, options, tars)
    else:
        canonical = recipe.render_dockerfile(lock, options, has_local_wheels=has_wheels)
    digest = hashlib.sha256()
    digest.update(f"recipe {recipe.RECIPE_VERSION}\n{canonical}".encode())
    digest.update(base_image_id(options.base_image, pull).encode())
    digest.update(tree_hash(context).encode())
    tag = f"{options.repository}:{env.content_hash.split(':')[-1][:32]}-{digest.hexdigest()[:8]}"
    files = sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file())
    if isinstance(pack, PackPlan):
        return BuildPlan(
            tag, options.base_image, context, canonical, ["Dockerfile", *files, *tars], "pack", pack.reason, pack
        )
    return BuildPlan(tag, options.base_image, context, canonical, ["Dockerfile", *files], "rebuild", pack)


def base_image_id(base: str, pull: bool = True) -> str:
    """The id of the image ``base`` on this engine, pulled first when it is missing and ``pull``."""
    from docker.errors import ImageNotFound

    try:
        return str(client().images.get(base).id)
    except ImageNotFound:
        if not pull:
            raise ImageError(
                f"--base-image {base}: not on this engine yet (a promote to an image target pulls it)",
                subject=base,
            ) from None
    try:
        return str(client().images.pull(base).id)
    except Exception as exc:
        raise ImageError(
            f"--base-image {base}: not on this engine and cannot be pulled ({str(exc).splitlines()[0][:160]})",
            subject=base,
        ) from None


def carry_found_wheels(lock: dict[str, Any], wheels: Path) -> None:
    """The wheels the lock found in this machine's find-links folders (``found_in``), into the build
    context: linked where the filesystem allows, else copied. Only a build needs them, so freeze does not
    copy them into every run directory."""
    for pkg in lock["packages"]:
        source = pkg["source"]
        if not source.get("found_in"):
            continue
        name = source["wheel"].removeprefix("wheels/")
        origin, target = Path(source["found_in"]) / name, wheels / name
        if not origin.is_file():
            raise ImageError(
                f"{pkg['name']}=={pkg['version']}: its wheel {origin} is gone from this machine; reinstall it or "
                "build with --wheelhouse",
                subject=pkg["name"],
            )
        wheels.mkdir(exist_ok=True)
        try:
            os.link(origin, target)
        except OSError:
            shutil.copyfile(origin, target)
