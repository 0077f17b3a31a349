"""From an introspection document to an environment lock (promote.lock.json) and its requirements.txt."""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from ..redact import redact_url

LOCK_SCHEMA = 1
#: Distributions provided by the job runtime itself, never part of the user's environment lock.
RUNTIME_PACKAGES = frozenset({"jupyter-promote"})
#: Distributions that are artefacts of a packager, not packages (Debian's pkg-resources==0.0.0).
BOGUS = {("pkg-resources", "0.0.0"): "a Debian/Ubuntu packaging artefact, not a real distribution"}
#: Local version labels whose index is a documented convention.
_TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "torchdata", "triton", "pytorch-triton"})
_TORCH_LABEL = re.compile(r"^(cu\d+|cpu|rocm[\d.]+|xpu)$")
#: Parts of the lock that describe where and when it was made, or the hardware: recorded, not hashed.
UNHASHED = ("content_hash", "origin", "hardware", "env", "warnings")


def canonical_name(name: str) -> str:
    """PEP 503 normalised name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def content_hash(lock: dict[str, Any]) -> str:
    """sha256 over the canonical lock minus what describes the machine or the moment (:data:`UNHASHED`)."""
    hashed = {k: v for k, v in lock.items() if k not in UNHASHED}
    canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def classify(dist: dict[str, Any]) -> dict[str, Any]:
    """The provenance of one distribution: where it can be reinstalled from, or why it cannot."""
    direct = dist.get("direct_url")
    if direct:
        url = redact_url(direct.get("url") or "")
        if "vcs_info" in direct:
            vcs = direct["vcs_info"]
            checkout: dict[str, Any] = {
                "kind": "vcs",
                "vcs": vcs.get("vcs"),
                "url": url,
                "commit": vcs.get("commit_id"),
            }
            if url.startswith("file:"):
                checkout["unreproducible"] = "a VCS checkout on this machine's disk"
            return checkout
        if direct.get("dir_info", {}).get("editable"):
            return {
                "kind": "editable",
                "path": _file_path(url),
                "unreproducible": "an editable install of a local directory",
            }
        if "dir_info" in direct:
            return {"kind": "local", "path": _file_path(url), "unreproducible": "installed from a local directory"}
        if url.startswith("file:"):
            archive: dict[str, Any] = {
                "kind": "archive",
                "path": _file_path(url),
                "unreproducible": "installed from a local file",
            }
            hashes = direct.get("archive_info", {}).get("hashes") or {}
            if "sha256" in hashes:
                archive["sha256"] = hashes["sha256"]
            return archive
        return {"kind": "url", "url": url}
    installer = (dist.get("installer") or "").lower()
    if installer == "conda":
        return {
            "kind": "conda",
            "unreproducible": "installed by conda; its pip metadata cannot be reinstalled from an index",
        }
    source: dict[str, Any] = {"kind": "index"}
    name = canonical_name(dist["name"])
    version = dist["version"]
    if "+" in version:
        label = version.split("+", 1)[1]
        if name in _TORCH_FAMILY and _TORCH_LABEL.match(label):
            source["index"] = f"https://download.pytorch.org/whl/{label}"
            source["index_known"] = "inferred from the local version label +" + label
        else:
            source["index"] = None
            source["index_known"] = (
                f"unknown: the local version +{label} is on no public index and the index it came from was not recorded"
            )
    if not installer:
        source["note"] = "no INSTALLER record (distutils or a system package); assumed to come from an index"
    return source


def find_local_wheel(pkg: dict[str, Any], find_links: list[str], python: str = "") -> None:
    """Where a distribution with a local version label (``torch==2.13.0+cpu``) can be fetched again: the wheel
    of that very name and version in one of pip's find-links folders on this machine (``found_in``, and
    ``wheel``, the path freeze gives it beside the lock). No public index has the label.
    """
    prefix = (re.sub(r"[-_.]+", "_", pkg["name"]) + "-" + pkg["version"] + "-").lower()
    for folder in find_links:
        path = _file_path(folder)
        try:
            found = sorted(f for f in os.listdir(path) if f.lower().startswith(prefix) and f.endswith(".whl"))
        except OSError:
            continue
        if found:  # the kernel's own Python tag first (cp311 for 3.11), a pure-Python wheel next
            tag = "-cp" + "".join(python.split(".")[:2]) + "-"
            found.sort(key=lambda f: (tag not in f, "-py3-none-" not in f, f))
            pkg["source"].update(found_in=path, wheel=f"wheels/{found[0]}")
            return


def _file_path(url: str) -> str:
    """The path of a ``file:`` URL, decoded: pip writes a ``+cpu`` wheel's ``+`` as ``%2B``, a space as ``%20``."""
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    return url2pathname(urlsplit(url).path)


