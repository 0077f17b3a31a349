"""One Kubernetes node for the test cluster: a small node agent in place of a kubelet, on the local Docker engine.

A kubelet 1.20 needs dockershim, a pause image and cgroup settings this machine does not offer, so this
agent does the part of a node's work that Jobs depend on, through the real API server:

- registers the Node ``promote-node`` (its CPUs and memory, Ready, heartbeats) and schedules the pods
  nobody placed onto it when their CPU and memory requests fit (else they stay Pending, ``Unschedulable``,
  as kube-scheduler leaves them);
- runs each pod's (first) container in Docker: image (pulled when missing), command, args, working
  directory, env (values and the pod's name/namespace), configMap, secret and emptyDir volumes, CPU and
  memory limits (a cgroup OOM kill is reported as ``OOMKilled``), the pod's user; no network;
- reports the container's state to the pod's status (Pending with a waiting reason, Running, Terminated
  with its exit code) and the pod's phase, as a kubelet does;
- stops a deleted pod's container (SIGTERM, its grace period, SIGKILL) and then removes the pod;
- serves ``/containerLogs/{namespace}/{pod}/{container}`` (``follow``, ``tailLines``) over TLS, so that
  the API server's pod log (``kubectl logs -f``, ``read_namespaced_pod_log``) works.

What it does not do: init containers, more than one container per pod, probes, restarts
(``restartPolicy`` other than Never), services or pod networking. Run it as root in the control plane's
network namespace (scripts/k8s-up.sh).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import faulthandler
import http.server
import logging
import os
import re
import shutil
import signal
import ssl
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

NODE = "promote-node"
LABEL_UID = "io.kubernetes.pod.uid"
LABEL_NAME = "io.kubernetes.pod.name"
LABEL_NAMESPACE = "io.kubernetes.pod.namespace"
log = logging.getLogger("k8s_node")


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def quantity(text: str | None) -> float:
    """A Kubernetes quantity ("500m", "2", "1Gi", "512M") as a number (CPUs, bytes)."""
    if not text:
        return 0.0
    match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text))
    if not match:
        raise ValueError(f"not a quantity: {text}")
    number, suffix = float(match.group(1)), match.group(2)
    factors = {
        "": 1,
        "m": 1e-3,
        "k": 1e3,
        "K": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "Ki": 1 << 10,
        "Mi": 1 << 20,
        "Gi": 1 << 30,
        "Ti": 1 << 40,
    }
    if suffix not in factors:
        raise ValueError(f"not a quantity: {text}")
    return number * factors[suffix]


class Agent:
    def __init__(self, api: client.ApiClient, state: Path, cpus: int, memory: int) -> None:
        self.core = client.CoreV1Api(api)
        self.engine = docker.from_env()
        self.state = state
        self.cpus, self.memory = cpus, memory
        self.started: set[str] = set()  # pod uids whose container this agent has taken on
        self.deleting: set[str] = set()  # pod uids whose container is being stopped
        self.lock = threading.Lock()
        self.wake = threading.Event()

    # -- the node --------------------------------------------------------------------------------------
    def register(self) -> None:
        body = {
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"}},
            "spec": {},
        }
        try:
            self.core.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
        self.heartbeat()

    def heartbeat(self) -> None:
        capacity = {"cpu": str(self.cpus), "memory": str(self.memory), "pods": "110"}
        info = os.uname()
        self.core.patch_node_status(
            NODE,
            {
                "status": {
                    "capacity": capacity,
                    "allocatable": capacity,
                    "addresses": [
                        {"type": "InternalIP", "address": "127.0.0.1"},
                        {"type": "Hostname", "address": NODE},
                    ],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                    "nodeInfo": {
                        "machineID": "promote",
                        "systemUUID": "promote",
                        "bootID": "promote",
                        "kernelVersion": info.release,
                        "osImage": "Debian GNU/Linux 12",
                        "containerRuntimeVersion": "docker://" + self.engine.version()["Version"],
                        "kubeletVersion": "v1.20.2",
                        "kubeProxyVersion": "v1.20.2",
                        "operatingSystem": "linux",
                        "architecture": "amd64",
                    },
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "the promote node agent is running",
                            "lastHeartbeatTime": now(),
                            "lastTransitionTime": now(),
                        }
                    ],
                }
            },
        )

    def heartbeats(self) -> None:
        while True:
            time.sleep(10)
            try:
                self.heartbeat()
            except Exception as exc:
                log.warning("heartbeat: %s", exc)

    # -- scheduling: pods nobody placed -----------------------------------------------------------------
    def schedule(self) -> None:
        while True:
            try:
                self._schedule_once()
            except Exception as exc:
                log.warning("scheduling: %s", exc)
            self.wake.wait(0.5)
            self.wake.clear()

    def _schedule_once(self) -> None:
        pods = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=").items
        if not pods:
            return
        placed = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={NODE}").items
        used_cpu = sum(_requests(p)[0] for p in placed if p.status.phase not in ("Succeeded", "Failed"))
        used_mem = sum(_requests(p)[1] for p in placed if p.status.phase not in ("Succeeded", "Failed"))
        for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
            if pod.metadata.deletion_timestamp:
                continue
            cpu, mem = _requests(pod)
            if used_cpu + cpu > self.cpus + 1e-9 or used_mem + mem > self.memory:
                why = "Insufficient cpu" if used_cpu + cpu > self.cpus + 1e-9 else "Insufficient memory"
                self._unschedulable(pod, f"0/1 nodes are available: 1 {why}.")
                continue
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod.metadata.name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
            }
            try:
                self.core.create_namespaced_binding(pod.metadata.namespace, binding, _preload_content=False)
            except ApiException as exc:
                log.warning("binding %s: %s", pod.metadata.name, exc.reason)
                continue
            used_cpu, used_mem = used_cpu + cpu, used_mem + mem

    def _unschedulable(self, pod: Any, message: str) -> None:
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.message == message:
                return
        self.core.patch_namespaced_pod_status(
            pod.metadata.name,
            pod.metadata.namespace,
            {
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": message,
                            "lastTransitionTime": now(),
                        }
                    ],
                }
            },
        )

    # -- the kubelet's part: this node's pods -------------------------------------------------------------
    def run_pods(self) -> None:
        self._adopt()
        while True:
            try:
                stream = watch.Watch().stream(
                    self.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={NODE}", timeout_seconds=300
                )
                for event in stream:
                    pod = event["object"]
                    log.info(
                        "%s pod %s/%s (%s%s)",
                        event["type"].lower(),
                        pod.metadata.namespace,
                        pod.metadata.name,
                        pod.status.phase,
                        ", being deleted" if pod.metadata.deletion_timestamp else "",
                    )
                    if event["type"] == "DELETED":
                        self._remove_container(pod.metadata.uid)
                    elif pod.metadata.deletion_timestamp:
                        with self.lock:
                            if pod.metadata.uid in self.deleting:
                                continue
                            self.deleting.add(pod.metadata.uid)
                        threading.Thread(target=self._delete, args=(pod,), daemon=True).start()
                    elif pod.metadata.uid not in self.started and pod.status.phase in (None, "Pending"):
                        with self.lock:
                            self.started.add(pod.metadata.uid)
                        threading.Thread(target=self._run, args=(pod,), daemon=True).start()
            except Exception as exc:
                log.warning("watching pods: %s", exc)
                time.sleep(1)

    def _adopt(self) -> None:
        """After a restart: keep following the containers of pods that still exist; remove the others."""
        for container in self.engine.containers.list(all=True, filters={"label": LABEL_UID}):
            labels = container.labels
            try:
                pod = self.core.read_namespaced_pod(labels[LABEL_NAME], labels[LABEL_NAMESPACE])
            except ApiException:
                pod = None
            if pod is None or pod.metadata.uid != labels[LABEL_UID]:
                container.remove(force=True)
                continue
            self.started.add(pod.metadata.uid)
            threading.Thread(target=self._wait, args=(pod, container), daemon=True).start()

    def _status(self, pod: Any, status: dict[str, Any]) -> None:
        try:
            self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, {"status": status})
        except ApiException as exc:
            if exc.status != 404:
                raise

    def _waiting(self, pod: Any, spec: Any, reason: str, message: str) -> None:
        self._status(
            pod,
            {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": spec.name,
                        "image": spec.image,
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"waiting": {"reason": reason, "message": message}},
                    }
                ],
            },
        )

    def _run(self, pod: Any) -> None:
        spec = pod.spec.containers[0]
        try:
            self._pull(pod, spec)
            kwargs = self._container_config(pod, spec)
        except _Waiting as wait:
            self._waiting(pod, spec, wait.reason, wait.message)
            return
        try:
            container = self.engine.containers.create(spec.image, **kwargs)
            container.start()
        except APIError as exc:
            self._waiting(pod, spec, "RunContainerError", str(exc.explanation or exc)[:500])
            return
        container.reload()
        self._status(
            pod,
            {
                "phase": "Running",
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "startTime": now(),
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now()},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now()},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": now()},
                ],
                "containerStatuses": [
                    {
                        "name": spec.name,
                        "image": spec.image,
                        "imageID": container.image.id,
                        "containerID": f"docker://{container.id}",
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": now()}},
                    }
                ],
            },
        )
        self._wait(pod, container)

    def _pull(self, pod: Any, spec: Any) -> None:
        policy = spec.image_pull_policy or "IfNotPresent"
        try:
            self.engine.images.get(spec.image)
            if policy != "Always":
                return
        except ImageNotFound:
            if policy == "Never":
                raise _Waiting(
                    "ErrImageNeverPull", f"image {spec.image} is not present and the pull policy is Never"
                ) from None
        self._waiting(pod, spec, "ContainerCreating", f"pulling image {spec.image}")
        for attempt in range(6):
            try:
                self.engine.images.pull(spec.image)
                return
            except (APIError, ImageNotFound) as exc:
                message = str(getattr(exc, "explanation", None) or exc)[:500]
                self._waiting(pod, spec, "ErrImagePull" if attempt == 0 else "ImagePullBackOff", message)
                time.sleep(min(10, 2**attempt))
        raise _Waiting("ImagePullBackOff", f"image {spec.image} could not be pulled")

    def _container_config(self, pod: Any, spec: Any) -> dict[str, Any]:
        uid = pod.metadata.uid
        volumes: dict[str, Path] = {}
        for volume in pod.spec.volumes or []:
            where = self.state / uid / "volumes" / volume.name
            where.mkdir(parents=True, exist_ok=True)
            if volume.empty_dir is not None:
                where.chmod(0o777)
            elif volume.config_map is not None or volume.secret is not None:
                self._project(pod, volume, where)
            else:
                raise _Waiting(
                    "CreateContainerConfigError",
                    f"volume {volume.name}: only configMap, secret and emptyDir volumes are supported by this node",
                )
            volumes[volume.name] = where
        mounts = []
        for mount in spec.volume_mounts or []:
            if mount.name not in volumes:
                raise _Waiting("CreateContainerConfigError", f"volume mount {mount.name}: no such volume")
            mounts.append(
                docker.types.Mount(
                    mount.mount_path, str(volumes[mount.name]), type="bind", read_only=bool(mount.read_only)
                )
            )
        env = {}
        for var in spec.env or []:
            if var.value_from is not None:
                field = var.value_from.field_ref.field_path if var.value_from.field_ref else None
                values = {
                    "metadata.name": pod.metadata.name,
                    "metadata.namespace": pod.metadata.namespace,
                    "spec.nodeName": NODE,
                    "metadata.uid": uid,
                }
                if field not in values:
                    raise _Waiting(
                        "CreateContainerConfigError",
                        f"env {var.name}: only fieldRef to {', '.join(values)} is supported by this node",
                    )
                env[var.name] = values[field]
            else:
                env[var.name] = var.value or ""
        limits = (spec.resources.limits if spec.resources else None) or {}
        kwargs: dict[str, Any] = {
            "entrypoint": spec.command,
            "command": spec.args,
            "working_dir": spec.working_dir,
            "environment": env,
            "mounts": mounts,
            "network_mode": "none",
            "hostname": pod.metadata.name,
            "labels": {
                LABEL_UID: uid,
                LABEL_NAME: pod.metadata.name,
                LABEL_NAMESPACE: pod.metadata.namespace,
                "io.kubernetes.container.name": spec.name,
            },
            "detach": True,
        }
        if limits.get("memory"):
            kwargs["mem_limit"] = kwargs["memswap_limit"] = int(quantity(limits["memory"]))
        if limits.get("cpu"):
            kwargs["nano_cpus"] = int(quantity(limits["cpu"]) * 1e9)
        security = spec.security_context or pod.spec.security_context
        if security is not None and security.run_as_user is not None:
            group = security.run_as_group if security.run_as_group is not None else security.run_as_user
            kwargs["user"] = f"{security.run_as_user}:{group}"
        return kwargs

    def _project(self, pod: Any, volume: Any, where: Path) -> None:
        """A configMap's or secret's keys as files (binaryData included), as the kubelet projects them."""
        import base64

        source = volume.config_map or volume.secret
        name = source.name if volume.config_map is not None else source.secret_name
        try:
            if volume.config_map is not None:
                obj = self.core.read_namespaced_config_map(name, pod.metadata.namespace)
                files = {k: v.encode() for k, v in (obj.data or {}).items()}
                files.update({k: base64.b64decode(v) for k, v in (obj.binary_data or {}).items()})
            else:
                obj = self.core.read_namespaced_secret(name, pod.metadata.namespace)
                files = {k: base64.b64decode(v) for k, v in (obj.data or {}).items()}
        except ApiException as exc:
            if exc.status == 404 and not source.optional:
                raise _Waiting(
                    "CreateContainerConfigError", f"{'configmap' if volume.config_map else 'secret'} {name!r} not found"
                ) from None
            raise
        items = {item.key: item.path for item in (source.items or [])} or {key: key for key in files}
        for key, path in items.items():
            target = where / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[key])
            target.chmod(0o644)

    def _wait(self, pod: Any, container: Any) -> None:
        result = container.wait()
        container.reload()
        state = container.attrs["State"]
        code = int(result.get("StatusCode", state.get("ExitCode", -1)))
        reason = "OOMKilled" if state.get("OOMKilled") else ("Completed" if code == 0 else "Error")
        spec = pod.spec.containers[0]
        self._status(
            pod,
            {
                "phase": "Succeeded" if code == 0 else "Failed",
                "conditions": [
                    {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now()},
                    {
                        "type": "ContainersReady",
                        "status": "False",
                        "reason": "PodCompleted",
                        "lastTransitionTime": now(),
                    },
                ],
                "containerStatuses": [
                    {
                        "name": spec.name,
                        "image": spec.image,
                        "imageID": container.image.id,
                        "containerID": f"docker://{container.id}",
                        "ready": False,
                        "restartCount": 0,
                        "started": False,
                        "state": {
                            "terminated": {
                                "exitCode": code,
                                "reason": reason,
                                "startedAt": state.get("StartedAt"),
                                "finishedAt": now(),
                                "containerID": f"docker://{container.id}",
                            }
                        },
                    }
                ],
            },
        )
        self.wake.set()  # its CPUs are free for pods waiting to be placed

    def _delete(self, pod: Any) -> None:
        """A pod being deleted: its container gets SIGTERM, the pod's grace period, SIGKILL; then the pod goes."""
        grace = pod.metadata.deletion_grace_period_seconds
        for container in self._containers(pod.metadata.uid):
            with contextlib.suppress(NotFound):
                container.stop(timeout=int(grace if grace is not None else 30))
        try:
            body = {
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": pod.metadata.uid},
            }  # the body's word, not the query's
            self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, body=body)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def _containers(self, uid: str) -> list[Any]:
        return list(self.engine.containers.list(all=True, filters={"label": f"{LABEL_UID}={uid}"}))

    def _remove_container(self, uid: str) -> None:
        for container in self._containers(uid):
            with contextlib.suppress(NotFound):
                container.remove(force=True)
        shutil.rmtree(self.state / uid, ignore_errors=True)
        with self.lock:
            self.started.discard(uid)
            self.deleting.discard(uid)
        self.wake.set()

    # -- logs, as the API server asks a kubelet for them -----------------------------------------------------
    def serve_logs(self, cert: str, key: str, port: int = 10250) -> None:
        agent = self

        class Logs(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection closes: a followed log streams

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                match = re.fullmatch(r"/containerLogs/([^/]+)/([^/]+)/([^/]+)", url.path)
                if not match:
                    self.send_error(404, "not found")
                    return
                namespace, name, _container = match.groups()
                query = urllib.parse.parse_qs(url.query)
                containers = agent.engine.containers.list(
                    all=True, filters={"label": [f"{LABEL_NAME}={name}", f"{LABEL_NAMESPACE}={namespace}"]}
                )
                if not containers:
                    self.send_error(404, f"no container for pod {namespace}/{name}")
                    return
                follow = query.get("follow", ["false"])[0] == "true"
                tail = int(query["tailLines"][0]) if "tailLines" in query else "all"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                try:
                    for chunk in containers[0].logs(stream=True, follow=follow, tail=tail):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass  # the API server's reader went away

            def log_message(self, format: str, *args: Any) -> None:
                log.debug(format, *args)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Logs)
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()


class _Waiting(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _requests(pod: Any) -> tuple[float, float]:
    cpu = mem = 0.0
    for spec in pod.spec.containers:
        resources = spec.resources
        asked = (resources.requests or resources.limits or {}) if resources else {}
        cpu += quantity(asked.get("cpu"))
        mem += quantity(asked.get("memory"))
    return cpu, mem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--state", required=True, help="where the pods' volumes are kept")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--memory", type=int, default=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # kill -USR1: every thread's stack, into the log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    agent = Agent(config.new_client_from_config(args.kubeconfig), Path(args.state), args.cpus, args.memory)
    agent.register()
    threading.Thread(target=agent.heartbeats, daemon=True).start()
    threading.Thread(target=agent.schedule, daemon=True).start()
    threading.Thread(target=agent.serve_logs, args=(args.cert, args.key), daemon=True).start()
    log.info("node %s: %d CPUs, %d bytes", NODE, args.cpus, args.memory)
    agent.run_pods()


if __name__ == "__main__":
    main()
