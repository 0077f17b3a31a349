"""Forward 127.0.0.1:PORT of the host's network namespace to 127.0.0.1:PORT of a named one.

The Ray head runs in a network namespace of its own where only ``lo`` exists (Ray otherwise advertises
the machine's external address, even when told 127.0.0.1). A client needs only the head's dashboard
(HTTP: job submission, status, logs, package uploads), so this process listens on the host's loopback,
then enters the namespace (``setns``) and connects there for each client: loopback to loopback, nothing
else listens or is reached.

Usage: python ns_bridge.py NAMESPACE PORT   (as root; the namespace is /run/netns/NAMESPACE)
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import sys

CLONE_NEWNET = 0x40000000


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve(listener: socket.socket, port: int) -> None:
    async def bridge(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:  # made in this thread, which is in the namespace now
            head_reader, head_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, head_writer), pipe(head_reader, client_writer))

    server = await asyncio.start_server(bridge, sock=listener)
    async with server:
        await server.serve_forever()


def main() -> None:
    name, port = sys.argv[1], int(sys.argv[2])
    listener = socket.create_server(("127.0.0.1", port))  # in the host's namespace
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), f"setns into {name}")
    os.close(fd)
    asyncio.run(serve(listener, port))


if __name__ == "__main__":
    main()
