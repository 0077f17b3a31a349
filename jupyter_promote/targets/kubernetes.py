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
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from traitlets import Bool, Dict, Float, Int, List, Unicode

from ..channel.keys import job_key
from ..channel.receiver import Receiver
from ..errors import TargetError
from ..image.recipe import RUNNER_PREFIX
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..runtime.signing import KEY_ENV
from .base import Target, TargetStatus, container_environment, memory_text
from .inputs import carry_hidden_setting, pack_inputs

#: Seconds a Job that ended may still be bringing its log in before it is taken as ended.
LOG_GRACE_S = 60.0
#: What the API server takes in one ConfigMap (data and binaryData together).
CONFIGMAP_LIMIT = 1 << 20
#: Seconds the cluster's answer to "are you there" is kept.
AVAILABILITY_TTL_S = 10.0
LABEL_JOB = "jupyter-promote.io/job"
PAYLOAD_DIR = "/promote/job"
WORK_DIR = "/promote/run"
#: Waiting reasons after which a pod never starts by itself.
_STUCK = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
          "CreateContainerError", "RunContainerError"}  # fmt: skip


def job_name(job_id: str) -> str:
    """The Job's (and its ConfigMap's) name: a DNS label."""
    return "promote-" + re.sub(r"[^a-z0-9-]", "-", job_id.lower()).strip("-")[:50]


