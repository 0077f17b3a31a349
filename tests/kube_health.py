"""The test cluster's node, looked at before each Kubernetes test: Ready and schedulable, its kubelet and
containerd alive, the cluster's registry reachable from inside the cluster's network namespace (where the node
pulls from). A node found unwell is started again by the project's own script (scripts/k8s-up.sh) and the run's
summary says so, with what was seen; one that stays unwell fails the test at once with what was seen, instead of
letting it wait out its timeout. A Kubernetes test that fails gets the same picture in its report.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "promote-kube"  # the cluster's network namespace (scripts/k8s-up.sh)
ADMIN_KUBECONFIG = "/etc/promote-kube/admin.kubeconfig"
REGISTRY = Path("/etc/promote-kube/registry")
LOGS = Path("/var/lib/promote-kube")
#: What the run's summary reports: each time the node was found unwell and started again.
restarts: list[str] = []


def _run(*argv: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 1, "", f"{type(exc).__name__}: {exc}")


def _node() -> dict | None:
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(ADMIN_KUBECONFIG))
    try:
        return api.read_node("promote-node", _request_timeout=5).to_dict()
    except Exception:
        return None


def problems() -> list[str]:
    """What is wrong with the node now; empty when it can run a pod."""
    found = []
    node = _node()
    if node is None:
        found.append("the API server does not answer for node promote-node")
    else:
        conditions = {c["type"]: c["status"] for c in node["status"].get("conditions") or []}
        if conditions.get("Ready") != "True":
            found.append(f"node conditions {conditions}")
        taints = [f"{t['key']}:{t['effect']}" for t in node["spec"].get("taints") or []]
        if taints:
            found.append(f"node taints {taints}")
    for what, pattern in (
        ("kubelet", "^/opt/promote-kube/bin/kubelet "),
        ("containerd", "containerd --config /etc/promote-kube/"),
    ):
        if _run("pgrep", "-f", pattern).returncode != 0:
            found.append(f"no {what} process")
    address = REGISTRY.read_text().strip() if REGISTRY.exists() else "127.0.0.1:5000"
    probe = _run("ip", "netns", "exec", NAMESPACE, "curl", "-sf", "--max-time", "3", f"http://{address}/v2/")
    if probe.returncode != 0:
        found.append(f"the registry {address} does not answer inside network namespace {NAMESPACE}")
    return found


def picture() -> str:
    """What the node, its pods and the machine look like now: for a report."""
    lines = []
    node = _node()
    if node is not None:
        lines.append("node conditions: " + json.dumps({c["type"]: c["status"] for c in node["status"]["conditions"]}))
        lines.append("node taints: " + json.dumps([t["key"] for t in node["spec"].get("taints") or []]))
    try:
        from kubernetes import client, config

        api = client.CoreV1Api(config.new_client_from_config(ADMIN_KUBECONFIG))
        for pod in api.list_namespaced_pod("promote", _request_timeout=5).items:
            states = [
                f"{s.name}:{(s.state.waiting and s.state.waiting.reason) or (s.state.terminated and s.state.terminated.reason) or 'running'}"
                for s in pod.status.container_statuses or []
            ]
            lines.append(f"pod {pod.metadata.name}: {pod.status.phase} {states}")
        events = sorted(
            api.list_namespaced_event("promote", _request_timeout=5).items,
            key=lambda e: str(e.last_timestamp or e.event_time or ""),
        )
        for event in events[-15:]:
            lines.append(f"event {event.last_timestamp} {event.involved_object.name}: {event.reason}: {event.message}")
    except Exception as exc:
        lines.append(f"the API server did not list pods and events: {exc}")
    lines.append(
        "processes: " + _run("pgrep", "-af", "promote-kube|ns_reverse_bridge|ns_bridge").stdout.replace("\n", "; ")
    )
    lines.append(_run("df", "-h", "/", "/tmp", "/var/lib").stdout)
    lines.append(_run("free", "-m").stdout)
    for log in ("kubelet.log", "containerd.log"):
        text = (LOGS / log).read_text(errors="replace").splitlines() if (LOGS / log).exists() else []
        errors = [line for line in text if line.startswith("E") or "level=error" in line]
        lines.append(f"{log}, its last errors:\n" + "\n".join(line[:300] for line in errors[-12:]))
    return "\n".join(lines)


def ensure_well(test: str) -> None:
    """Before a Kubernetes test: a node found unwell is started again (and the run's summary says so); one that
    stays unwell fails the test now, with what was seen."""
    import pytest

    found = problems()
    if not found:
        return
    seen = picture()
    started = _run("bash", str(ROOT / "scripts" / "k8s-up.sh"), timeout=600)
    still = problems()
    restarts.append(f"before {test}: {'; '.join(found)}; scripts/k8s-up.sh exited {started.returncode}\n{seen}")
    if still:
        pytest.fail(
            f"the Kubernetes test cluster is unwell ({'; '.join(still)}), even after scripts/k8s-up.sh:\n{seen}"
        )
