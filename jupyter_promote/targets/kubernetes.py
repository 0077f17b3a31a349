"""The ``kubernetes`` target: a Kubernetes Job per promoted notebook, through the official Python client.

The pod runs the job's verified environment image (built and verified as for Docker; for a real cluster,
pushed to a registry its nodes pull from: ``c.ImageBuilder.registry`` and ``--push``). The cluster shares
no filesystem with the submitter: the job travels in a ConfigMap of its own (``job.json``, ``job.ipynb``
and the notebook's folder as ``inputs.tar.gz``, at most ``max_inputs_kb``), mounted read-only in the pod;
the job runs in the pod's scratch space (``emptyDir``) and its events and files come back through the
pod's log (:mod:`jupyter_promote.channel`), which this target follows as ``kubectl logs -f`` does. The
ConfigMap is owned by the Job, so Kubernetes' garbage collector removes it with the Job.

States: no pod yet, or a pod waiting for a node -> queued (with the scheduler's reason); running ->
running; Complete/Failed -> the runner's own final event, else the container's exit code (``OOMKilled`` ->
``oom``, ``DeadlineExceeded`` -> ``timeout``); an image that cannot be pulled -> ``failed``/
``environment``; a Job the cluster does not know -> ``lost`` (``cancelled`` after a cancel). A sweep is
one Job per task: the scheduler queues what the nodes cannot take yet.

This module is the target's settings and its lifecycle; the manifests are :mod:`.kubernetes_manifest`'s,
the client calls :mod:`.kubernetes_cluster`'s, the reading of a Job's state :mod:`.kubernetes_status`'s
and the pod's log :mod:`.kubernetes_log`'s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from traitlets import Bool, Dict, Float, Int, List, Unicode

from ..channel.keys import job_key
from ..channel.receiver import Receiver
from ..errors import TargetError
from ..models import JobRecord, JobState
from ..rundir import RunDir
from .base import Target, TargetStatus
from .inputs import carry_hidden_setting
from .kubernetes_cluster import (
    connect,
    create_job,
    delete_job,
    first_line,
    latest_pod,
)
from .kubernetes_log import PodLogs
from .kubernetes_manifest import PodSettings, job_manifest, job_name, payload_configmap, secret_manifest
from .kubernetes_status import (
    container_state,
    ended_conditions,
    ended_status,
    evicted_status,
    lost_status,
    not_started_status,
    stuck_message,
)

__all__ = ["KubernetesTarget", "job_name"]

#: Seconds a Job that ended may still be bringing its log in before it is taken as ended.
LOG_GRACE_S = 60.0
#: Seconds the cluster's answer to "are you there" is kept.
AVAILABILITY_TTL_S = 10.0


class KubernetesTarget(Target):
    """Runs the job as a Kubernetes Job in ``namespace`` of the cluster the kubeconfig points at."""

    name: ClassVar[str] = "kubernetes"
    display_name: ClassVar[str] = "Kubernetes (a Job on a Kubernetes cluster)"
    needs_image: ClassVar[bool] = True
    pulls_images: ClassVar[bool] = True
    shares_run_dir: ClassVar[bool] = False
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "the container's CPU request and limit (the scheduler queues the pod until a node has them) "
        "and OMP_NUM_THREADS",
        "memory": "the container's memory request and limit; an OOM kill is reported as reason 'oom'",
        "gpus": "an nvidia.com/gpu limit (the cluster's NVIDIA device plugin)",
        "time": "wall-clock limit enforced by the runner; the Job's activeDeadlineSeconds as a backstop",
    }

    kubeconfig = Unicode(
        "",
        help="The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config; inside a pod without one: the pod's "
        "service account).",
    ).tag(config=True)
    context = Unicode("", help="The kubeconfig context (default: its current context).").tag(config=True)
    namespace = Unicode("", help="The namespace of the jobs (default: the context's, else 'default').").tag(config=True)
    image_pull_policy = Unicode("IfNotPresent", help="The pods' imagePullPolicy.").tag(config=True)
    image_pull_secrets = List(Unicode(), help="Names of the namespace's Secrets to pull the image with.").tag(
        config=True
    )
    service_account = Unicode("", help="The pods' service account (default: none mounted).").tag(config=True)
    node_selector = Dict(help="The pods' nodeSelector ({'nvidia.com/gpu.present': 'true'}).").tag(config=True)
    tolerations = List(Dict(), help="The pods' tolerations.").tag(config=True)
    start_patience_s = Float(
        180.0,
        help="Seconds a pod may wait for its image or its configuration (ErrImagePull, ImagePullBackOff, "
        "CreateContainerConfigError) before the job fails with reason 'environment'; it is reported queued with "
        "that reason meanwhile.",
    ).tag(config=True)
    max_inputs_kb = Int(
        900,
        help="The most KiB of the notebook's folder (compressed) sent with a job: it travels in a ConfigMap, which "
        "holds at most 1 MiB.",
    ).tag(config=True)
    carry_hidden = carry_hidden_setting()
    kill_grace = Int(10, help="Seconds between SIGTERM and SIGKILL when a job is cancelled.").tag(config=True)
    checkpoint_volume = Dict(
        help="A volume source every attempt of a job sees, for its checkpoints (promote.checkpoint_dir()): e.g. "
        '{"persistentVolumeClaim": {"claimName": "checkpoints"}}; each job gets its own folder (subPath: the job '
        "id). Empty: the pod's scratch space, gone with the attempt (with c.PromoteSettings.artifacts_url the "
        "checkpoints are kept on that storage instead, where the image's runner has its client).",
    ).tag(config=True)
    pod_spec = Dict(
        help="More pod spec fields for every job (volumes, securityContext, priorityClassName, affinity, ...), "
        "over the ones above."
    ).tag(config=True)
    delete_finished = Bool(
        True, help="Delete a job's Job (its pod and ConfigMap with it) once its events and files are in."
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api: Any = None
        self._namespace = ""
        self._availability: tuple[float, tuple[bool, str | None]] | None = None
        self._logs = PodLogs(self._core, self.log)
        self._ended_at: dict[str, float] = {}
        self._final: dict[str, TargetStatus] = {}  # what a deleted Job ended as
        self._stuck_since: dict[str, float] = {}  # jobs whose pod waits for its image or configuration
        self._ran: dict[str, str] = {}  # job -> the uid of the pod that ran it

    # -- the cluster ---------------------------------------------------------------------------------------
    def api(self) -> Any:
        """The API client (connected once), which also settles the namespace of the jobs."""
        if self._api is None:
            api, namespace = connect(self.kubeconfig, self.context)
            self._namespace = self.namespace or namespace or "default"
            self._api = api
        return self._api

    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api())

    def _batch(self) -> Any:
        from kubernetes import client

        return client.BatchV1Api(self.api())

    def available(self) -> tuple[bool, str | None]:
        now = time.monotonic()
        if self._availability is not None and now - self._availability[0] < AVAILABILITY_TTL_S:
            return self._availability[1]
        try:
            from kubernetes import client

            version = client.VersionApi(self.api()).get_code(_request_timeout=5)
            answer: tuple[bool, str | None] = (True, None)
            self.log.debug("jupyter-promote: Kubernetes %s", version.git_version)
        except TargetError as exc:
            answer = (False, str(exc))
        except Exception as exc:
            host = getattr(getattr(self._api, "configuration", None), "host", "the cluster")
            answer = (False, f"the Kubernetes API server at {host} does not answer: {first_line(exc)}")
        self._availability = (now, answer)
        return answer

    def _pod_settings(self) -> PodSettings:
        return PodSettings(
            image_pull_policy=self.image_pull_policy,
            service_account=self.service_account,
            kill_grace=self.kill_grace,
            node_selector=dict(self.node_selector),
            tolerations=list(self.tolerations),
            image_pull_secrets=list(self.image_pull_secrets),
            pod_spec=dict(self.pod_spec),
            checkpoint_volume=dict(self.checkpoint_volume),
        )

    # -- submit -----------------------------------------------------------------------------------------
    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self._submit, record, run, dict(secrets or {}))

    def _submit(self, record: JobRecord, run: RunDir, secrets: dict[str, str]) -> dict[str, Any]:
        if not record.image:
            raise TargetError(
                f"job {record.id}: the kubernetes target needs an image and the job has none", subject=record.id
            )
        core, batch = self._core(), self._batch()
        # each attempt a Job of its own (the last one's may still be going away); what it left here, forgotten
        namespace, name = self._namespace, job_name(record.id) + (f"-{record.attempt}" if record.attempt > 1 else "")
        for state in (self._final, self._stuck_since, self._ended_at, self._ran):
            state.pop(record.id, None)
        self._logs.forget(record.id)
        held = [("config_map", payload_configmap(record, run, name, self.max_inputs_kb, self.carry_hidden))]
        if secrets:  # the values the submitter read, in a Secret of the job's own
            held.append(("secret", secret_manifest(record, name, secrets)))
        image = record.image.get("digest") or record.image["ref"]  # pushed: by its registry digest
        job = job_manifest(record, name, image, job_key(run.path), self._pod_settings())
        uid = create_job(core, batch, namespace, job, held, record.secrets)
        return {"namespace": namespace, "job": name, "uid": uid, "memory": record.resources.memory_bytes}

    # -- follow -----------------------------------------------------------------------------------------
    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        return {job_id: await asyncio.to_thread(self._status, job_id, h) for job_id, h in handles.items()}

    def _status(self, job_id: str, handle: dict[str, Any]) -> TargetStatus:
        from kubernetes.client.exceptions import ApiException

        if job_id in self._final:
            return self._final[job_id]
        try:
            job = self._batch().read_namespaced_job(handle["job"], handle["namespace"])
        except ApiException as exc:
            if exc.status != 404:
                raise
            job = None
        if job is None or job.metadata.uid != handle["uid"]:
            return lost_status(handle)
        pod = self._pod(handle)
        if pod is not None and pod.status.phase == "Running":
            self._ran.setdefault(job_id, pod.metadata.uid)
        evicted = evicted_status(self._ran.get(job_id), handle, job, pod)
        if evicted is not None:
            return self._finish(job_id, handle, evicted)
        waiting, terminated = container_state(pod)
        conditions = ended_conditions(job)
        ended = "Complete" in conditions or "Failed" in conditions
        if job.metadata.deletion_timestamp is not None and not ended:  # being cancelled: its pod is stopping
            return TargetStatus(JobState.RUNNING)
        if not ended and terminated is None:
            stuck = stuck_message(waiting)
            if stuck is None:
                self._stuck_since.pop(job_id, None)
                return not_started_status(pod, waiting)
            # may pass (a registry restarting); else fails
            since = self._stuck_since.setdefault(job_id, time.monotonic())
            if time.monotonic() - since < self.start_patience_s:
                return TargetStatus(JobState.QUEUED, waiting.reason, stuck)
            message = f"the pod did not start in {self.start_patience_s:.0f} s: {waiting.reason}: {stuck}"
            return self._finish(job_id, handle, TargetStatus(JobState.FAILED, "environment", message))
        if job_id not in self._logs.tailed:  # its last events may still be on their way
            ended_at = self._ended_at.setdefault(job_id, time.monotonic())
            if time.monotonic() - ended_at < LOG_GRACE_S:
                return TargetStatus(JobState.RUNNING)
        return self._finish(job_id, handle, ended_status(pod, terminated, conditions.get("Failed"), handle))

    def _finish(self, job_id: str, handle: dict[str, Any], status: TargetStatus) -> TargetStatus:
        """The job ended as ``status``: remembered, and its Job (pod, ConfigMap) deleted when so configured."""
        self._final[job_id] = status
        if self.delete_finished:
            self._delete(handle, grace=0)
        return status

    async def relay(self, record: JobRecord, run: RunDir, follow: bool = True) -> None:
        handle = record.handle
        if not handle:
            return
        if not follow:  # one look (``jupyter promote status``): what the log holds now
            await asyncio.to_thread(self._read_log, record, run)
            return
        if self._logs.following(record.id):
            return
        pod = await asyncio.to_thread(self._pod, handle)
        if pod is None or pod.status.phase == "Pending":  # nothing to read yet
            return
        self._logs.follow(Receiver(run, record.id), record.id, pod.metadata.name, handle["namespace"])

    def _pod(self, handle: dict[str, Any]) -> Any | None:
        return latest_pod(self._core(), handle)

    def _read_log(self, record: JobRecord, run: RunDir) -> None:
        pod = self._pod(record.handle)
        if pod is not None:
            self._logs.read(Receiver(run, record.id), record.id, pod, record.handle["namespace"])

    async def cancel(self, handle: dict[str, Any]) -> None:
        handle["cancelled"] = True
        await asyncio.to_thread(self._delete, handle, self.kill_grace)

    def _delete(self, handle: dict[str, Any], grace: int) -> None:
        delete_job(self._batch(), handle, grace)
