"""Introspection program, run *inside the kernel's interpreter* (``python -I introspect.py``).

Prints one JSON document on stdout describing the environment: interpreter, platform, every installed
distribution with its provenance (PEP 610 ``direct_url.json``, ``INSTALLER``, ``REQUESTED``), pip's index
configuration, torch/CUDA/cuDNN, NVML's GPUs, CPU. Standard library only, and it must run on any
Python 3.8+: it never imports anything from jupyter_promote. Nothing from the environment's variables
leaves except the allowlisted names passed in ``argv[1]`` (comma-separated).

Typed for ``mypy --strict`` like the rest of the package, with annotations Python 3.8 never evaluates
(``from __future__ import annotations``); the submitter imports :func:`fingerprint` and :data:`PIP_ENV` from
here, so the same code computes the fingerprint inside and outside the kernel.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import platform
import re
import site
import sys
from typing import Any

try:
    from importlib import metadata
except ImportError:  # pragma: no cover - Python < 3.8
    metadata = None  # type: ignore[assignment]

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH")
PIP_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "PIP_NO_INDEX")


def strip_credentials(url: Any) -> Any:
    """A URL without its userinfo (up to the last @ before the path) and without its query string."""
    if not isinstance(url, str):
        return url
    return re.sub(r"(?<=://)[^/\s]*@", "", url).split("?", 1)[0]


def distributions() -> list[dict[str, Any]]:
    out = []
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        entry: dict[str, Any] = {"name": name, "version": dist.version}
        installer = dist.read_text("INSTALLER")
        entry["installer"] = installer.strip() if installer else None
        entry["requested"] = dist.read_text("REQUESTED") is not None
        entry["requires_python"] = dist.metadata["Requires-Python"]
        raw = dist.read_text("direct_url.json")
        if raw:
            try:
                direct = json.loads(raw)
                direct["url"] = strip_credentials(direct.get("url"))
                entry["direct_url"] = direct
            except ValueError:
                entry["direct_url"] = {"error": "unreadable direct_url.json"}
        wheel = dist.read_text("WHEEL")
        if wheel:
            entry["wheel_tags"] = sorted(
                line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")
            )
        path = getattr(dist, "_path", None)
        entry["location"] = str(path.parent) if path is not None else None
        entry["metadata_dir"] = str(path) if path is not None else None
        out.append(entry)
    return out


def pip_config_files() -> list[str]:
    """Every file pip reads its configuration from, whether it exists or not (in pip's order)."""
    files = []
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(os.environ["PIP_CONFIG_FILE"])
    xdg = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files += [os.path.join(d, "pip", "pip.conf") for d in xdg] + ["/etc/pip.conf"]
    home = os.path.expanduser("~")
    files += [os.path.join(home, ".pip", "pip.conf"), os.path.join(home, ".config", "pip", "pip.conf")]
    files.append(os.path.join(sys.prefix, "pip.conf"))
    return files


def pip_config() -> dict[str, Any]:
    files = pip_config_files()
    settings: dict[str, str] = {}
    used = []
    for path in files:
        if not os.path.isfile(path):
            continue
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        used.append(path)
        for section in ("global", "install"):
            if parser.has_section(section):
                for key, value in parser.items(section):
                    settings[key.replace("_", "-")] = value
    for name in PIP_ENV:
        if os.environ.get(name):
            settings[name[4:].lower().replace("_", "-")] = os.environ[name]
    wanted = ("index-url", "extra-index-url", "find-links", "trusted-host", "no-index")
    clean: dict[str, list[str]] = {}
    for key in wanted:
        if key in settings:
            values = settings[key].split()
            clean[key] = [strip_credentials(v) for v in values]
    return {"settings": clean, "files": used}


def torch_info(dists: list[dict[str, Any]]) -> dict[str, Any] | None:
    """torch, CUDA and cuDNN versions read from torch/version.py and the wheels' metadata, without importing
    torch (which takes seconds): introspection must stay cheap enough to run on every promote."""
    by_name = dict((d["name"].lower(), d) for d in dists)
    if "torch" not in by_name:
        return None
    torch = by_name["torch"]
    info: dict[str, Any] = {"version": torch["version"], "cuda": None, "hip": None, "cudnn": None}
    location = torch.get("location")
    text = None
    if location:
        try:
            with open(os.path.join(location, "torch", "version.py")) as f:
                text = f.read()
        except OSError:
            pass
    if text is None:
        info["version_file"] = "unreadable"
    else:
        for key in ("cuda", "hip"):
            match = re.search(r"^%s\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)['\"]" % key, text, re.M)
            info[key] = match.group(1) if match else None
    for name, dist in sorted(by_name.items()):
        if name.startswith("nvidia-cudnn-"):
            info["cudnn"] = dist["version"]
    return info


def gpus() -> dict[str, Any] | None:
    try:
        import pynvml
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return {"nvml_error": str(exc)}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        devices = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            devices.append({
                "name": name.decode() if isinstance(name, bytes) else name,
                "memory_total": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
            })
        return {"driver": driver.decode() if isinstance(driver, bytes) else driver, "devices": devices}
    finally:
        pynvml.nvmlShutdown()


def cpu() -> dict[str, Any]:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"model": model or platform.processor() or None, "count": os.cpu_count(), "usable": usable,
            "machine": platform.machine()}


