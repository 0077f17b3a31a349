"""An environment lock -> a Dockerfile and the minimal build context it needs.

Layers, most stable first: base image; system packages; the frozen packages exactly as the lock says
(into their own venv, ``/opt/promote/env``, installed by a separate pip so that the venv holds the lock and
nothing else); then the runner (papermill and the jupyter_promote runner in ``/opt/promote/runner``) and a
kernelspec pointing papermill at the frozen interpreter. The runner is built in a stage of its own, which
BuildKit builds in parallel with the environment and which is cached across environments. The job notebook is never in the image: the
target mounts the run directory, so editing a notebook rebuilds nothing.

Index URLs and CA bundles reach the install steps as BuildKit secrets and are never written into a layer;
in wheelhouse mode the wheels are bind-mounted from the context for the install step only.
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..freeze.lock import canonical_name

#: Where things live inside every image.
ENV_PREFIX = "/opt/promote/env"
RUNNER_PREFIX = "/opt/promote/runner"
KERNEL_NAME = "promote-frozen"
#: Bumped whenever the Dockerfile's shape changes; part of every image tag.
RECIPE_VERSION = 3
#: What the runner imports at run time, besides the jupyter_promote package itself.
RUNNER_REQUIREMENTS = ("papermill", "nbclient", "nbformat", "jupyter_client", "fastjsonschema", "pyyaml", "traitlets")
#: The runner's venv finds the jupyter_promote source, and papermill the frozen kernel's spec.
_RUNNER_SETUP = (
    f'RUN {RUNNER_PREFIX}/bin/python -c "import site; '
    "open(site.getsitepackages()[0] + '/jupyter_promote.pth', 'w').write('/opt/promote/runner-src\\n')\" "
    f"&& mkdir -p {RUNNER_PREFIX}/share/jupyter/kernels/{KERNEL_NAME} "
    f"&& cp /opt/promote/runner-src/kernel.json {RUNNER_PREFIX}/share/jupyter/kernels/{KERNEL_NAME}/kernel.json"
)
_RUNNER_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "labextension", "static", "*.so")


@dataclass(frozen=True)
class BuildOptions:
    """How one image is built (everything here changes the image, so it is part of its tag)."""

    base_image: str
    repository: str = "jupyter-promote/env"
    system_packages: tuple[str, ...] = ()
    wheelhouse: bool = False
    #: secret ids available to the install steps: "ca" (a CA bundle), "pipconf" (a pip.conf)
    secrets: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)


def default_base_image(lock: dict[str, Any]) -> str:
    """The official ``python:X.Y.Z-slim`` image of the kernel's exact Python.

    A CUDA build of torch needs no CUDA base image: its wheels carry the CUDA user-space libraries
    (``nvidia-*`` packages in the lock) and the NVIDIA container runtime mounts the driver.
    """
    return f"python:{lock['python']['version']}-slim"


def pinned_requirements(lock: dict[str, Any], *, local_wheels: bool = True) -> str:
    """The lock as pins only: no index lines (those come from a secret or the wheelhouse).

    ``local_wheels=False`` leaves out the wheels freeze built for local code (they are copied, not fetched).
    """
    lines = [f"# jupyter-promote environment lock {lock['content_hash']}"]
    for pkg in lock["packages"]:
        source = pkg["source"]
        if "wheel" in source:
            if local_wheels:
                lines.append(f"/opt/promote/lock/{source['wheel']}")
        elif source["kind"] == "vcs":
            commit = f"@{source['commit']}" if source.get("commit") else ""
            lines.append(f"{pkg['name']} @ {source['vcs']}+{source['url']}{commit}")
        elif source["kind"] == "url":
            lines.append(f"{pkg['name']} @ {source['url']}")
        else:
            lines.append(f"{pkg['name']}=={pkg['version']}")
    return "\n".join(lines) + "\n"


#: Where pip keeps downloaded wheels across builds (a BuildKit cache mount, never part of a layer): a lock
#: that changes by one package downloads that package only.
PIP_CACHE = "/var/cache/promote-pip"
#: The base image's own pip, or (a base without one) a pip of its ``python3 -m venv``, for the install
#: steps; nothing of it stays in the image. The installs use ``pip --python`` into venvs without pip.
_PIP = (
    "if python3 -m pip --version >/dev/null 2>&1; then pip='python3 -m pip'; "
    "else python3 -m venv /tmp/promote-pip && pip=/tmp/promote-pip/bin/pip; fi"
)


@dataclass(frozen=True)
class _PipInstall:
    """How every install step runs pip: its ``RUN`` mounts, the environment before it and its flags."""

    mounts: str
    prefix: str
    flags: str

    def step(self, venv: str, requirements: str) -> str:
        """The ``RUN`` step that installs ``requirements`` into a new pip-less venv at ``venv``."""
        return _run(
            self.mounts,
            f"{_PIP} && python3 -m venv --without-pip {venv} && {self.prefix}$pip --python {venv}/bin/python "
            f"install {self.flags} -r {requirements} && rm -rf /tmp/promote-pip",
        )


def _pip_install(options: BuildOptions) -> _PipInstall:
    """Hermetic (the wheelhouse bound in, no index, no cache) or networked (secrets and the pip cache)."""
    if options.wheelhouse:
        mounts = "--mount=type=bind,source=wheelhouse,target=/tmp/wheelhouse"
        index_args = "--no-index --find-links /tmp/wheelhouse --no-cache-dir"
        prefix = ""
    else:
        secrets = " ".join(f"--mount=type=secret,id={s}" for s in options.secrets)
        env_for_secrets = []
        if "ca" in options.secrets:
            env_for_secrets.append("PIP_CERT=/run/secrets/ca")
        if "pipconf" in options.secrets:
            env_for_secrets.append("PIP_CONFIG_FILE=/run/secrets/pipconf")
        mounts = " ".join(x for x in (secrets, f"--mount=type=cache,id=jupyter-promote-pip,target={PIP_CACHE}") if x)
        index_args = f"--cache-dir {PIP_CACHE}"
        prefix = (" ".join(env_for_secrets) + " ") if env_for_secrets else ""
    return _PipInstall(mounts, prefix, f"--no-deps --disable-pip-version-check {index_args}")


def render_dockerfile(lock: dict[str, Any], options: BuildOptions, *, has_local_wheels: bool) -> str:
    """The Dockerfile for ``lock``; deterministic, golden-tested."""
    pip = _pip_install(options)
    python = lock["python"]["version"]
    env = "ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore"
    lines = [
        f"# jupyter-promote image for environment {lock['content_hash']} (Python {python})",
        "# rendered by jupyter_promote.image.recipe; no notebook content is ever part of it",
        "# stage 1, built in parallel with the environment: the runner, in a venv of its own",
        f"FROM {options.base_image} AS runner",
        env,
        "COPY runner-requirements.txt /opt/promote/runner-requirements.txt",
        pip.step(RUNNER_PREFIX, "/opt/promote/runner-requirements.txt"),
        "COPY runner/ /opt/promote/runner-src/",
        _RUNNER_SETUP,
        "# stage 2, the image: base, system packages, the frozen environment, then the runner",
        f"FROM {options.base_image}",
        env,
    ]
    if options.system_packages:
        lines += [
            "# system packages",
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            + " ".join(sorted(options.system_packages))
            + " && rm -rf /var/lib/apt/lists/*",
        ]
    lines += [
        "# the frozen environment: a venv that holds the lock's packages and nothing else",
        "COPY requirements.lock.txt /opt/promote/lock/requirements.lock.txt",
    ]
    if has_local_wheels:
        lines.append("COPY wheels/ /opt/promote/lock/wheels/")
    lines += [
        pip.step(ENV_PREFIX, "/opt/promote/lock/requirements.lock.txt"),
        "# the runner, apart from the frozen environment",
        f"COPY --from=runner {RUNNER_PREFIX} {RUNNER_PREFIX}",
        "COPY --from=runner /opt/promote/runner-src /opt/promote/runner-src",
        f"ENV JUPYTER_PROMOTE_KERNEL={KERNEL_NAME} HOME=/tmp",
    ]
    for key in sorted(options.labels):
        lines.append(f"LABEL {key}={_quote(options.labels[key])}")
    lines.append(f'CMD ["{RUNNER_PREFIX}/bin/python", "-m", "jupyter_promote.execute.runner", "--help"]')
    return "\n".join(lines) + "\n"


def render_pack_dockerfile(lock: dict[str, Any], options: BuildOptions, tars: list[str]) -> str:
    """The Dockerfile of a packed image (:mod:`.pack`): two pip-less venvs of the base image's Python, the
    kernel's installed files and the runner's added as tars (most stable first), no index and no network."""
    python = lock["python"]["version"]
    env = "ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore"
    lines = [
        f"# jupyter-promote image for environment {lock['content_hash']} (Python {python}), packed",
        "# rendered by jupyter_promote.image.recipe from the kernel's own installed files; no notebook content",
        f"FROM {options.base_image}",
        env,
        f"RUN python3 -m venv --without-pip {ENV_PREFIX} && python3 -m venv --without-pip {RUNNER_PREFIX}",
        "# the packed files, relocated to the image's prefixes: one layer per large distribution, then the rest",
        *[f"ADD {tar} /" for tar in tars],
        "# the runner's source and the kernelspec",
        "COPY runner/ /opt/promote/runner-src/",
        _RUNNER_SETUP,
        f"ENV JUPYTER_PROMOTE_KERNEL={KERNEL_NAME} HOME=/tmp",
    ]
    for key in sorted(options.labels):
        lines.append(f"LABEL {key}={_quote(options.labels[key])}")
    lines.append(f'CMD ["{RUNNER_PREFIX}/bin/python", "-m", "jupyter_promote.execute.runner", "--help"]')
    return "\n".join(lines) + "\n"


def _run(mounts: str, command: str) -> str:
    return "RUN " + (f"{mounts} " if mounts else "") + command


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kernelspec() -> str:
    return (
        '{"argv": ["' + ENV_PREFIX + '/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], '
        '"display_name": "Frozen notebook environment", "language": "python"}\n'
    )


@functools.lru_cache(maxsize=8)
def runner_requirements(python_version: str) -> str:
    """Exact pins of what the runner needs (its whole dependency closure), taken from this process's
    environment: the runner in the image is the runner that is running here (read once per process: a plan asks twice).
    """
    from importlib import metadata

    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    major_minor = ".".join(python_version.split(".")[:2])
    environment = {**default_environment(), "python_version": major_minor, "python_full_version": python_version}
    pins: dict[str, str] = {}
    todo = list(RUNNER_REQUIREMENTS)
    while todo:
        name = canonical_name(todo.pop())
        if name in pins:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        pins[name] = dist.version
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({**environment, "extra": ""}):  # type: ignore[dict-item]
                todo.append(req.name)
    lines = ["# the jupyter-promote runner's dependencies, pinned to the versions running on the host"]
    lines += [f"{name}=={version}" for name, version in sorted(pins.items())]
    return "\n".join(lines) + "\n"


def copy_runner_source(dest: Path) -> None:
    """The jupyter_promote Python package (no labextension assets) for the runner layer."""
    package = Path(__file__).resolve().parent.parent
    shutil.copytree(package, dest / "jupyter_promote", ignore=_RUNNER_SKIP)
