"""Forward 127.0.0.1:PORT of a named network namespace to 127.0.0.1:PORT of the host's: ns_bridge.py reversed.

The test cluster's node (scripts/k8s-node-up.sh) pulls images from the cluster's registry, which serves on
the host's loopback; its containerd runs in the cluster's network namespace, where only the namespace's own
addresses exist. This process listens on the namespace's loopback (the socket is made there, after
``setns``), goes back to the host's namespace and connects there for each client: loopback to loopback,
nothing else listens or is reached. containerd takes a registry on 127.0.0.1 for plain HTTP.

Usage: python ns_reverse_bridge.py NAMESPACE PORT   (as root; the namespace is /run/netns/NAMESPACE)
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import sys

from ns_bridge import CLONE_NEWNET, serve


def enter(fd: int, what: str) -> None:
    if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), f"setns into {what}")


def main() -> None:
    name, port = sys.argv[1], int(sys.argv[2])
    host = os.open("/proc/self/ns/net", os.O_RDONLY)
    inside = os.open(f"/run/netns/{name}", os.O_RDONLY)
    enter(inside, name)
    listener = socket.create_server(("127.0.0.1", port))  # in the named namespace
    enter(host, "the host's network namespace")
    os.close(inside)
    os.close(host)
    asyncio.run(serve(listener, port))  # connects on the host's loopback


if __name__ == "__main__":
    main()