class KubernetesTarget(Target):
    """Runs the job as a Kubernetes Job in ``namespace`` of the cluster the kubeconfig points at."""

    name: ClassVar[str] = "kubernetes"
    display_name: ClassVar[str] = "Kubernetes (a Job on a Kubernetes cluster)"
    needs_image: ClassVar[bool] = True
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "the container's CPU request and limit (the scheduler queues the pod until a node has them) "
        "and OMP_NUM_THREADS",
        "memory": "the container's memory request and limit; an OOM kill is reported as reason 'oom'",
        "gpus": "an nvidia.com/gpu limit (the cluster's NVIDIA device plugin)",
        "time": "wall-clock limit enforced by the runner; the Job's activeDeadlineSeconds as a backstop",
    }

    kubeconfig = Unicode("", help="The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config; inside a pod "
                         "without one: the pod's service account).").tag(config=True)  # fmt: skip
    context = Unicode("", help="The kubeconfig context (default: its current context).").tag(config=True)
    namespace = Unicode("", help="The namespace of the jobs (default: the context's, else 'default').").tag(config=True)
    image_pull_policy = Unicode("IfNotPresent", help="The pods' imagePullPolicy.").tag(config=True)
    image_pull_secrets = List(Unicode(), help="Names of the namespace's Secrets to pull the image with.").tag(
        config=True
    )
    service_account = Unicode("", help="The pods' service account (default: none mounted).").tag(config=True)
    node_selector = Dict(help="The pods' nodeSelector ({'nvidia.com/gpu.present': 'true'}).").tag(config=True)
    tolerations = List(Dict(), help="The pods' tolerations.").tag(config=True)
    start_patience_s = Float(180.0, help="Seconds a pod may wait for its image or its configuration "
                             "(ErrImagePull, ImagePullBackOff, CreateContainerConfigError) before the job fails "
                             "with reason 'environment'; it is reported queued with that reason meanwhile.").tag(config=True)  # fmt: skip
    max_inputs_kb = Int(900, help="The most KiB of the notebook's folder (compressed) sent with a job: it travels "
                        "in a ConfigMap, which holds at most 1 MiB.").tag(config=True)  # fmt: skip
    carry_hidden = carry_hidden_setting()
    kill_grace = Int(10, help="Seconds between SIGTERM and SIGKILL when a job is cancelled.").tag(config=True)
    pod_spec = Dict(help="More pod spec fields for every job (volumes, securityContext, priorityClassName, "
                    "affinity, ...), over the ones above.").tag(config=True)  # fmt: skip
    delete_finished = Bool(True, help="Delete a job's Job (its pod and ConfigMap with it) once its events and "
                           "files are in.").tag(config=True)  # fmt: skip

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api: Any = None
        self._namespace = ""
        self._availability: tuple[float, tuple[bool, str | None]] | None = None
        self._follows: dict[str, threading.Thread] = {}
        self._tailed: set[str] = set()  # jobs whose whole log has been read
        self._ended_at: dict[str, float] = {}
        self._final: dict[str, TargetStatus] = {}  # what a deleted Job ended as
        self._stuck_since: dict[str, float] = {}  # jobs whose pod waits for its image or configuration

    # -- the cluster ---------------------------------------------------------------------------------------
    def api(self) -> Any:
        if self._api is not None:
            return self._api
        try:
            from kubernetes import client, config
        except ImportError:
            raise TargetError("the kubernetes target needs the Kubernetes client: "
                              "pip install 'jupyter-promote[kubernetes]'") from None  # fmt: skip
        path = self.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
        path = os.path.expanduser(path or "~/.kube/config")
        try:
            if os.path.isfile(path):
                api = config.new_client_from_config(path, context=self.context or None)
                contexts, active = config.list_kube_config_contexts(path)
                if self.context:
                    active = next(c for c in contexts if c["name"] == self.context)
                namespace = (active or {}).get("context", {}).get("namespace", "")
            elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                config.load_incluster_config()
                api = client.ApiClient()
                namespace = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read_text().strip()
            else:
                raise TargetError(f"no kubeconfig at {path} (KubernetesTarget.kubeconfig, $KUBECONFIG) and not "
                                  "inside a pod", subject=path)  # fmt: skip
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"{path}: not a usable kubeconfig: {str(exc).splitlines()[0][:200]}",
                              subject=path) from None  # fmt: skip
        self._namespace = self.namespace or namespace or "default"
        self._api = api
        return api

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
            answer = (False, f"the Kubernetes API server at {host} does not answer: {str(exc).splitlines()[0][:200]}")
        self._availability = (now, answer)
        return answer

    # -- submit -----------------------------------------------------------------------------------------
    async def submit(self, record: JobRecord, run: RunDir) -> dict[str, Any]:
        return await asyncio.to_thread(self._submit, record, run)

    def _submit(self, record: JobRecord, run: RunDir) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        if not record.image:
            raise TargetError(f"job {record.id}: the kubernetes target needs an image and the job has none",
                              subject=record.id)  # fmt: skip
        core, batch = self._core(), self._batch()
        namespace, name = self._namespace, job_name(record.id)
        configmap = self._payload(record, run, name)
        try:
            try:
                core.create_namespaced_config_map(namespace, configmap)
            except ApiException as exc:
                if exc.status != 409:  # a payload left by an earlier attempt at this job: replaced
                    raise
                core.replace_namespaced_config_map(name, namespace, configmap)
            image = record.image.get("digest") or record.image["ref"]  # pushed: by its registry digest
            created = batch.create_namespaced_job(namespace, self._job(record, name, image, job_key(run.path)))
            owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": created.metadata.uid}
            core.patch_namespaced_config_map(name, namespace, {"metadata": {"ownerReferences": [owner]}})
        except ApiException as exc:
            raise TargetError(f"the Kubernetes cluster refused the job in namespace {namespace}: "
                              f"{_api_message(exc)}", subject=namespace) from None  # fmt: skip
        except Exception as exc:  # not answering
            raise TargetError(f"the Kubernetes API server does not answer: {str(exc).splitlines()[0][:200]}",
                              subject=namespace) from None  # fmt: skip
        return {"namespace": namespace, "job": name, "uid": created.metadata.uid,
                "memory": record.resources.memory_bytes}  # fmt: skip

    def _payload(self, record: JobRecord, run: RunDir, name: str) -> dict[str, Any]:
        limit = self.max_inputs_kb << 10
        skip = {os.path.realpath(run.path)}
        inputs, total = pack_inputs(Path(record.notebook).parent, skip, limit * 20, self.carry_hidden)
        job_json, notebook = run.job_json.read_text(), run.job_notebook.read_text()
        size = len(inputs) + len(job_json.encode()) + len(notebook.encode())
        if len(inputs) > limit or total > limit * 20 or size > CONFIGMAP_LIMIT - 4096:
            raise TargetError(
                f"{Path(record.notebook).parent}: the notebook's folder and the job come to more than a Kubernetes "
                f"job carries ({self.max_inputs_kb} KiB compressed, KubernetesTarget.max_inputs_kb; a ConfigMap "
                "holds 1 MiB); put datasets where the cluster reads them (a volume: KubernetesTarget.pod_spec)",
                subject=record.notebook,
            )  # fmt: skip
        return {
            "metadata": {"name": name, "labels": {LABEL_JOB: record.id,
                                                  "app.kubernetes.io/managed-by": "jupyter-promote"}},
            "data": {"job.json": job_json, "job.ipynb": notebook},
            "binaryData": {"inputs.tar.gz": base64.b64encode(inputs).decode()},
        }  # fmt: skip

    def _job(self, record: JobRecord, name: str, image: str, key: bytes) -> dict[str, Any]:
        res = record.resources
        env = {**container_environment(record), KEY_ENV: key.hex()}  # the runner takes it before the kernel starts
        limits: dict[str, str] = {}
        if res.cpus:
            limits["cpu"] = str(res.cpus)
        if res.memory_bytes:
            limits["memory"] = str(res.memory_bytes)
        if res.gpus:
            limits["nvidia.com/gpu"] = str(res.gpus)
        labels = {LABEL_JOB: record.id, "app.kubernetes.io/managed-by": "jupyter-promote"}
        container = {
            "name": "job", "image": image, "imagePullPolicy": self.image_pull_policy,
            "command": [f"{RUNNER_PREFIX}/bin/python", "-m", "jupyter_promote.execute.pod", PAYLOAD_DIR],
            "workingDir": WORK_DIR, "env": [{"name": k, "value": str(v)} for k, v in env.items()],
            "resources": {"limits": limits, "requests": {k: v for k, v in limits.items() if k != "nvidia.com/gpu"}},
            "volumeMounts": [{"name": "job", "mountPath": PAYLOAD_DIR, "readOnly": True},
                             {"name": "run", "mountPath": WORK_DIR}],
        }  # fmt: skip
        pod: dict[str, Any] = {
            "restartPolicy": "Never", "automountServiceAccountToken": bool(self.service_account),
            "enableServiceLinks": False, "terminationGracePeriodSeconds": self.kill_grace, "containers": [container],
            "volumes": [{"name": "job", "configMap": {"name": name}}, {"name": "run", "emptyDir": {}}],
        }  # fmt: skip
        if self.service_account:
            pod["serviceAccountName"] = self.service_account
        if self.node_selector:
            pod["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            pod["tolerations"] = list(self.tolerations)
        if self.image_pull_secrets:
            pod["imagePullSecrets"] = [{"name": secret} for secret in self.image_pull_secrets]
        pod.update(self.pod_spec)
        spec: dict[str, Any] = {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": pod}}
        if res.time_limit_s:  # the runner stops the job itself at its limit; this is for a runner that cannot
            spec["activeDeadlineSeconds"] = int(res.time_limit_s) + 300
        metadata = {"name": name, "labels": labels, "annotations": {"jupyter-promote.io/notebook": record.notebook}}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}

    # -- follow -----------------------------------------------------------------------------------------
    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        return {job_id: await asyncio.to_thread(self._status, job_id, h) for job_id, h in handles.items()}

    def _pod(self, handle: dict[str, Any]) -> Any | None:
        pods = self._core().list_namespaced_pod(handle["namespace"], label_selector=f"controller-uid={handle['uid']}")
        items = sorted(pods.items, key=lambda p: p.metadata.creation_timestamp)
        return items[-1] if items else None

    def _status(self, job_id: str, handle: dict[str, Any]) -> TargetStatus:
        from kubernetes.client.exceptions import ApiException

        if job_id in self._final:
            return self._final[job_id]
        namespace, name = handle["namespace"], handle["job"]
        try:
            job = self._batch().read_namespaced_job(name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            job = None
        if job is None or job.metadata.uid != handle["uid"]:
            if handle.get("cancelled"):
                return TargetStatus(JobState.CANCELLED, "cancelled", "cancelled (the Job was deleted)")
            return TargetStatus(JobState.FAILED, "lost", f"the Kubernetes cluster has no Job {name} in namespace "
                                f"{namespace} (deleted, or the cluster forgot it)")  # fmt: skip
        pod = self._pod(handle)
        waiting, terminated = _container_state(pod)
        conditions = {c.type: c for c in (job.status.conditions or []) if c.status == "True"}
        ended = "Complete" in conditions or "Failed" in conditions
        if job.metadata.deletion_timestamp is not None and not ended:  # being cancelled: its pod is stopping
            return TargetStatus(JobState.RUNNING)
        if not ended and terminated is None:
            if waiting is not None and waiting.reason in _STUCK:  # may pass (a registry restarting); else fails
                message = (waiting.message or "").strip().splitlines()[0][:300] if waiting.message else waiting.reason
                since = self._stuck_since.setdefault(job_id, time.monotonic())
                if time.monotonic() - since < self.start_patience_s:
                    return TargetStatus(JobState.QUEUED, waiting.reason, message)
                status = TargetStatus(JobState.FAILED, "environment", f"the pod did not start in "
                                      f"{self.start_patience_s:.0f} s: {waiting.reason}: {message}")  # fmt: skip
                self._finish(job_id, handle, status)
                return status
            self._stuck_since.pop(job_id, None)
            if pod is None or pod.status.phase == "Pending":
                scheduled = (
                    next((c for c in (pod.status.conditions or []) if c.type == "PodScheduled"), None) if pod else None
                )
                if scheduled is not None and scheduled.status == "False":
                    return TargetStatus(JobState.QUEUED, scheduled.reason or "pending", scheduled.message)
                return TargetStatus(JobState.QUEUED, "pending", waiting.reason if waiting is not None else None)
            return TargetStatus(JobState.RUNNING)
        if job_id not in self._tailed:  # its last events may still be on their way
            ended_at = self._ended_at.setdefault(job_id, time.monotonic())
            if time.monotonic() - ended_at < LOG_GRACE_S:
                return TargetStatus(JobState.RUNNING)
        code = terminated.exit_code if terminated is not None else None
        failed = conditions.get("Failed")
        if pod is not None and pod.status.reason == "Evicted":  # the node took its resources back
            status = TargetStatus(JobState.FAILED, "killed", f"evicted: {pod.status.message or 'by the node'}",
                                  exit_code=code, overrides=True)  # fmt: skip
        elif terminated is not None and terminated.reason == "OOMKilled":
            limit = handle.get("memory")
            message = (
                f"out of memory: the container hit its {memory_text(limit, 'i')} limit"
                if limit
                else "out of memory (OOMKilled)"
            )
            status = TargetStatus(JobState.FAILED, "oom", message, exit_code=code, overrides=True)
        elif handle.get("cancelled"):
            status = TargetStatus(JobState.CANCELLED, "cancelled", "cancelled", exit_code=code)
        elif failed is not None and failed.reason == "DeadlineExceeded":
            status = TargetStatus(
                JobState.FAILED, "timeout", f"the Job's deadline passed: {failed.message}", exit_code=code
            )
        else:
            status = TargetStatus(None, message=failed.message if failed is not None else None, exit_code=code)
        self._finish(job_id, handle, status)
        return status

    def _finish(self, job_id: str, handle: dict[str, Any], status: TargetStatus) -> None:
        """The job ended as ``status``: remembered, and its Job (pod, ConfigMap) deleted when so configured."""
        self._final[job_id] = status
        if self.delete_finished:
            self._delete(handle, grace=0)

    def _delete(self, handle: dict[str, Any], grace: int) -> None:
        from kubernetes.client.exceptions import ApiException

        body = {"propagationPolicy": "Foreground", "gracePeriodSeconds": grace,
                "preconditions": {"uid": handle["uid"]}}  # fmt: skip
        try:
            self._batch().delete_namespaced_job(handle["job"], handle["namespace"], body=body)
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone already, or another Job of that name: nothing of ours
                raise

    async def relay(self, record: JobRecord, run: RunDir, follow: bool = True) -> None:
        handle = record.handle
        if not handle:
            return
        if not follow:  # one look (``jupyter promote status``): what the log holds now
            await asyncio.to_thread(self._read_log, record, run)
            return
        thread = self._follows.get(record.id)
        if record.id in self._tailed or (thread is not None and thread.is_alive()):
            return
        pod = await asyncio.to_thread(self._pod, handle)
        if pod is None or pod.status.phase == "Pending":  # nothing to read yet
            return
        loop = asyncio.get_running_loop()
        args = (loop, Receiver(run, record.id), record.id, pod.metadata.name, handle["namespace"])
        thread = threading.Thread(target=self._follow_log, args=args, name=f"promote-kube-log-{record.id}", daemon=True)
        self._follows[record.id] = thread
        thread.start()

    def _read_log(self, record: JobRecord, run: RunDir) -> None:
        from kubernetes.client.exceptions import ApiException

        pod = self._pod(record.handle)
        if pod is None:
            return
        try:
            text = self._core().read_namespaced_pod_log(pod.metadata.name, record.handle["namespace"])
        except ApiException:
            return
        Receiver(run, record.id).feed(text + "\n")
        if _container_state(pod)[1] is not None:  # it had ended: this was the whole log
            self._tailed.add(record.id)

    def _follow_log(self, loop: asyncio.AbstractEventLoop, receiver: Receiver, job_id: str, pod: str, ns: str) -> None:
        """The pod's log, followed from its start, fed to the receiver on the server's event loop (what was
        relayed before a restart is skipped by seq); a broken stream is taken up again at the next poll."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            response = self._core().read_namespaced_pod_log(pod, ns, follow=True, _preload_content=False)
            for chunk in response.stream(65536):
                loop.call_soon_threadsafe(receiver.feed, decoder.decode(chunk))
            response.release_conn()
            # a followed log ends as its container does, a moment before the pod's status says so
            deadline = time.monotonic() + 10
            while _container_state(self._core().read_namespaced_pod(pod, ns))[1] is None:
                if time.monotonic() > deadline:  # the stream broke while the container runs: read again later
                    return
                time.sleep(0.25)
            loop.call_soon_threadsafe(receiver.feed, decoder.decode(b"", final=True) + "\n")
            loop.call_soon_threadsafe(self._tailed.add, job_id)
        except RuntimeError:  # the event loop is gone (the server stopped)
            return
        except Exception as exc:
            self.log.warning(
                "jupyter-promote: the log of Kubernetes job %s broke off (%s); reading it again", job_id, exc
            )

    async def cancel(self, handle: dict[str, Any]) -> None:
        handle["cancelled"] = True
        await asyncio.to_thread(self._delete, handle, self.kill_grace)


def _container_state(pod: Any) -> tuple[Any, Any]:
    """The job container's ``waiting`` and ``terminated`` states (None each when not so)."""
    if pod is None:
        return None, None
    for status in pod.status.container_statuses or []:
        if status.state is not None:
            return status.state.waiting, status.state.terminated
    return None, None


def _api_message(exc: Any) -> str:
    import json

    try:
        return str(json.loads(exc.body)["message"])[:300]
    except Exception:
        return f"{exc.status} {exc.reason}"
