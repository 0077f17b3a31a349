"""The Kubernetes target's pure parts, without a cluster: the Job manifest it renders and how it reads a
Job's pod (built from the Kubernetes client's own model classes) as a status. The end-to-end behaviour on a
real control plane is tests/test_kubernetes.py's.
"""

from __future__ import annotations

from kubernetes.client import (
    V1ContainerState,
    V1ContainerStateTerminated,
    V1ContainerStateWaiting,
    V1ContainerStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodCondition,
    V1PodStatus,
)

from jupyter_promote.models import JobRecord, JobState, Resources
from jupyter_promote.targets.kubernetes import job_name
from jupyter_promote.targets.kubernetes_manifest import PodSettings, job_manifest
from jupyter_promote.targets.kubernetes_status import (
    ended_status,
    lost_status,
    not_started_status,
    stuck_message,
)

HANDLE = {"namespace": "promote", "job": "promote-j1", "uid": "u-1", "memory": 1 << 30}


def pod(phase: str, state: V1ContainerState | None = None, conditions: list[V1PodCondition] | None = None) -> V1Pod:
    statuses = [V1ContainerStatus(name="job", image="i", image_id="", ready=False, restart_count=0, state=state)]
    return V1Pod(
        metadata=V1ObjectMeta(name="promote-j1-abcde"),
        status=V1PodStatus(phase=phase, container_statuses=statuses if state else None, conditions=conditions),
    )


def test_the_job_manifest_asks_for_the_jobs_resources_with_a_deadline_as_backstop(tmp_path):
    # Given a job with CPUs, memory, a GPU and a time limit, and a site's node selector
    resources = Resources.parse(cpus=2, memory="1G", gpus=1, time="10m")
    record = JobRecord(id="Job_01", notebook=str(tmp_path / "a.ipynb"), target="kubernetes", kernel="python3")
    record.resources = resources
    # When its Job is rendered
    manifest = job_manifest(record, job_name(record.id), "img", b"key", PodSettings(node_selector={"gpu": "yes"}))
    # Then the container is limited to them, the GPU is not a request, and the deadline comes after the runner's
    pod_spec = manifest["spec"]["template"]["spec"]
    limits = pod_spec["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": str(resources.cpus), "memory": str(resources.memory_bytes), "nvidia.com/gpu": "1"}
    assert "nvidia.com/gpu" not in pod_spec["containers"][0]["resources"]["requests"]
    assert manifest["spec"]["activeDeadlineSeconds"] == 600 + 300
    assert pod_spec["nodeSelector"] == {"gpu": "yes"} and pod_spec["restartPolicy"] == "Never"
    assert manifest["metadata"]["name"] == job_name("Job_01") == "promote-job-01"


def test_a_pod_no_node_can_take_is_queued_with_the_schedulers_reason():
    unschedulable = V1PodCondition(type="PodScheduled", status="False", reason="Unschedulable", message="0/1 nodes")
    status = not_started_status(pod("Pending", conditions=[unschedulable]), None)
    assert (status.state, status.reason, status.message) == (JobState.QUEUED, "Unschedulable", "0/1 nodes")
    assert not_started_status(None, None).state is JobState.QUEUED
    assert not_started_status(pod("Running"), None).state is JobState.RUNNING


def test_only_a_pod_that_cannot_start_by_itself_is_stuck_with_its_first_message_line():
    pull = V1ContainerStateWaiting(reason="ErrImagePull", message="no such image\nmore detail")
    assert stuck_message(pull) == "no such image"
    assert stuck_message(V1ContainerStateWaiting(reason="ContainerCreating")) is None


def test_an_oom_kill_is_reported_with_the_limit_and_overrides_the_runner():
    killed = V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=137, reason="OOMKilled"))
    ended = pod("Failed", killed)
    status = ended_status(ended, killed.terminated, None, HANDLE)
    assert (status.state, status.reason, status.exit_code, status.overrides) == (JobState.FAILED, "oom", 137, True)
    assert "limit" in (status.message or "")
    # a job that ran to its end is left to the runner's own final event
    done = V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0, reason="Completed"))
    assert ended_status(pod("Succeeded", done), done.terminated, None, HANDLE).state is None


def test_a_job_the_cluster_forgot_is_lost_unless_we_cancelled_it():
    assert lost_status(HANDLE).reason == "lost" and "promote-j1" in (lost_status(HANDLE).message or "")
    assert lost_status({**HANDLE, "cancelled": True}).state is JobState.CANCELLED
