"""A node's cache of inputs, by content: each input downloaded once per node, whichever jobs ask for it.

:func:`fetch` runs in the job's runner process, before the kernel starts. Its cache key is a hash of the
input's listing (every object's key, size and version, S3's ETag, sorted): an unchanged input has the same
key, so a second fetch downloads nothing; a changed, added or removed object makes a new key, so a new
fetch; two URLs that hold the same objects share one entry.

Layout under ``cache_root`` (one filesystem, so that a rename is atomic)::

    entries/KEY/      complete inputs; the job reads them in place (files are made read-only)
    meta/KEY.json     the entry's URL, bytes and objects; the file's modification time is its last use
    locks/KEY.lock    flock: exclusive while KEY is fetched or evicted, shared while a job uses it
    tmp/KEY.*/        fetches in progress (a fetch that died leaves one: the next fetch of KEY removes it)
    evict.lock        one eviction at a time

What it guarantees:

- an entry appears complete or not at all: objects are downloaded into ``tmp/``, each checked against its
  listed size, the input is listed again (an object that changed meanwhile starts the fetch over, three
  times at most), and only then is the folder renamed into ``entries/``;
- two jobs on one node download once: the second waits on KEY's lock, then finds the entry;
- an entry in use is never evicted: the :class:`FetchResult` holds a shared lock on KEY until
  :meth:`FetchResult.release` (the runner keeps it for the job's life; the OS drops it if the runner dies);
- the cache stays within ``max_bytes``: after each fetch the least recently used entries that no job uses
  are removed until it fits (the entry just fetched stays, even alone larger than ``max_bytes``).

Lock files (empty) are never removed: removing a lock file others may hold open would split the lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .remote import RemoteObject, bucket_of, download, list_objects, open_store, store_errors
from .spec import DataSpec

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

#: The cache's size when none is given: beyond it, least recently used entries go.
DEFAULT_MAX_BYTES = 50 * 10**9
#: Fetches of an input that keeps changing while it is downloaded, before giving up.
ATTEMPTS = 3


@dataclass
class FetchResult:
    """A fetched input: ``path`` to read (the entry's folder, or its one file when the URL names an object).

    Holds a shared lock on the entry so that no eviction removes it: call :meth:`release` (or use it as a
    context manager) when the job no longer reads it.
    """

    path: Path
    bytes_downloaded: int
    cached: bool
    key: str
    objects: int
    total_bytes: int
    _lease: int = field(default=-1, repr=False)

    def release(self) -> None:
        """Let the entry be evicted again."""
        if self._lease >= 0:
            os.close(self._lease)
            self._lease = -1

    def __enter__(self) -> FetchResult:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


class Layout:
    """The cache's folders under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries, self.meta, self.locks, self.tmp = (root / n for n in ("entries", "meta", "locks", "tmp"))

    def make(self) -> None:
        for folder in (self.entries, self.meta, self.locks, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)

    def lock(self, key: str) -> int:
        """An open descriptor on KEY's lock file (not locked yet)."""
        return os.open(self.locks / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)

    def used(self, key: str, spec: DataSpec, objects: list[RemoteObject]) -> None:
        """Record KEY's metadata, or mark it used now (its modification time orders evictions)."""
        meta = self.meta / f"{key}.json"
        try:
            os.utime(meta)
        except FileNotFoundError:
            body = {"url": spec.url, "bytes": sum(o.size for o in objects), "objects": len(objects)}
            partial = meta.with_suffix(f".{os.getpid()}.part")
            partial.write_text(json.dumps(body))
            os.replace(partial, meta)


def listing(objects: list[RemoteObject]) -> list[tuple[str, int, str]]:
    """What the cache key is made of: each object's key, size and version."""
    return [(o.key, o.size, o.version) for o in objects]


def content_key(objects: list[RemoteObject]) -> str:
    """The hash of the sorted listing; an object without a version (a store that gives none) makes it unique
    to this fetch, since its content cannot be told from another's."""
    text = json.dumps(listing(sorted(objects, key=lambda o: o.key)), separators=(",", ":"))
    if any(not o.version for o in objects):
        text += f"|{os.getpid()}|{os.urandom(8).hex()}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fetch(
    spec: DataSpec,
    cache_root: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> FetchResult:
    """Input ``spec`` in this node's cache under ``cache_root``, downloaded unless an entry holds its content.

    Parameters
    ----------
    spec
        The input (:func:`~jupyter_promote.data.spec.parse_data`).
    cache_root
        The node's cache folder (created when missing).
    storage_options
        The filesystem's options; empty to use the environment's (``AWS_*`` for S3).
    max_bytes
        The cache's size: least recently used entries no job holds are evicted beyond it.

    Returns
    -------
    FetchResult
        Holding a shared lock on the entry until released. Errors are the input's one-line UsageError.
    """
    who = spec.subject
    layout = Layout(Path(cache_root))
    layout.make()
    missing = f"bucket {bucket_of(spec.path)!r} does not exist"
    with store_errors(who, spec.url, spec.protocol, storage_options, missing=missing):
        fs = open_store(spec.protocol, storage_options, patient=True)
    for _ in range(ATTEMPTS):
        with store_errors(who, spec.url, spec.protocol, storage_options, missing=missing):
            objects = list_objects(fs, spec.path, who)
        if not objects:
            raise who.error(f"no objects under {spec.url} (an empty or misspelled prefix)")
        result = _fetch_listed(fs, spec, layout, objects, storage_options)
        if result is not None:
            evict(layout.root, max_bytes, keep=result.key)
            return result
    raise who.error(f"{spec.url} kept changing while it was fetched ({ATTEMPTS} tries): fetch it when it is still")


def _fetch_listed(
    fs: AbstractFileSystem,
    spec: DataSpec,
    layout: Layout,
    objects: list[RemoteObject],
    storage_options: Mapping[str, Any] | None,
) -> FetchResult | None:
    """The entry of this listing, held shared; downloaded first, under KEY's exclusive lock, when missing. None
    when the input changed meanwhile, or the entry was evicted as the lock changed hands: list again.

    An entry that exists is taken shared at once, never exclusive: a job whose inputs share content (two
    names for one input) holds the first shared, and would wait on itself for an exclusive lock."""
    key = content_key(objects)
    entry = layout.entries / key
    lease = layout.lock(key)
    try:
        cached, downloaded = entry.is_dir(), 0
        if not cached:
            fcntl.flock(lease, fcntl.LOCK_EX)  # one download per node: others wait here, then find the entry
            cached = entry.is_dir()
            if not cached:
                got = _download_entry(fs, spec, layout, key, objects, storage_options)
                if got is None:
                    os.close(lease)
                    return None
                downloaded = got
        # from exclusive, not atomic: an eviction may slip in between, hence the look below
        fcntl.flock(lease, fcntl.LOCK_SH)
        if not entry.is_dir():
            os.close(lease)
            return None
        layout.used(key, spec, objects)
    except BaseException:
        os.close(lease)
        raise
    single = len(objects) == 1 and objects[0].path == spec.path
    path = entry / objects[0].key if single else entry
    total = sum(o.size for o in objects)
    return FetchResult(path, downloaded, cached, key, len(objects), total, lease)


def _download_entry(
    fs: AbstractFileSystem,
    spec: DataSpec,
    layout: Layout,
    key: str,
    objects: list[RemoteObject],
    storage_options: Mapping[str, Any] | None,
) -> int | None:
    """Download into tmp/, check, list again, rename into entries/: the bytes, or None when it changed."""
    for stale in layout.tmp.glob(f"{key}.*"):  # a fetch of KEY that died: we hold KEY's lock
        shutil.rmtree(stale, ignore_errors=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=layout.tmp))
    try:
        vanished = f"an object under {spec.url} vanished while it was read: try again"
        with store_errors(spec.subject, spec.url, spec.protocol, storage_options, missing=vanished):
            downloaded = download(fs, objects, partial, spec.subject)
            again = list_objects(fs, spec.path, spec.subject)
        if listing(again) != listing(objects):
            return None
        _read_only(partial)
        layout.used(key, spec, objects)
        os.rename(partial, layout.entries / key)
        return downloaded
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _read_only(folder: Path) -> None:
    """Files made read-only, so that a job does not change the copy other jobs read (folders stay writable:
    eviction removes files from them)."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def evict(cache_root: str | os.PathLike[str], max_bytes: int, *, keep: str = "") -> list[str]:
    """Remove least recently used entries that no job holds until the cache is within ``max_bytes``; ``keep``
    is never removed. Returns the keys removed."""
    layout = Layout(Path(cache_root))
    layout.make()
    removed: list[str] = []
    with open(layout.root / "evict.lock", "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        known = []
        for meta in layout.meta.glob("*.json"):
            try:
                known.append((meta.stat().st_mtime, meta.stem, int(json.loads(meta.read_text())["bytes"])))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # removed meanwhile, or being written
        total = sum(size for _, _, size in known)
        for _, key, size in sorted(known):
            if total <= max_bytes:
                break
            if key != keep and _remove(layout, key):
                total -= size
                removed.append(key)
    return removed


def _remove(layout: Layout, key: str) -> bool:
    """Remove entry KEY unless a job holds it; whether it was removed."""
    lease = layout.lock(key)
    try:
        try:
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        trash = Path(tempfile.mkdtemp(prefix=f"{key}.evicted.", dir=layout.tmp))
        entry = layout.entries / key
        if entry.is_dir():
            os.rename(entry, trash / "entry")  # gone from entries/ at once, then deleted at leisure
        (layout.meta / f"{key}.json").unlink(missing_ok=True)
        shutil.rmtree(trash, ignore_errors=True)
        return True
    finally:
        os.close(lease)
