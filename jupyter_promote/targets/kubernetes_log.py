"""A Kubernetes job's pod log, its events' channel: read once, or followed as ``kubectl logs -f`` does.

A followed log is read in a thread of its own and fed to the job's
:class:`~jupyter_promote.channel.receiver.Receiver` on the server's event loop (what was relayed before a
restart is skipped by seq). A job is *tailed* once its whole log, to its container's end, has been read;
a broken stream is taken up again at the next relay.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..channel.receiver import Receiver
from .kubernetes_status import container_state

#: Seconds a followed log that ended may wait for the pod's status to say its container ended.
END_WAIT_S = 10.0


class PodLogs:
    """The log readers of one target's jobs. ``core`` gives a CoreV1Api client."""

    def __init__(self, core: Callable[[], Any], log: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        self._core = core
        self._log = log
        self._follows: dict[str, threading.Thread] = {}
        self.tailed: set[str] = set()  # jobs whose whole log has been read

    def forget(self, job_id: str) -> None:
        """A new attempt of ``job_id``: its log is another pod's, read from its start."""
        self.tailed.discard(job_id)
        self._follows.pop(job_id, None)

    def following(self, job_id: str) -> bool:
        """Whether ``job_id``'s log is read to its end or being followed now."""
        thread = self._follows.get(job_id)
        return job_id in self.tailed or (thread is not None and thread.is_alive())

    def read(self, receiver: Receiver, job_id: str, pod: Any, namespace: str) -> None:
        """What ``pod``'s log holds now, fed to ``receiver`` (nothing when the API refuses)."""
        from kubernetes.client.exceptions import ApiException

        try:
            text = self._core().read_namespaced_pod_log(pod.metadata.name, namespace)
        except ApiException:
            return
        receiver.feed(text + "\n")
        if container_state(pod)[1] is not None:  # it had ended: this was the whole log
            self.tailed.add(job_id)

    def follow(self, receiver: Receiver, job_id: str, pod: str, namespace: str) -> None:
        """Follow ``pod``'s log in a thread of its own; call on the event loop that ``receiver`` is fed on."""
        args = (asyncio.get_running_loop(), receiver, job_id, pod, namespace)
        thread = threading.Thread(target=self._follow, args=args, name=f"promote-kube-log-{job_id}", daemon=True)
        self._follows[job_id] = thread
        thread.start()

    def _follow(self, loop: asyncio.AbstractEventLoop, receiver: Receiver, job_id: str, pod: str, ns: str) -> None:
        """The pod's log, followed from its start, fed to the receiver on ``loop``."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            response = self._core().read_namespaced_pod_log(pod, ns, follow=True, _preload_content=False)
            for chunk in response.stream(65536):
                loop.call_soon_threadsafe(receiver.feed, decoder.decode(chunk))
            response.release_conn()
            # a followed log ends as its container does, a moment before the pod's status says so
            deadline = time.monotonic() + END_WAIT_S
            while container_state(self._core().read_namespaced_pod(pod, ns))[1] is None:
                if time.monotonic() > deadline:  # the stream broke while the container runs: read again later
                    return
                time.sleep(0.25)
            loop.call_soon_threadsafe(receiver.feed, decoder.decode(b"", final=True) + "\n")
            loop.call_soon_threadsafe(self.tailed.add, job_id)
        except RuntimeError:  # the event loop is gone (the server stopped)
            return
        except Exception as exc:
            self._log.warning(
                "jupyter-promote: the log of Kubernetes job %s broke off (%s); reading it again", job_id, exc
            )
