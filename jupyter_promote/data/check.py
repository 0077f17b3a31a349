"""Before a submit: is an input there, and can these credentials read it? One listing, a few seconds at most.

:func:`check_data` lists the input's objects as the job's node will (one attempt, a connect timeout of a few
seconds) and returns what it found, or raises the input's one-line
:class:`~jupyter_promote.errors.UsageError`: unknown scheme or implementation missing, bucket missing, nothing
under the prefix, access denied, no credentials, endpoint unreachable, or a key that cannot be fetched as a
file (``..``). The submitter runs it so that a job never waits in a queue to fail on its first read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .remote import bucket_of, list_objects, open_store, store_errors
from .spec import DataSpec, check_protocol


@dataclass(frozen=True)
class DataSummary:
    """What an input holds: ``objects`` (files) and ``total_bytes``."""

    objects: int
    total_bytes: int

    def describe(self) -> str:
        """``12 objects, 1.5 GB``."""
        size = float(self.total_bytes)
        for unit in ("bytes", "kB", "MB", "GB", "TB"):
            if size < 1000 or unit == "TB":
                amount = f"{size:.0f}" if unit == "bytes" else f"{size:.1f}"
                break
            size /= 1000
        return f"{self.objects} object{'s' if self.objects != 1 else ''}, {amount} {unit}"


def check_data(spec: DataSpec, storage_options: Mapping[str, Any] | None = None) -> DataSummary:
    """The objects under ``spec.url`` counted, or the input's one-line :class:`UsageError` saying why not.

    Parameters
    ----------
    spec
        The input, from :func:`~jupyter_promote.data.spec.parse_data`.
    storage_options
        The filesystem's options (``endpoint_url``, ``key``, ``secret``, ...); empty to use the environment's
        (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL`` for S3).
    """
    who = spec.subject
    check_protocol(spec.protocol, who)
    missing = f"bucket {bucket_of(spec.path)!r} does not exist"
    with store_errors(who, spec.url, spec.protocol, storage_options, missing=missing):
        fs = open_store(spec.protocol, storage_options, patient=False)
        objects = list_objects(fs, spec.path, who)
    if not objects:
        raise who.error(f"no objects under {spec.url} (an empty or misspelled prefix)")
    return DataSummary(len(objects), sum(o.size for o in objects))
