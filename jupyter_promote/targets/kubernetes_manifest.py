"""What a promoted job asks of a Kubernetes cluster: its payload ConfigMap and its Job manifest.

Pure rendering, no API calls: the same job and settings always give the same manifests. The payload
(``job.json``, ``job.ipynb`` and the notebook's folder as ``inputs.tar.gz``) must fit one ConfigMap, else
:class:`~jupyter_promote.errors.TargetError` says what to do instead. The Job runs one pod, never
restarted, whose container reads the payload read-only at :data:`PAYLOAD_DIR` and works in scratch space
at :data:`WORK_DIR`.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TargetError
from ..image.recipe import RUNNER_PREFIX
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.checkpoints import CHECKPOINT_ENV
from ..runtime.signing import KEY_ENV
from .base import container_environment
from .inputs import pack_inputs

#: What the API server takes in one ConfigMap (data and binaryData together).
CONFIGMAP_LIMIT = 1 << 20
LABEL_JOB = "jupyter-promote.io/job"
PAYLOAD_DIR = "/promote/job"
#: Where a job's checkpoint folder is mounted (``KubernetesTarget.checkpoint_volume``).
CHECKPOINT_DIR = "/promote/checkpoints"
WORK_DIR = "/promote/run"


def job_name(job_id: str) -> str:
    """The Job's (and its ConfigMap's) name: a DNS label."""
    return "promote-" + re.sub(r"[^a-z0-9-]", "-", job_id.lower()).strip("-")[:50]


def job_labels(record: JobRecord) -> dict[str, str]:
    """The labels every object of ``record``'s job carries."""
    return {LABEL_JOB: record.id, "app.kubernetes.io/managed-by": "jupyter-promote"}


@dataclass(frozen=True)
class PodSettings:
    """The site's settings of every job's pod (``KubernetesTarget``'s configuration)."""

    image_pull_policy: str = "IfNotPresent"
    service_account: str = ""
    kill_grace: int = 10
    node_selector: dict[str, Any] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    image_pull_secrets: list[str] = field(default_factory=list)
    pod_spec: dict[str, Any] = field(default_factory=dict)
    checkpoint_volume: dict[str, Any] = field(default_factory=dict)  # a volume source every attempt sees


def payload_configmap(
    record: JobRecord, run: RunDir, name: str, max_inputs_kb: int, carry_hidden: Collection[str]
) -> dict[str, Any]:
    """The ConfigMap ``name`` that carries the job to its pod; refused when it would not fit."""
    limit = max_inputs_kb << 10
    skip = {os.path.realpath(run.path)}
    inputs, total = pack_inputs(Path(record.inputs_folder), skip, limit * 20, carry_hidden)
    job_json, notebook = run.job_json.read_text(), run.job_notebook.read_text()
    size = len(inputs) + len(job_json.encode()) + len(notebook.encode())
    if len(inputs) > limit or total > limit * 20 or size > CONFIGMAP_LIMIT - 4096:
        raise TargetError(
            f"{record.inputs_folder}: the notebook's folder and the job come to more than a Kubernetes "
            f"job carries ({max_inputs_kb} KiB compressed, KubernetesTarget.max_inputs_kb; a ConfigMap "
            "holds 1 MiB); put datasets where the cluster reads them (a volume: KubernetesTarget.pod_spec)",
            subject=record.notebook,
        )
    return {
        "metadata": {"name": name, "labels": job_labels(record)},
        "data": {"job.json": job_json, "job.ipynb": notebook},
        "binaryData": {"inputs.tar.gz": base64.b64encode(inputs).decode()},
    }


def job_manifest(record: JobRecord, name: str, image: str, key: bytes, settings: PodSettings) -> dict[str, Any]:
    """The Job ``name`` that runs ``record`` in ``image``, its channel signed with ``key``."""
    labels = job_labels(record)
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": bool(settings.service_account),
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": settings.kill_grace,
        "containers": [_container(record, name, image, key, settings.image_pull_policy)],
        "volumes": [{"name": "job", "configMap": {"name": name}}, {"name": "run", "emptyDir": {}}],
    }
    if settings.checkpoint_volume:  # the job's checkpoints, in its own folder of the volume: kept across attempts
        pod["volumes"].append({"name": "checkpoints", **settings.checkpoint_volume})
        container = pod["containers"][0]
        container["volumeMounts"].append({"name": "checkpoints", "mountPath": CHECKPOINT_DIR, "subPath": record.id})
        container["env"].append({"name": CHECKPOINT_ENV, "value": CHECKPOINT_DIR})
    if settings.service_account:
        pod["serviceAccountName"] = settings.service_account
    if settings.node_selector:
        pod["nodeSelector"] = dict(settings.node_selector)
    if settings.tolerations:
        pod["tolerations"] = list(settings.tolerations)
    if settings.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": secret} for secret in settings.image_pull_secrets]
    pod.update(settings.pod_spec)
    spec: dict[str, Any] = {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": pod}}
    if record.resources.time_limit_s:  # the runner stops the job itself at its limit; this is for a runner that cannot
        spec["activeDeadlineSeconds"] = int(record.resources.time_limit_s) + 300
    metadata = {"name": name, "labels": labels, "annotations": {"jupyter-promote.io/notebook": record.notebook}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def secret_manifest(record: JobRecord, name: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The Secret ``name`` holding the values of the job's secrets the submitter read, for its pod alone
    (owned by the Job once it exists, so the cluster removes it with the Job)."""
    return {"metadata": {"name": name, "labels": job_labels(record)}, "type": "Opaque", "stringData": dict(values)}


def _secret_env(record: JobRecord, name: str) -> list[dict[str, Any]]:
    """The job's secrets as the pod's variables, each from a Secret by reference: the job's own Secret
    ``name`` for the values the submitter read, the Secret a ``kubernetes:SECRET/KEY`` source names."""
    env = []
    for variable, source in sorted(record.secrets.items()):
        kind, _, where = source.partition(":")
        secret, key = where.split("/", 1) if kind == "kubernetes" else (name, variable)
        env.append({"name": variable, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    return env


def _container(record: JobRecord, name: str, image: str, key: bytes, pull_policy: str) -> dict[str, Any]:
    """The job's one container: the runner over the mounted payload, with the job's resources as limits."""
    res = record.resources
    env = {**container_environment(record), KEY_ENV: key.hex()}  # the runner takes it before the kernel starts
    limits: dict[str, str] = {}
    if res.cpus:
        limits["cpu"] = str(res.cpus)
    if res.memory_bytes:
        limits["memory"] = str(res.memory_bytes)
    if res.gpus:
        limits["nvidia.com/gpu"] = str(res.gpus)
    return {
        "name": "job",
        "image": image,
        "imagePullPolicy": pull_policy,
        "command": [f"{RUNNER_PREFIX}/bin/python", "-m", "jupyter_promote.execute.pod", PAYLOAD_DIR],
        "workingDir": WORK_DIR,
        "env": [{"name": k, "value": str(v)} for k, v in env.items()] + _secret_env(record, name),
        "resources": {"limits": limits, "requests": {k: v for k, v in limits.items() if k != "nvidia.com/gpu"}},
        "volumeMounts": [
            {"name": "job", "mountPath": PAYLOAD_DIR, "readOnly": True},
            {"name": "run", "mountPath": WORK_DIR},
        ],
    }