#: Names in a path folder whose coming, going or change means an install or uninstall happened there.
_INSTALL_MARKS = (".dist-info", ".egg-info", ".pth", ".egg-link")


def fingerprint_paths() -> list[str]:
    """What decides this interpreter's environment, as paths: the interpreter, its venv's configuration,
    every folder on ``sys.path``, the user site folder and pip's configuration files."""
    paths = [os.path.realpath(sys.executable), os.path.join(sys.prefix, "pyvenv.cfg")]
    paths += [p for p in sys.path if p]
    user = getattr(site, "USER_SITE", None)
    if user:
        paths.append(user)
    paths += pip_config_files()
    unique: list[str] = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return unique


def fingerprint(paths: list[str]) -> str:
    """sha256 over the state of ``paths`` (see :func:`fingerprint_paths`): a file's size and mtime, a folder's
    mtime and each install record in it (``*.dist-info``, ``*.pth``, ...) with its mtime; a missing path too.
    Cheap (stat calls only) and computable from outside the interpreter: a ``pip install`` or uninstall into
    any of the folders changes it."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        try:
            st = os.stat(path)
        except OSError:
            digest.update(b"-\0")
            continue
        digest.update(("%d %d %d\0" % (st.st_mode & 0o170000, st.st_size, st.st_mtime_ns)).encode())
        if not os.path.isdir(path):
            continue
        try:
            names = sorted(n for n in os.listdir(path) if n.endswith(_INSTALL_MARKS))
        except OSError:
            continue
        for name in names:
            try:
                mtime = os.stat(os.path.join(path, name)).st_mtime_ns
            except OSError:
                mtime = -1
            digest.update(("%s %d\0" % (name, mtime)).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def document(allow: list[str]) -> dict[str, Any]:
    """The introspection document of the running interpreter (``allow``: environment variables to record)."""
    paths = fingerprint_paths()
    state = fingerprint(paths)  # before reading: an install while this runs leaves a stale fingerprint, not a stale doc
    dists = distributions()
    libc = platform.libc_ver()
    doc = {
        "python": {
            "version": platform.python_version(),
            "implementation": sys.implementation.name,
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
            "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        },
        "platform": {
            "system": platform.system(),
            "sys_platform": sys.platform,
            "machine": platform.machine(),
            "libc": {"name": libc[0] or None, "version": libc[1] or None},
            "release": platform.release(),
        },
        "distributions": dists,
        "pip": pip_config(),
        "torch": torch_info(dists),
        "gpu": gpus(),
        "cpu": cpu(),
        "env": {n: os.environ[n] for n in allow
                if n in os.environ and not any(w in n.upper() for w in SECRET_WORDS)},
        "fingerprint": {"paths": paths, "sha256": state},
    }
    return doc


def main() -> None:
    allow = [n for n in (sys.argv[1].split(",") if len(sys.argv) > 1 else []) if n]
    json.dump(document(allow), sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
