"""Load on the server extension: many concurrent jobs on the local target, each writing events fast.

A real ``jupyter server`` (its own process, token auth) runs N jobs at once; each job's notebook writes
``metric`` events at R per second for S seconds through the in-job runtime (the same EventLog the monitor
uses). Meanwhile this process

* listens on the server's event bus (``/api/events/subscribe``, a websocket) and notes when each event
  arrives: event latency = arrival - the ``ts`` the job wrote into the event;
* calls ``GET /jupyter-promote/jobs`` every 50 ms and times it; the same call on the idle server, once
  every job has ended (the same N records), is the baseline the loaded figure is reported against.

When every job has ended it counts, per job, the events the notebook says it wrote against those in the
store (``GET jobs/{id}/events``) and those that reached the bus. Targets (issue 5): events lost 0,
``GET jobs`` p99 under 100 ms, event latency p99 under 1 s.

With ``--nice 10`` the jobs run niced (``LocalTarget.nice``), as a workstation that keeps its Jupyter
server responsive would run them; the default runs them as equals of the server.

Usage: python benchmarks/server_load.py [--jobs 50] [--rate 200] [--seconds 30] [--nice 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

BIN = Path(sys.executable).parent
TOKEN = "promote-bench-token"
SCHEMA = "https://events.jupyter.org/jupyter_promote/job_events/v1"

EMIT_CELL = """\
import time
from jupyter_promote.runtime import current_job
log = current_job().log
interval, start, written = 1.0 / rate, time.monotonic(), 0
while time.monotonic() - start < seconds:
    log.emit("metric", source="bench", metrics={"i": written})
    written += 1
    delay = start + written * interval - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""


def notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("rate = 200\nseconds = 30")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(EMIT_CELL),
                nbformat.v4.new_code_cell("import jupyter_promote as promote\npromote.report(written=written)")]  # fmt: skip
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Client:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.http = AsyncHTTPClient(max_clients=20)
        self.headers = {"Authorization": f"token {TOKEN}"}

    async def call(self, method: str, path: str, body: object = None) -> object:
        request = HTTPRequest(f"{self.base}/jupyter-promote/{path}", method=method, headers=self.headers,
                              body=json.dumps(body) if body is not None else None, request_timeout=120)  # fmt: skip
        response = await self.http.fetch(request)
        return json.loads(response.body)

    async def timed_list(self, limit: int = 50) -> tuple[float, object]:
        start = time.perf_counter()
        body = await self.call("GET", f"jobs?limit={limit}")
        return time.perf_counter() - start, body


