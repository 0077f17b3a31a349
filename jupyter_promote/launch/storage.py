"""The submitter's side of a job's data (:mod:`jupyter_promote.data`): its inputs checked before anything is
made, with the job's own credentials, and its stored outputs brought back into its run directory."""

from __future__ import annotations

from typing import Any

from .prepared import Prepared


def credentials_of(secrets: dict[str, str]) -> dict[str, str]:
    """fsspec's S3 options from the job's own S3 secrets (their values, read by the submitter): the check
    before submit reads the store as the job will."""
    names = {"AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"}
    return {option: secrets[name] for name, option in names.items() if name in secrets}


def check_inputs(inputs: dict[str, str], storage_options: dict[str, Any]) -> None:
    """Each input is there and readable (one listing each), else its one-line error before anything is made."""
    if not inputs:
        return
    from ..data import check_data, parse_data

    for name, url in inputs.items():
        check_data(parse_data(f"{name}={url}"), storage_options)


def bring_back(prepared: Prepared) -> None:
    """The outputs a job on a target that shares no filesystem stored at ``artifacts_url``, into its run
    directory's ``work/``; a store that fails is reported in an alert, the job's state stays."""
    from ..data import download_tree

    record, run = prepared.record, prepared.run
    url = f"{record.artifacts_url.rstrip('/')}/{record.id}/work"
    try:
        download_tree(url, run.work_dir, {**record.storage_options, **credentials_of(prepared.secrets)})
    except Exception as exc:
        if "no objects" not in str(exc):  # a job that wrote nothing stored nothing
            message = f"the job's outputs at {url} could not be brought back: {exc}"
            prepared.log.emit("alert", kind="artifacts", action="alert", source="pipeline", message=message)
