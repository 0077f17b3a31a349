"""A run's outputs and checkpoints through storage, where the target shares no filesystem with the submitter.

- :func:`upload_tree` copies a folder's files to ``URL/<relative path>`` (on the node, when a job ends or
  saves a checkpoint). Regular files only; a symbolic link is followed only when it leads to a file inside
  the folder (a link elsewhere would copy a file of the node's that the job did not write).
- :func:`download_tree` copies every object under a URL into a folder (on the submitter, or on a node that
  resumes from a checkpoint). Every key is checked before anything is written: a key that would land outside
  the folder (``..``, ``.``, an empty segment, a leading ``/``, or a link inside the folder) refuses the whole
  download. Files arrive under a hidden temporary folder inside ``folder`` and are moved into place only once
  all of them came back whole, so a failed download leaves no partial file under a final name.

Both return the relative keys they copied, sorted. Errors are one line about ``artifacts_url``
(:data:`~jupyter_promote.data.spec.ARTIFACTS`, or the subject given), never naming a credential.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .remote import bucket_of, download, list_objects, local_path, open_store, store_errors
from .spec import ARTIFACTS, Subject, parse_url


def files_of(folder: Path) -> list[str]:
    """The relative paths (``/``-separated, sorted) of the files to upload from ``folder``."""
    root = folder.resolve()
    found = []
    for path in folder.rglob("*"):
        if path.is_symlink():
            target = path.resolve()
            if not (target.is_file() and target.is_relative_to(root)):
                continue
        elif not path.is_file():
            continue
        found.append(path.relative_to(folder).as_posix())
    return sorted(found)


def upload_tree(
    folder: str | os.PathLike[str],
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    who: Subject = ARTIFACTS,
) -> list[str]:
    """Every file under ``folder`` to ``url/<relative path>``; the relative paths uploaded.

    Parameters
    ----------
    folder
        The local folder (a run's outputs, a checkpoint folder).
    url
        Where to (``s3://bucket/prefix``); objects already there under other names are left alone.
    storage_options
        The filesystem's options; empty to use the environment's (``AWS_*`` for S3).
    who
        Whom errors are about.
    """
    url = parse_url(url, who)
    protocol, path = url.split("://", 1)
    source = Path(folder)
    if not source.is_dir():
        raise who.error(f"{source} is not a folder: nothing to upload")
    keys = files_of(source)
    if not keys:
        return []
    missing = f"bucket {bucket_of(path)!r} does not exist"
    with store_errors(who, url, protocol, storage_options, missing=missing):
        fs = open_store(protocol, storage_options, patient=True)
        fs.put([str(source / key) for key in keys], [f"{path}/{key}" for key in keys])
    return keys


def download_tree(
    url: str,
    folder: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    who: Subject = ARTIFACTS,
) -> list[str]:
    """Every object under ``url`` into ``folder`` at its relative key (files there are replaced); the keys.

    Parameters
    ----------
    url
        Where from (``s3://bucket/prefix``); an empty prefix downloads nothing.
    folder
        The local folder (created when missing).
    storage_options
        The filesystem's options; empty to use the environment's (``AWS_*`` for S3).
    who
        Whom errors are about.
    """
    url = parse_url(url, who)
    protocol, path = url.split("://", 1)
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    missing = f"bucket {bucket_of(path)!r} does not exist"
    with store_errors(who, url, protocol, storage_options, missing=missing):
        fs = open_store(protocol, storage_options, patient=True)
        objects = list_objects(fs, path, who)
    places = [local_path(target, obj.key, who) for obj in objects]  # every key checked before any write
    for place in places:
        if place.is_dir():
            raise who.error(f"object key {place.relative_to(target).as_posix()!r} is a folder in {target}: refused")
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=target))
    try:
        vanished = f"an object under {url} vanished while it was read: try again"
        with store_errors(who, url, protocol, storage_options, missing=vanished):
            download(fs, objects, partial, who)
        for obj, place in zip(objects, places, strict=True):
            try:
                place.parent.mkdir(parents=True, exist_ok=True)
                os.replace(partial.joinpath(*obj.key.split("/")), place)
            except OSError as exc:
                raise who.error(f"object key {obj.key!r} cannot be written in {target}: {exc.strerror}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return [obj.key for obj in objects]
