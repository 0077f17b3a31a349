"""A pack group -> a deterministic tar, relocated to the image's prefix, every file checked as it is read.

Each file is read once: hashed against its ``RECORD`` hash (a difference means the environment changed
since it was frozen), searched for the kernel's prefix (a file that embeds it cannot be relocated, except a
script's ``#!`` line, rewritten to the image's interpreter; compiled ``.pyc`` files are exempt, as the import
system replaces the path they were compiled at), and written. The tar is the same bytes for the same
files: members sorted, owner root, modes 0644/0755, folders at mtime 0. A file keeps its own mtime, in
whole seconds: the ``.pyc`` files pip compiled record their source's mtime, and a packed source with another
one would be compiled again at every import.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

from .pack import PackFile, PackGroup, PackRefused

_CHUNK = 8 << 20


def record_digest(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _read(file: PackFile, prefix: bytes) -> tuple[bytes | None, bool, str]:
    """(the whole content when small or rewritten, else None; whether it embeds ``prefix``; its RECORD-style
    sha256). Large files are streamed twice (here and into the tar), never held whole."""
    digest = hashlib.sha256()
    embeds = False
    tail = b""
    chunks: list[bytes] = []
    size = 0
    with open(file.source, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            embeds = embeds or prefix in tail + chunk
            tail = chunk[-len(prefix) :]
            size += len(chunk)
            if size <= _CHUNK:
                chunks.append(chunk)
    return (b"".join(chunks) if size <= _CHUNK else None), embeds, record_digest(digest.digest())


def _relocated(file: PackFile, group: PackGroup, content: bytes | None) -> bytes:
    """A script's content with its ``#!`` line naming the image's prefix; refused if the prefix is elsewhere."""
    where = f"{file.target} ({file.dist}) embeds the kernel's prefix {group.source_prefix}"
    in_bin = file.target.startswith(group.target_prefix + "/bin/")
    if content is None or not in_bin or not content.startswith(b"#!"):
        raise PackRefused(f"{where}: it cannot be relocated")
    first, sep, rest = content.partition(b"\n")
    if group.source_prefix.encode() in rest:
        raise PackRefused(f"{where} beyond its #! line: it cannot be relocated")
    return first.replace(group.source_prefix.encode(), group.target_prefix.encode()) + sep + rest


def _info(name: str, mode: int, mtime: int, size: int = 0, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode, info.mtime, info.size = mode, mtime, size
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_tar(group: PackGroup, path: Path) -> dict[str, dict[str, object]]:
    """Write ``group``'s tar at ``path``; returns its manifest: image path -> {sha256 (hex), record (whether a
    RECORD hash vouched for it), relocated}. Raises :class:`PackRefused` on a file that cannot be packed."""
    prefix = group.source_prefix.encode()
    manifest: dict[str, dict[str, object]] = {}
    files = sorted(group.files, key=lambda f: f.target)
    folders = sorted({str(p) for f in files for p in Path(f.target.lstrip("/")).parents if str(p) != "."})
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for folder in folders:
            tar.addfile(_info(folder, 0o755, 0, directory=True))
        for file in files:
            try:
                content, embeds, digest = _read(file, prefix)
                stat = os.stat(file.source)
            except OSError as exc:
                raise PackRefused(f"{file.source} ({file.dist}): cannot be read ({exc.strerror})") from None
            if file.record_hash and file.record_hash != digest:
                raise PackRefused(
                    f"{file.source} ({file.dist}) differs from its RECORD: the environment changed since it was frozen"
                )
            relocated = embeds and not file.source.endswith(".pyc")
            if relocated:
                content = _relocated(file, group, content)
            mode = 0o755 if stat.st_mode & 0o111 else 0o644
            name = file.target.lstrip("/")
            if content is not None:
                tar.addfile(_info(name, mode, int(stat.st_mtime), len(content)), io.BytesIO(content))
                sha = hashlib.sha256(content).hexdigest()
            else:
                with open(file.source, "rb") as f:
                    tar.addfile(_info(name, mode, int(stat.st_mtime), stat.st_size), f)
                sha = base64.urlsafe_b64decode(digest.removeprefix("sha256=") + "==").hex()
            manifest[file.target] = {"sha256": sha, "record": bool(file.record_hash), "relocated": relocated}
    return manifest


def write_layers(
    groups: tuple[PackGroup, ...], context: Path, on_line: Callable[[str], None]
) -> dict[str, dict[str, object]]:
    """Every group's tar into the build context; the manifest of all of them."""
    manifest: dict[str, dict[str, object]] = {}
    for group in groups:
        path = context / group.tar
        manifest.update(write_tar(group, path))
        on_line(f"pack: {group.tar} ({len(group.files)} files, {path.stat().st_size / 1e6:.1f} MB)")
    return manifest
