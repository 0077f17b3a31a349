"""Environment -> image: a content-addressed container image that reproduces a frozen environment, verified.

``ImageBuilder.ensure()`` assembles the build context, derives the tag from the lock's content hash and
the recipe, and reuses an image with that tag (local, or in the registry) or builds, verifies, tags and
optionally pushes one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from traitlets import Bool, Float, List, Unicode
from traitlets.config import LoggingConfigurable

from ..errors import ImageError, UsageError
from ..freeze import FrozenEnv, tree_hash
from ..freeze.kernels import Interpreter
from . import network, recipe
from .build import docker_build, tag_with_labels
from .docker_engine import buildkit_cli, client
from .verify import Verification, run_once, verify_image

LABEL_LOCK = "io.jupyter-promote.lock"
LABEL_RECIPE = "io.jupyter-promote.recipe"
LABEL_VERIFICATION = "io.jupyter-promote.verification"
LABEL_PYTHON = "io.jupyter-promote.python"


def _default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jupyter-promote")


@dataclass
class ImageRef:
    """The image of one environment, as job.json records it."""

    ref: str
    id: str
    lock_hash: str
    built: bool
    base_image: str
    digest: str | None = None  # repo@sha256:... once pushed (what cluster nodes pull)
    verification: dict[str, Any] = field(default_factory=dict)
    build_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BuildPlan:
    """What ``--dry-run`` shows: the tag, the Dockerfile and every file of the build context."""

    tag: str
    base_image: str
    context: Path
    dockerfile: str
    files: list[str]


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

    # ---- planning -------------------------------------------------------------------------------
    def plan(
        self, env: FrozenEnv, *, base_image: str | None = None, registry: str | None = None, pull: bool = True
    ) -> BuildPlan:
        """Assemble the build context for ``env`` and name its image (nothing is built); ``pull``: the base
        image may be pulled to learn its id (a preview says it is missing instead)."""
        lock = env.lock
        base = base_image or self.base_image or recipe.default_base_image(lock)
        repository = registry or self.registry or self.repository
        # a context of this plan's own: two promotes of one environment at once never share (or delete) one
        contexts = Path(self.cache_dir) / "contexts"
        contexts.mkdir(parents=True, exist_ok=True)
        context = Path(tempfile.mkdtemp(prefix=env.content_hash.split(":")[-1][:24] + "-", dir=contexts))
        (context / "requirements.lock.txt").write_text(recipe.pinned_requirements(lock))
        (context / "runner-requirements.txt").write_text(recipe.runner_requirements(lock["python"]["version"]))
        recipe.copy_runner_source(context / "runner")
        (context / "runner" / "kernel.json").write_text(recipe.kernelspec())
        wheels = env.directory / "wheels"
        if wheels.is_dir() and any(wheels.iterdir()):
            shutil.copytree(wheels, context / "wheels")
        _carry_found_wheels(lock, context / "wheels")
        has_wheels = (context / "wheels").is_dir()
        options = recipe.BuildOptions(
            base_image=base, repository=repository, system_packages=tuple(self.system_packages)
        )
        canonical = recipe.render_dockerfile(lock, options, has_local_wheels=has_wheels)
        digest = hashlib.sha256()
        digest.update(f"recipe {recipe.RECIPE_VERSION}\n{canonical}".encode())
        digest.update(self._base_id(base, pull).encode())
        digest.update(tree_hash(context).encode())
        tag = f"{repository}:{env.content_hash.split(':')[-1][:32]}-{digest.hexdigest()[:8]}"
        files = sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file())
        return BuildPlan(tag, base, context, canonical, ["Dockerfile", *files])

    def _base_id(self, base: str, pull: bool = True) -> str:
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
        """The verified image of ``env``: reused when it exists (unless ``rebuild``), else built, verified
        and tagged; pushed to the registry when ``push``. ``on_stage`` hears "pushing" as the push starts.
        """
        if push and not (registry or self.registry):
            raise UsageError("--push: no registry configured (--registry HOST:PORT/REPO)", subject="push")
        plan = self.plan(env, base_image=base_image, registry=registry)
        try:
            found = None if rebuild else self.find(plan.tag)
            if found is not None:
                on_line(f"image {plan.tag} (reused: the environment is unchanged)")
                ref = ImageRef(plan.tag, found.id, env.content_hash, False, plan.base_image,
                               self._digest(found, plan.tag), json.loads(found.labels[LABEL_VERIFICATION]))  # fmt: skip
            else:
                ref = self._build(
                    env, interpreter, plan, ca_bundle, self.wheelhouse if wheelhouse is None else wheelhouse, on_line
                )
        finally:
            shutil.rmtree(plan.context, ignore_errors=True)
        if push and ref.digest is None:
            from .registry import push as push_image

            on_stage("pushing")
            ref.digest = push_image(ref.ref, on_line)
        return ref

    @staticmethod
    def _digest(image: Any, tag: str) -> str | None:
        """The digest ``image`` has in ``tag``'s repository; the same image id may also carry digests
        from other registries it was pushed to, which a node of this cluster cannot pull."""
        repository = tag.rsplit(":", 1)[0]
        for digest in image.attrs.get("RepoDigests") or []:
            if str(digest).split("@", 1)[0] == repository:
                return str(digest)
        return None

    def _build(
        self,
        env: FrozenEnv,
        interpreter: Interpreter,
        plan: BuildPlan,
        ca_bundle: str | None,
        wheelhouse: bool,
        on_line: Callable[[str], None],
    ) -> ImageRef:
        lock = env.lock
        image_python = self._python_of(plan.base_image)
        kernel_python = lock["python"]["version"]
        if image_python.split(".")[:2] != kernel_python.split(".")[:2]:
            raise ImageError(
                f"--base-image {plan.base_image}: has Python {image_python}, the kernel has {kernel_python} "
                "(major.minor must match)",
                subject=plan.base_image,
            )
        if not wheelhouse:
            _refuse_unreachable(lock)
        _refuse_python_mismatch(lock, plan.base_image, image_python)
        started = time.monotonic()
        secrets_dir = Path(tempfile.mkdtemp(prefix="promote-secrets-"))
        try:
            secrets: dict[str, str] = {}
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
            else:
                pip_conf = network.render_pip_conf(network.pip_settings(interpreter), lock)
                secrets = network.write_secrets(
                    secrets_dir, network.ca_bundle(ca_bundle) or network.pip_cert(interpreter), pip_conf
                )
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
            image_id = docker_build(cli, plan.context, secrets=secrets, labels=labels, on_line=on_line, offline=wheelhouse,
                                    timeout_s=self.build_timeout)  # fmt: skip
        finally:
            shutil.rmtree(secrets_dir, ignore_errors=True)
            shutil.rmtree(plan.context / "wheelhouse", ignore_errors=True)
        on_line("verifying: the image's environment against the lock")
        try:
            verification = verify_image(image_id, lock)
        except Exception as exc:
            _remove(image_id)
            raise ImageError(
                f"verifying the built image failed: {str(exc).splitlines()[0][:200]}", subject=plan.tag
            ) from None
        if not verification.ok:
            _remove(image_id)
            raise ImageError(
                f"the built image does not reproduce the lock ({len(verification.differences)} difference(s)):\n"
                + verification.table(),
                subject=plan.tag,
            )
        for warning in verification.warnings:
            on_line(f"warning: {warning}")
        summary = json.dumps(verification.to_json(), sort_keys=True, separators=(",", ":"))
        temp = f"{plan.tag.rsplit(':', 1)[0]}:building-{uuid.uuid4().hex[:8]}"
        tag_with_labels(cli, image_id, plan.tag, {LABEL_VERIFICATION: summary}, temp)
        image = client().images.get(plan.tag)
        _remove(image_id)  # the unlabelled parent stays as a layer of the tagged image; only its id goes
        on_line(f"image {plan.tag} verified: {verification.packages} packages match the lock")
        return ImageRef(plan.tag, image.id, env.content_hash, True, plan.base_image, None, verification.to_json(),
                        round(time.monotonic() - started, 2))  # fmt: skip

    def _python_of(self, base: str) -> str:
        """The Python version of ``base``, asked once per image id (a container start, kept in the cache)."""
        known = Path(self.cache_dir) / "base-pythons.json"
        image_id = self._base_id(base)
        try:
            versions: dict[str, str] = json.loads(known.read_text())
        except (OSError, ValueError):
            versions = {}
        if isinstance(versions.get(image_id), str):
            return versions[image_id]
        out = run_once(base, ["python3", "-c", "import platform; print(platform.python_version())"], role="probe")
        version = out.decode().strip()
        with contextlib.suppress(OSError):
            known.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".base-pythons-", dir=known.parent)
            with os.fdopen(fd, "w") as f:
                json.dump({**versions, image_id: version}, f)
            os.replace(tmp, known)
        return version


def _remove(image_id: str) -> None:
    from docker.errors import APIError

    with contextlib.suppress(APIError):  # still referenced by a tag (the final image), which is what we want
        client().images.remove(image_id, noprune=True)


__all__ = ["BuildPlan", "ImageBuilder", "ImageRef", "Verification"]


def _refuse_unreachable(lock: dict[str, Any]) -> None:
    """Before any build: packages no index the build can reach has (a local version label whose index was
    not recorded, and no wheel of it found on this machine), named with the fix."""
    missing = [f"{p['name']}=={p['version']}" for p in lock["packages"]
               if p["source"]["kind"] == "index" and "index" in p["source"] and p["source"]["index"] is None
               and "wheel" not in p["source"]]  # fmt: skip
    if missing:
        raise ImageError(
            f"{', '.join(missing)}: on no index the build can reach and no wheel of it on this machine's find-links "
            "folders; build with --wheelhouse (wheels fetched on this machine) or install them from an index",
            subject=missing[0],
        )


def _refuse_python_mismatch(lock: dict[str, Any], base_image: str, image_python: str) -> None:
    """Before any build: packages whose ``Requires-Python`` the base image's Python does not meet."""
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


def _carry_found_wheels(lock: dict[str, Any], wheels: Path) -> None:
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