def build_lock(doc: dict[str, Any], *, kernel: str | None, created_at: float, host: str) -> dict[str, Any]:
    """The lock for one introspected environment (without wheels built for unreproducible packages yet)."""
    packages, excluded = _packages(doc)
    _check_duplicates(packages)
    pip_settings = doc.get("pip", {}).get("settings", {})
    for pkg in packages:
        if pkg["source"]["kind"] == "index" and "+" in pkg["version"]:
            find_local_wheel(pkg, pip_settings.get("find-links", []), doc["python"]["version"])
    torch = doc.get("torch") or None
    lock: dict[str, Any] = {
        "schema": LOCK_SCHEMA,
        "python": {"version": doc["python"]["version"], "implementation": doc["python"]["implementation"]},
        "platform": {
            "sys_platform": doc["platform"]["sys_platform"],
            "machine": doc["platform"]["machine"],
            "libc": doc["platform"]["libc"],
        },
        "indexes": {
            # records for people: pip reads the credentials from its own configuration (a BuildKit secret)
            "index_url": next((redact_url(u) for u in pip_settings.get("index-url", [])), None),
            "extra_index_urls": [redact_url(u) for u in pip_settings.get("extra-index-url", [])],
            "find_links": [redact_url(u) for u in pip_settings.get("find-links", [])],
            "no_index": bool(pip_settings.get("no-index")),
        },
        "packages": packages,
        "excluded": excluded,
        "torch": {k: torch.get(k) for k in ("version", "cuda", "cudnn", "hip")}
        if torch and "version" in torch
        else None,
        "env": doc.get("env", {}),
        "hardware": {"cpu": doc.get("cpu"), "gpu": doc.get("gpu")},
        "origin": {
            "kernel": kernel,
            "executable": doc["python"]["executable"],
            "prefix": doc["python"]["prefix"],
            "conda": doc["python"]["conda"],
            "platform_release": doc["platform"]["release"],
            "pip_config_files": doc.get("pip", {}).get("files", []),
            "host": host,
            "created_at": created_at,
        },
        "warnings": _warnings(packages),
    }
    lock["content_hash"] = content_hash(lock)
    return lock


def _packages(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The introspected distributions, sorted: those the lock pins, and those it leaves out with the reason."""
    packages, excluded = [], []
    for dist in sorted(doc["distributions"], key=lambda d: (canonical_name(d["name"]), d["version"])):
        name = canonical_name(dist["name"])
        if (name, dist["version"]) in BOGUS:
            excluded.append(
                {"name": dist["name"], "version": dist["version"], "reason": BOGUS[(name, dist["version"])]}
            )
            continue
        if name in RUNTIME_PACKAGES:
            excluded.append({"name": dist["name"], "version": dist["version"], "reason": "provided by the job runtime"})
            continue
        packages.append(
            {
                "name": dist["name"],
                "version": dist["version"],
                "installer": dist.get("installer"),
                "requested": bool(dist.get("requested")),
                "source": classify(dist),
                **({"requires_python": dist["requires_python"]} if dist.get("requires_python") else {}),
            }
        )
    return packages, excluded


def _check_duplicates(packages: list[dict[str, Any]]) -> None:
    seen: dict[str, str] = {}
    for pkg in packages:
        name = canonical_name(pkg["name"])
        if name in seen and seen[name] != pkg["version"]:
            pkg.setdefault("source", {})["note"] = f"also installed as {seen[name]}: the environment holds two copies"
        seen[name] = pkg["version"]


def _warnings(packages: list[dict[str, Any]]) -> list[str]:
    out = []
    for pkg in packages:
        source = pkg["source"]
        if source.get("kind") == "index" and source.get("index", "") is None:
            out.append(f"{pkg['name']}=={pkg['version']}: {source['index_known']}")
    return out


def unreproducible(lock: dict[str, Any]) -> list[dict[str, Any]]:
    """The packages an index cannot give back, each with its reason."""
    return [p for p in lock["packages"] if "unreproducible" in p["source"] and "wheel" not in p["source"]]


def render_requirements(lock: dict[str, Any]) -> str:
    """A pinned requirements.txt with the index lines needed to reinstall the lock (``pip install --no-deps -r``)."""
    lines = [
        f"# jupyter-promote environment lock {lock['content_hash']}",
        f"# Python {lock['python']['version']} ({lock['python']['implementation']}), "
        f"{lock['platform']['sys_platform']} {lock['platform']['machine']}",
        "# Reinstall exactly with: pip install --no-deps -r requirements.txt",
    ]
    indexes = lock["indexes"]
    if indexes["no_index"]:
        lines.append("--no-index")
    if indexes["index_url"]:
        lines.append(f"--index-url {indexes['index_url']}")
    for url in indexes["extra_index_urls"]:
        lines.append(f"--extra-index-url {url}")
    for link in indexes["find_links"]:
        lines.append(f"--find-links {link}")
    inferred = sorted({p["source"]["index"] for p in lock["packages"] if p["source"].get("index")})
    for url in inferred:
        users = ", ".join(p["name"] for p in lock["packages"] if p["source"].get("index") == url)
        lines.append(f"# index for {users} (inferred from local version labels)")
        lines.append(f"--extra-index-url {url}")
    for pkg in lock["packages"]:
        source = pkg["source"]
        kind = source["kind"]
        if "wheel" in source:
            lines.append(f"./{source['wheel']}")
        elif kind == "vcs":
            commit = f"@{source['commit']}" if source.get("commit") else ""
            lines.append(f"{pkg['name']} @ {source['vcs']}+{source['url']}{commit}")
        elif kind == "url":
            lines.append(f"{pkg['name']} @ {source['url']}")
        else:
            lines.append(f"{pkg['name']}=={pkg['version']}")
    return "\n".join(lines) + "\n"
