"""A tree of files as content-addressed folders, each small enough for one upload, and back.

An engine that carries a job's files as packages (Ray: each ``py_modules`` entry is one zip, one HTTP
request, which the dashboard caps at 100 MiB) cannot take a frozen environment whole: 158 packages come to
far more than one request holds. :func:`pack` puts a tree's files in *shards* (``promote_shard_HASH``), each
at most ``cap`` bytes once zipped (Ray zips without compression, and wheels do not compress anyway: the cap
counts every file's bytes and its zip headers), and a file too large for any shard in *parts*
(``promote_part_HASH``, one file each). A manifest names, for every file of the tree, its size, its sha256
and where it travels; :func:`gather` puts the tree back together from the folders that arrived and checks
each file against it.

Every folder's name is the hash of what it holds, so the same files make the same folders, job after job,
and the engine's own package cache (keyed by content) uploads each once. Where one shard ends is decided by
its files alone, as content-defined chunking does with bytes: in name order, a shard ends after a file
whose content hash falls under ``size / target`` (on average every ``target`` bytes), or where the next
file would not fit. Adding or removing one package changes its own shard (and, rarely, the next one, where
the cap had cut a shard short); every other shard keeps its name. First-fit over sorted names would move
every boundary after the change; hash buckets would need a fixed count and could not promise the cap.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The most bytes one upload holds by default: well under Ray's 100 MiB request limit.
CAP_BYTES = 48 << 20
#: What a zip adds for a folder (end records, slack), and per file beyond twice its path's length.
_ZIP_BASE = 4096
_ZIP_PER_FILE = 128
#: A folder's name in the zip (``promote_shard_`` and 20 hex digits) and a slash.
_FOLDER_NAME = 36
_CHUNK = 1 << 20


class ShardError(Exception):
    """A tree that cannot be packed, or a packed tree that did not arrive whole."""


@dataclass(frozen=True)
class Entry:
    """One file of the tree: its path in the tree (POSIX), size and sha256, and where it is now."""

    rel: str
    size: int
    sha256: str
    path: Path


def digest_of(path: Path) -> str:
    """The sha256 of ``path``'s bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def entries(root: Path, skip: Callable[[str], bool] = lambda rel: False) -> list[Entry]:
    """Every regular file under ``root`` (links followed), in name order, hashed."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if not skip(rel):
            found.append(Entry(rel, path.stat().st_size, digest_of(path), path))
    return found


def zipped_bytes(rel: str, size: int) -> int:
    """What one file adds to a folder's (uncompressed) zip: its bytes and its two headers."""
    return size + _ZIP_PER_FILE + 2 * (_FOLDER_NAME + len(rel.encode()))


def folder_bytes(folder: Path) -> int:
    """How large ``folder``'s zip comes to at most (its files stored, not compressed)."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return _ZIP_BASE + sum(zipped_bytes(p.relative_to(folder).as_posix(), p.stat().st_size) for p in files)


def plan(files: Iterable[Entry], cap: int = CAP_BYTES) -> tuple[list[list[Entry]], list[Entry]]:
    """The shards ``files`` go in (name order, content-defined ends, each under ``cap`` zipped), and the files
    too large for any shard (they go in parts)."""
    if cap < 1 << 20:
        raise ShardError(f"an upload cap of {cap} bytes is too small (at least 1 MiB)")
    target = max(1, cap // 3)
    shards: list[list[Entry]] = []
    large: list[Entry] = []
    current: list[Entry] = []
    used = _ZIP_BASE
    for entry in sorted(files, key=lambda e: e.rel):
        cost = zipped_bytes(entry.rel, entry.size)
        if _ZIP_BASE + cost > cap:
            large.append(entry)
            continue
        if current and used + cost > cap:
            shards.append(current)
            current, used = [], _ZIP_BASE
        current.append(entry)
        used += cost
        if int(entry.sha256[:13], 16) / 16**13 < entry.size / target:  # a content-defined end
            shards.append(current)
            current, used = [], _ZIP_BASE
    if current:
        shards.append(current)
    return shards, large


def shard_name(shard: Iterable[Entry]) -> str:
    """A shard's folder name: the hash of its files' paths and contents (what Ray's package hash covers)."""
    digest = hashlib.sha256()
    for entry in sorted(shard, key=lambda e: e.rel):
        digest.update(f"{entry.rel}\0{entry.sha256}\n".encode())
    return f"promote_shard_{digest.hexdigest()[:20]}"


def part_bytes(cap: int) -> int:
    """The bytes in each part of a large file: a part's folder (one file) stays under ``cap``."""
    return cap - _ZIP_BASE - zipped_bytes("part", 0)


def pack(files: list[Entry], out: Path, cap: int = CAP_BYTES) -> tuple[dict[str, dict[str, Any]], list[Path]]:
    """``files`` as shard and part folders in ``out`` (those already there are kept: same name, same files).

    Returns the manifest's files (path in the tree -> size, sha256 and ``shard`` or ``parts``) and the
    folders, shards first, in a stable order."""
    shards, large = plan(files, cap)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, Any]] = {}
    folders: list[Path] = []
    for shard in shards:
        folder = out / shard_name(shard)
        if not folder.is_dir():
            _write_shard(shard, folder)
        folders.append(folder)
        manifest.update({e.rel: {"size": e.size, "sha256": e.sha256, "shard": folder.name} for e in shard})
    for entry in large:
        names = _write_parts(entry, out, part_bytes(cap))
        manifest[entry.rel] = {"size": entry.size, "sha256": entry.sha256, "parts": names}
        folders += [out / name for name in dict.fromkeys(names)]
    return dict(sorted(manifest.items())), folders