async def bench(args: argparse.Namespace, work: Path) -> dict[str, object]:
    root = work / "root"
    root.mkdir()
    notebook(root / "emit.ipynb")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(work / "server.log", "wb")  # noqa: SIM115 (held by the server process for the whole benchmark)
    server = subprocess.Popen(
        [
            str(BIN / "jupyter"),
            "server",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            f"--PromoteExtension.store_path={work / 'jobs.sqlite'}",
            f"--LocalTarget.nice={args.nice}",
        ],
        env={**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    client = Client(port)
    try:
        for _ in range(300):
            try:
                await client.call("GET", "targets")
                break
            except Exception:
                await asyncio.sleep(0.2)

        arrivals: dict[tuple[str, int], float] = {}
        latencies: list[float] = []
        ws = await websocket_connect(HTTPRequest(f"ws://127.0.0.1:{port}/api/events/subscribe", headers=client.headers))

        async def listen() -> None:
            while True:
                message = await ws.read_message()
                if message is None:
                    return
                now = time.time()
                data = json.loads(message)
                if data.get("__schema__", data.get("schema_id")) != SCHEMA:
                    continue
                for event in json.loads(data["events"]):
                    arrivals[(data["job"], event["seq"])] = now
                    if event.get("source") == "bench":
                        latencies.append(now - event["ts"])

        listener = asyncio.create_task(listen())
        body = {"notebook": "emit.ipynb", "parameters": {"rate": args.rate, "seconds": args.seconds}}
        started = time.monotonic()
        ids = [str((await client.call("POST", "jobs", body))["id"]) for _ in range(args.jobs)]  # type: ignore[index]
        loaded: list[float] = []
        while True:
            seconds, listing = await client.timed_list(args.jobs)
            loaded.append(seconds)
            states = [job["state"] for job in listing["jobs"]]  # type: ignore[index]
            if all(state in ("succeeded", "failed", "cancelled") for state in states):
                break
            await asyncio.sleep(0.05)
        wall = time.monotonic() - started
        idle = [(await client.timed_list(args.jobs))[0] for _ in range(100)]  # the same listing, no load
        await asyncio.sleep(1.0)  # the bus's last messages
        listener.cancel()
        ws.close()

        written = stored = on_bus = duplicates = 0
        failed = []
        for job_id in ids:
            record = await client.call("GET", f"jobs/{job_id}")
            if record["state"] != "succeeded":  # type: ignore[index]
                failed.append(f"{job_id}: {record['state']} {record.get('message')}")  # type: ignore[index, union-attr]
            written += int(record["metrics"].get("written", 0))  # type: ignore[index]
            events, after = [], 0
            while True:
                page = (await client.call("GET", f"jobs/{job_id}/events?after={after}"))["events"]  # type: ignore[index]
                if not page:
                    break
                events += page
                after = page[-1]["seq"]
            seqs = [e["seq"] for e in events]
            duplicates += len(seqs) - len(set(seqs))
            bench = [e for e in events if e.get("source") == "bench"]
            stored += len(bench)
            on_bus += sum(1 for e in bench if (job_id, e["seq"]) in arrivals)
        return {
            "jobs": args.jobs, "nice": args.nice, "rate_per_job": args.rate, "seconds": args.seconds, "wall_s": round(wall, 1),
            "failed_jobs": failed, "events_written": written, "events_stored": stored, "events_on_bus": on_bus,
            "lost_in_store": written - stored, "lost_on_bus": written - on_bus, "stored_twice": duplicates,
            "achieved_rate_per_job": round(written / args.jobs / args.seconds, 1),
            "get_jobs_idle_ms": {"p50": round(pct(idle, 0.5) * 1e3, 1), "p99": round(pct(idle, 0.99) * 1e3, 1)},
            "get_jobs_loaded_ms": {"p50": round(pct(loaded, 0.5) * 1e3, 1), "p99": round(pct(loaded, 0.99) * 1e3, 1),
                                   "samples": len(loaded)},
            "get_jobs_p99_loaded_over_idle": round(pct(loaded, 0.99) / pct(idle, 0.99), 2),
            "event_latency_ms": {"p50": round(pct(latencies, 0.5) * 1e3, 1), "p99": round(pct(latencies, 0.99) * 1e3, 1),
                                 "max": round(max(latencies, default=float("nan")) * 1e3, 1)},
        }  # fmt: skip
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--rate", type=int, default=200, help="events per second per job")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--nice", type=int, default=0, help="LocalTarget.nice: niceness of the jobs (default 0)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="promote-load-") as tmp:
        result = asyncio.run(bench(args, Path(tmp)))
    print(json.dumps(result, indent=2))
    ok = (not result["failed_jobs"] and result["lost_in_store"] == 0 and result["lost_on_bus"] == 0
          and result["stored_twice"] == 0)  # fmt: skip
    print(f"targets: lost 0 {'met' if ok else 'MISSED'}; GET jobs p99 < 100 ms "
          f"{'met' if result['get_jobs_loaded_ms']['p99'] < 100 else 'MISSED'}; event latency p99 < 1 s "
          f"{'met' if result['event_latency_ms']['p99'] < 1000 else 'MISSED'}")  # type: ignore[index]  # fmt: skip


if __name__ == "__main__":
    main()
