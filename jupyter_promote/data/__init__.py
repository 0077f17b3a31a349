"""Data that does not fit in a request: inputs read from storage the cluster reads, and artifacts written there.

A request carries at most a few hundred kilobytes (Kubernetes) to 100 MB (Ray); a dataset or a checkpoint
lives on storage every node reads (S3 and what else fsspec knows). Where each part runs:

- the SUBMITTER parses ``--data NAME=URL`` (:func:`parse_data`, no network, fsspec's registry only) and checks
  that the input is there and readable with the job's credentials (:func:`check_data`, one listing);
- the JOB's runner, on the node, before the kernel starts, fetches each input into the node's content cache
  (:func:`fetch`: a second job on the node downloads nothing) and, when the target shares no filesystem,
  uploads the run's outputs and checkpoints (:func:`upload_tree`), which the submitter brings back
  (:func:`download_tree`).

Credentials are never arguments of a request: the store's client reads them from the job's environment
(for S3 ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL``,
``AWS_DEFAULT_REGION``, delivered as secrets) or from ``storage_options``; no message names one.
fsspec and s3fs (``pip install 'jupyter_promote[data]'``) are imported only when a function needs them.

Modules: :mod:`.spec` (parsing), :mod:`.remote` (the store: timeouts, listing, errors), :mod:`.check`,
:mod:`.cache` (the node's cache), :mod:`.artifacts`.
"""

from __future__ import annotations

from .artifacts import download_tree, upload_tree
from .cache import DEFAULT_MAX_BYTES, FetchResult, evict, fetch
from .check import DataSummary, check_data
from .spec import ARTIFACTS, DataSpec, Subject, parse_data, parse_url

__all__ = [
    "ARTIFACTS",
    "DEFAULT_MAX_BYTES",
    "DataSpec",
    "DataSummary",
    "FetchResult",
    "Subject",
    "check_data",
    "download_tree",
    "evict",
    "fetch",
    "parse_data",
    "parse_url",
    "upload_tree",
]