def _write_shard(shard: list[Entry], folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".shard-", dir=folder.parent))
    try:
        for entry in shard:
            target = staging / entry.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:  # the same bytes twice on one disk cost nothing
                os.link(entry.path, target)
            except OSError:
                shutil.copyfile(entry.path, target)
        os.replace(staging, folder)  # whole or not at all; one made meanwhile by another job is the same
    except OSError:
        if not folder.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_parts(entry: Entry, out: Path, size: int) -> list[str]:
    names = []
    with open(entry.path, "rb") as f:
        for chunk in iter(lambda: f.read(size), b""):
            name = f"promote_part_{hashlib.sha256(chunk).hexdigest()[:20]}"
            if not (out / name).is_dir():
                staging = Path(tempfile.mkdtemp(prefix=".part-", dir=out))
                (staging / "part").write_bytes(chunk)
                try:
                    os.replace(staging, out / name)
                except OSError:
                    shutil.rmtree(staging, ignore_errors=True)
            names.append(name)
    return names


def gather(
    manifest: dict[str, dict[str, Any]], locate: Callable[[str], Path | None], into: Path, link: bool = True
) -> None:
    """The tree back in ``into`` from the folders that arrived (``locate``: a folder's name -> where it is, or
    None), each file checked against the manifest. ``link``: the shards' files as links (read only, as pip
    reads wheels); else copies (a notebook may write its inputs).

    Raises
    ------
    ShardError
        A folder that did not arrive (naming it and the files it held), or a file that arrived damaged.
    """
    into.mkdir(parents=True, exist_ok=True)
    missing: dict[str, list[str]] = {}
    found: dict[str, Path] = {}
    for name in sorted({n for e in manifest.values() for n in e.get("parts") or [e["shard"]]}):
        where = locate(name)
        if where is None:
            missing[name] = [rel for rel, e in manifest.items() if name in (e.get("parts") or [e["shard"]])]
        else:
            found[name] = where
    if missing:
        name, rels = next(iter(missing.items()))
        raise ShardError(
            f"{len(missing)} of the {len(missing) + len(found)} folders sent did not arrive ({name}, which held "
            f"{', '.join(rels[:3])}{' ...' if len(rels) > 3 else ''})"
        )
    for rel, entry in manifest.items():
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        sources = [found[n] / "part" for n in entry["parts"]] if "parts" in entry else [found[entry["shard"]] / rel]
        if not all(source.is_file() for source in sources):
            raise ShardError(f"{rel} did not arrive with the folders that should hold it")
        if link and len(sources) == 1:
            target.symlink_to(sources[0])
        else:
            with open(target, "wb") as out:
                for source in sources:
                    with open(source, "rb") as f:
                        shutil.copyfileobj(f, out, _CHUNK)
        size = target.stat().st_size
        if size != entry["size"] or digest_of(target) != entry["sha256"]:
            raise ShardError(f"{rel} arrived damaged ({size} bytes of {entry['size']}, or its sha256 differs)")
