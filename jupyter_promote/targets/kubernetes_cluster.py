"""Reaching a Kubernetes cluster: the API client, a job's pod, deleting a job, and the API's refusals in one line.

The Kubernetes client is imported lazily, so the package imports without it; a missing client, a missing or
unusable kubeconfig each raise :class:`~jupyter_promote.errors.TargetError` naming the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import TargetError

#: Where a pod finds the namespace of its service account.
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def first_line(exc: BaseException, width: int = 200) -> str:
    """The first line of ``exc``'s message, at most ``width`` characters."""
    return str(exc).splitlines()[0][:width] if str(exc) else ""


def connect(kubeconfig: str, context: str) -> tuple[Any, str]:
    """An API client for ``kubeconfig`` (default: $KUBECONFIG, else ~/.kube/config; inside a pod without
    one: the pod's service account) and ``context``, with the namespace that context names ("" for none)."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise TargetError(
            "the kubernetes target needs the Kubernetes client: pip install 'jupyter-promote[kubernetes]'"
        ) from None
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    path = os.path.expanduser(path or "~/.kube/config")
    try:
        if os.path.isfile(path):
            api = config.new_client_from_config(path, context=context or None)
            contexts, active = config.list_kube_config_contexts(path)
            if context:
                active = next(c for c in contexts if c["name"] == context)
            return api, (active or {}).get("context", {}).get("namespace", "")
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
            return client.ApiClient(), SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except Exception as exc:
        raise TargetError(f"{path}: not a usable kubeconfig: {first_line(exc)}", subject=path) from None
    raise TargetError(
        f"no kubeconfig at {path} (KubernetesTarget.kubeconfig, $KUBECONFIG) and not inside a pod", subject=path
    )


def latest_pod(core: Any, handle: dict[str, Any]) -> Any | None:
    """The newest pod of the Job ``handle`` names (None before it has one)."""
    pods = core.list_namespaced_pod(handle["namespace"], label_selector=f"controller-uid={handle['uid']}")
    items = sorted(pods.items, key=lambda p: p.metadata.creation_timestamp)
    return items[-1] if items else None


def delete_job(batch: Any, handle: dict[str, Any], grace: int) -> None:
    """Delete the Job ``handle`` names, its pod (after ``grace`` seconds) and ConfigMap with it; a Job that
    is gone already, or another Job of that name, is left alone."""
    from kubernetes.client.exceptions import ApiException

    body = {"propagationPolicy": "Foreground", "gracePeriodSeconds": grace, "preconditions": {"uid": handle["uid"]}}
    try:
        batch.delete_namespaced_job(handle["job"], handle["namespace"], body=body)
    except ApiException as exc:
        if exc.status not in (404, 409):  # gone already, or another Job of that name: nothing of ours
            raise


def api_message(exc: Any) -> str:
    """What the API server said in refusing (its ``message``), else the HTTP status."""
    try:
        return str(json.loads(exc.body)["message"])[:300]
    except Exception:
        return f"{exc.status} {exc.reason}"


def create_or_replace(core: Any, kind: str, namespace: str, body: dict[str, Any]) -> None:
    """Create the ``kind`` (``config_map``, ``secret``) ``body`` describes; one left by an earlier attempt at
    this job is replaced."""
    from kubernetes.client.exceptions import ApiException

    try:
        getattr(core, f"create_namespaced_{kind}")(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        getattr(core, f"replace_namespaced_{kind}")(body["metadata"]["name"], namespace, body)


def check_secret_refs(core: Any, namespace: str, sources: dict[str, str]) -> None:
    """Each ``kubernetes:SECRET/KEY`` source among ``sources`` (a record's secrets) names a key of a Secret
    in ``namespace``; else one line naming the job's variable, never a value."""
    from kubernetes.client.exceptions import ApiException

    for variable, source in sorted(sources.items()):
        kind, _, where = source.partition(":")
        if kind != "kubernetes":
            continue
        secret, key = where.split("/", 1)
        try:
            data = core.read_namespaced_secret(secret, namespace).data or {}
        except ApiException as exc:
            if exc.status == 404:
                raise TargetError(
                    f"secret {variable}: {source}: no Secret {secret!r} in namespace {namespace}", subject=variable
                ) from None
            raise
        if key not in data:
            raise TargetError(f"secret {variable}: {source}: Secret {secret!r} has no key {key!r}", subject=variable)


def create_job(
    core: Any, batch: Any, namespace: str, job: dict[str, Any], held: list[tuple[str, Any]], secrets: dict[str, str]
) -> str:
    """The Job ``job`` and what it holds (its ConfigMap, its Secret: ``(kind, body)``), each then owned by the
    Job (the cluster removes them with it); a ``kubernetes:`` secret checked first. Its uid; else one line."""
    from kubernetes.client.exceptions import ApiException

    name = job["metadata"]["name"]
    try:
        check_secret_refs(core, namespace, secrets)
        for kind, body in held:
            create_or_replace(core, kind, namespace, body)
        created = batch.create_namespaced_job(namespace, job)
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": created.metadata.uid}
        for kind, _ in held:
            getattr(core, f"patch_namespaced_{kind}")(name, namespace, {"metadata": {"ownerReferences": [owner]}})
    except TargetError:
        raise
    except ApiException as exc:
        raise TargetError(
            f"the Kubernetes cluster refused the job in namespace {namespace}: {api_message(exc)}", subject=namespace
        ) from None
    except Exception as exc:  # not answering
        raise TargetError(f"the Kubernetes API server does not answer: {first_line(exc)}", subject=namespace) from None
    return str(created.metadata.uid)
