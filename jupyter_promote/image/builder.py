"""Environment -> image: a content-addressed container image that reproduces a frozen environment, verified.

``ImageBuilder.ensure()`` assembles the build context, derives the tag from the lock's content hash and
the recipe, and reuses an image with that tag (local, or in the registry) or builds, verifies, tags and
optionally pushes one. The builder holds the settings and the order of things; planning is
:mod:`.plan`'s, the checks before a build :mod:`.checks`'s, the build itself :mod:`.build`'s and the
verification :mod:`.verify`'s.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traitlets import Bool, Float, List, Unicode
from traitlets.config import LoggingConfigurable

from ..errors import UsageError
from ..freeze import FrozenEnv
from ..freeze.kernels import Interpreter
from . import network, recipe
from .build import docker_build
from .checks import base_platform as platform_of
from .checks import base_python, refuse_unbuildable
from .docker_engine import buildkit_cli, client
from .pack import PackPlan, PackRefused, choose
from .pack_build import build_packed
from .plan import BuildPlan, base_image_id, plan_build
from .ref import LABEL_LOCK, LABEL_PYTHON, LABEL_RECIPE, LABEL_VERIFICATION, ImageRef
from .verify import seal

__all__ = ["ImageBuilder"]


def _default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jupyter-promote")


class ImageBuilder(LoggingConfigurable):
    """Builds and finds environment images. Configure with ``c.ImageBuilder.<name>`` or ``--ImageBuilder.<name>=``."""

    repository = Unicode("jupyter-promote/env", help="Image repository for environment images (without a tag).").tag(
        config=True
    )
    registry = Unicode(
        "", help="HOST:PORT/REPO of a registry to find images in and --push to; replaces the repository when set."
    ).tag(config=True)
    base_image = Unicode("", help="Base image; default python:X.Y.Z-slim of the kernel's Python.").tag(config=True)
    system_packages = List(Unicode(), help="Debian packages installed in a layer of their own.").tag(config=True)
    docker_cli = Unicode("", help="docker CLI for builds (default: the first on PATH that can BuildKit).").tag(
        config=True
    )
    cache_dir = Unicode(_default_cache(), help="Build contexts and the wheelhouse cache.").tag(config=True)
    build_timeout = Float(3600.0, help="Seconds a build may take.").tag(config=True)
    wheelhouse = Bool(False, help="Hermetic builds: wheels fetched on the host, installed with --no-index.").tag(
        config=True
    )
    pack = Bool(
        True,
        help="Pack the kernel's installed files into the image when the base image can run them (no index, no "
        "network); else, or when False, rebuild from the lock's pins.",
    ).tag(config=True)

    # ---- planning -------------------------------------------------------------------------------
    def plan(
        self,
        env: FrozenEnv,
        *,
        base_image: str | None = None,
        registry: str | None = None,
        pull: bool = True,
        refused: str | None = None,
    ) -> BuildPlan:
        """Assemble the build context for ``env`` and name its image (nothing is built); ``pull``: the base
        image may be pulled to learn its id (a preview says it is missing instead). The image is packed from
        the kernel's files when that applies, else rebuilt (``refused``: packing was tried and refused so)."""
        options = recipe.BuildOptions(
            base_image=base_image or self.base_image or recipe.default_base_image(env.lock),
            repository=registry or self.registry or self.repository,
            system_packages=tuple(self.system_packages),
        )
        return plan_build(env, options, self.cache_dir, pull=pull, pack=refused or self._pack(env, options, pull))

    def _pack(self, env: FrozenEnv, options: recipe.BuildOptions, pull: bool) -> PackPlan | str:
        """The packed layers of ``env`` on ``options``' base image, or why the image is rebuilt instead."""
        if not self.pack:
            return "packing is off (--ImageBuilder.pack=False)"
        if options.system_packages:
            return "system packages are installed (--ImageBuilder.system_packages): a rebuild installs them"
        image_id = base_image_id(options.base_image, pull)
        try:
            base = platform_of(options.base_image, image_id, self.cache_dir)
        except Exception as exc:  # the rebuild asks the base image too, and says what is wrong with it
            return f"the base image's platform is unknown ({str(exc).splitlines()[0][:120]})"
        try:
            return choose(env.lock, base, recipe.runner_requirements(env.lock["python"]["version"]))
        except PackRefused as refused:
            return refused.reason

    # ---- finding ---------------------------------------------------------------------------------
    def find(self, tag: str) -> Any | None:
        """The verified image with ``tag``, locally or pulled from the registry; None when there is none."""
        from docker.errors import APIError, ImageNotFound, NotFound

        engine = client()
        try:
            image = engine.images.get(tag)
        except ImageNotFound:
            image = None
            if self._in_registry(tag):
                try:
                    image = engine.images.pull(tag)
                except (APIError, NotFound):
                    image = None
        if image is None:
            return None
        verification = json.loads((image.labels or {}).get(LABEL_VERIFICATION, "{}") or "{}")
        return image if verification.get("ok") else None

    @staticmethod
    def _in_registry(tag: str) -> bool:
        first = tag.split("/", 1)[0]
        if "/" not in tag or not ("." in first or ":" in first or first == "localhost"):
            return False  # not a registry reference: nothing to ask
        try:
            client().images.get_registry_data(tag)
            return True
        except Exception:
            return False

    @staticmethod
    def _digest(image: Any, tag: str) -> str | None:
        """The digest ``image`` has in ``tag``'s repository; the same image id may also carry digests
        from other registries it was pushed to, which a node of this cluster cannot pull."""
        repository = tag.rsplit(":", 1)[0]
        for digest in image.attrs.get("RepoDigests") or []:
            if str(digest).split("@", 1)[0] == repository:
                return str(digest)
        return None

    # ---- the whole thing -------------------------------------------------------------------------
    def ensure(
        self,
        env: FrozenEnv,
        interpreter: Interpreter,
        *,
        base_image: str | None = None,
        ca_bundle: str | None = None,
        wheelhouse: bool | None = None,
        push: bool = False,
        registry: str | None = None,
        rebuild: bool = False,
        on_line: Callable[[str], None] = lambda line: None,
        on_stage: Callable[[str], None] = lambda stage: None,
    ) -> ImageRef:
        """The verified image of ``env``: reused when it exists (unless ``rebuild``), else built (packed from
        the kernel's files when that applies, else rebuilt; ``wheelhouse=True`` asks for the hermetic rebuild),
        verified and tagged; pushed to the registry when ``push``. ``on_stage`` hears "pushing" as it starts.
        """
        if push and not (registry or self.registry):
            raise UsageError("--push: no registry configured (--registry HOST:PORT/REPO)", subject="push")
        asked = "--wheelhouse asks for a hermetic rebuild from wheels" if wheelhouse else None
        plan = self.plan(env, base_image=base_image, registry=registry, refused=asked)
        hermetic = self.wheelhouse if wheelhouse is None else wheelhouse
        try:
            ref = self._find_or_build(env, interpreter, plan, ca_bundle, hermetic, rebuild, on_line)
        except PackRefused as refused:
            shutil.rmtree(plan.context, ignore_errors=True)
            plan = self.plan(env, base_image=base_image, registry=registry, refused=f"pack refused: {refused.reason}")
            ref = self._find_or_build(env, interpreter, plan, ca_bundle, hermetic, rebuild, on_line)
        finally:
            shutil.rmtree(plan.context, ignore_errors=True)
        if push and ref.digest is None:
            from .registry import push as push_image

            on_stage("pushing")
            ref.digest = push_image(ref.ref, on_line)
        return ref

    def _find_or_build(
        self,
        env: FrozenEnv,
        interpreter: Interpreter,
        plan: BuildPlan,
        ca_bundle: str | None,
        wheelhouse: bool,
        rebuild: bool,
        on_line: Callable[[str], None],
    ) -> ImageRef:
        """The image ``plan`` names: reused when it exists (unless ``rebuild``), else built."""
        found = None if rebuild else self.find(plan.tag)
        if found is not None:
            on_line(f"image {plan.tag} (reused: the environment is unchanged)")
            digest = self._digest(found, plan.tag)
            verification = json.loads(found.labels[LABEL_VERIFICATION])
            return ImageRef(plan.tag, found.id, env.content_hash, False, plan.base_image, digest, verification)
        on_line(f"build mode: {plan.mode} ({plan.reason})")
        if plan.pack is not None:
            cli = buildkit_cli(self.docker_cli)
            return build_packed(cli, env, plan, self.cache_dir, on_line, self.build_timeout)
        return self._build(env, interpreter, plan, ca_bundle, wheelhouse, on_line)

    # ---- building --------------------------------------------------------------------------------
    def _build(
        self,
        env: FrozenEnv,
        interpreter: Interpreter,
        plan: BuildPlan,
        ca_bundle: str | None,
        wheelhouse: bool,
        on_line: Callable[[str], None],
    ) -> ImageRef:
        """Check, build, verify and tag the image ``plan`` names (``wheelhouse``: hermetic, no network)."""
        lock = env.lock
        image_python = base_python(plan.base_image, base_image_id(plan.base_image), self.cache_dir)
        refuse_unbuildable(lock, plan.base_image, image_python, wheelhouse=wheelhouse)
        started = time.monotonic()
        secrets_dir = Path(tempfile.mkdtemp(prefix="promote-secrets-"))
        try:
            secrets = self._install_sources(lock, interpreter, plan, secrets_dir, ca_bundle, wheelhouse, on_line)
            options = recipe.BuildOptions(
                base_image=plan.base_image,
                system_packages=tuple(self.system_packages),
                wheelhouse=wheelhouse,
                secrets=tuple(sorted(secrets)),
            )
            has_wheels = (plan.context / "wheels").is_dir()
            (plan.context / "Dockerfile").write_text(
                recipe.render_dockerfile(lock, options, has_local_wheels=has_wheels)
            )
            cli = buildkit_cli(self.docker_cli)
            on_line(f"building {plan.tag} from {plan.base_image} ({'wheelhouse' if wheelhouse else 'network'} mode)")
            labels = {
                LABEL_LOCK: env.content_hash,
                LABEL_RECIPE: plan.tag.rsplit("-", 1)[-1],
                LABEL_PYTHON: image_python,
            }
            image_id = docker_build(
                cli,
                plan.context,
                secrets=secrets,
                labels=labels,
                on_line=on_line,
                offline=wheelhouse,
                timeout_s=self.build_timeout,
            )
        finally:
            shutil.rmtree(secrets_dir, ignore_errors=True)
            shutil.rmtree(plan.context / "wheelhouse", ignore_errors=True)
        build = {"mode": "rebuild", "reason": plan.reason}
        image, verification = seal(cli, image_id, plan.tag, lock, on_line, build=build)
        seconds = round(time.monotonic() - started, 2)
        verdict = verification.to_json()
        return ImageRef(plan.tag, image.id, env.content_hash, True, plan.base_image, None, verdict, seconds)

    def _install_sources(
        self,
        lock: dict[str, Any],
        interpreter: Interpreter,
        plan: BuildPlan,
        secrets_dir: Path,
        ca_bundle: str | None,
        wheelhouse: bool,
        on_line: Callable[[str], None],
    ) -> dict[str, str]:
        """Where the build's pip gets the packages: the wheelhouse filled on this machine (no secrets), else
        the kernel's pip settings and CA bundle, as build secrets written into ``secrets_dir``."""
        if wheelhouse:
            pins = secrets_dir / "pins.txt"
            pins.write_text(recipe.pinned_requirements(lock, local_wheels=False))
            on_line("wheelhouse: collecting wheels on the host")
            network.fill_wheelhouse(
                interpreter,
                [pins, plan.context / "runner-requirements.txt"],
                Path(self.cache_dir) / "wheelhouse",
                plan.context / "wheelhouse",
            )
            return {}
        pip_conf = network.render_pip_conf(network.pip_settings(interpreter), lock)
        return network.write_secrets(
            secrets_dir, network.ca_bundle(ca_bundle) or network.pip_cert(interpreter), pip_conf
        )
