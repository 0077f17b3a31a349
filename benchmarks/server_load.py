"""Load on the server extension: many jobs followed at once, each writing events fast.

A real ``jupyter server`` (its own process, token auth) follows N jobs it was asked for through its REST API.
Two modes:

* ``cluster`` (the default): the jobs run elsewhere and the server only follows them, as on a cluster. Each
  job is submitted to the ``local`` target, whose job process is a stand-in (``--LocalTarget.python`` points
  at a 4-line shell script): it registers its run directory with this benchmark and waits. The job's events
  are written by a few lightweight writer processes of the benchmark (``--writers``, 2 by default), through
  the runtime's own :class:`~jupyter_promote.runtime.events.EventLog` into each job's ``events.jsonl``: the
  runner's ``running``, R ``metric`` events per second for S seconds, the runner's ``succeeded``; then the
  stand-in is released and exits 0. The writers stand for a cluster's nodes: they run niced (``--writers-nice``,
  10) so that on a small machine they take the server's CPU no more than remote nodes would. The server's path from the file to the browser (follower, store, event
  bus) is the product's, unchanged. The writers start together once every job runs, so the load is N x R
  events per second for S seconds.
* ``kernels`` (``--kernels``): N real local jobs, each a kernel whose notebook writes the events through the
  in-job runtime (``current_job().log``), as before; on a 2-core machine the kernels compete with the server.

Meanwhile this process

* listens on the server's event bus (``/api/events/subscribe``, a websocket) and notes when each event
  arrives: event latency = arrival - the ``ts`` the writer put into the event;
* calls ``GET /jupyter-promote/jobs`` every 50 ms and times it; the same call on the idle server, once
  every job has ended (the same N records), is the baseline the loaded figure is reported against;
* reads the server's CPU time (``/proc/<pid>/stat``, its own threads, not its children) over the load.

When every job has ended it counts, per job, the events written against those in the store
(``GET jobs/{id}/events``) and those that reached the bus. Targets (issue 16): 0 lost or duplicated, event
latency p99 under 1 s, ``GET jobs`` p99 under 100 ms.

Usage: python benchmarks/server_load.py [--jobs 50] [--rate 200] [--seconds 60] [--writers 2] [--db-url URL]
       python benchmarks/server_load.py --jobs 500 --rate 20 --baseline-jobs 50   (500 jobs beside 50, same events/s)
       python benchmarks/server_load.py --kernels [--jobs 8] [--rate 200] [--seconds 60] [--nice 0]
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

BIN = Path(sys.executable).parent
TOKEN = "promote-bench-token"
SCHEMA = "https://events.jupyter.org/jupyter_promote/job_events/v1"
FINAL = ("succeeded", "failed", "cancelled")

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

#: The job's process in the cluster mode (``LocalTarget.python``, called as ``-m <runner module> RUN_DIR`` in
#: RUN_DIR): it registers with the writers and waits until its writer has written its events and releases it.
STAND_IN = """\
#!/bin/sh
mkfifo release || exit 1
printf '%s\\n' "$3" >> "$PROMOTE_BENCH_SPOOL"
exec cat release > /dev/null
"""


def notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("rate = 200\nseconds = 30")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(EMIT_CELL),
        nbformat.v4.new_code_cell("import jupyter_promote as promote\npromote.report(written=written)"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads, not its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the writers (cluster mode), each its own process ------------------------------------------------------
class WrittenJob:
    """One job a writer writes for: its run directory, its event log once the job is queued, its count."""

    def __init__(self, run: str) -> None:
        self.run = Path(run)
        with open(self.run / "job.json") as f:
            self.id = str(json.load(f)["id"])
        self.log: Any = None
        self.written = 0

    def queued(self) -> bool:
        """The server marked the job queued (after its target took it): the runner may now say it runs."""
        return b'"state":"queued"' in (self.run / "events.jsonl").read_bytes()

    def release(self) -> bool:
        try:
            fd = os.open(self.run / "release", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # the stand-in is not reading yet
                return False
            raise
        os.close(fd)
        return True


def write(spool: str, index: int, writers: int, jobs: int, rate: int, seconds: int) -> None:
    """Write for every ``writers``-th job registered in ``spool`` (from ``index``); print the counts."""
    from jupyter_promote.runtime.events import EventLog

    mine = len(range(index, jobs, writers))
    runs: list[str] = []
    while len(runs) < jobs:  # every job runs before any writes: the load starts at once
        with open(spool) as f:
            runs = f.read().split("\n")[:-1]
        time.sleep(0.02)
    todo = [WrittenJob(run) for run in runs[index::writers]]
    assert len(todo) == mine
    total, start, done = rate * seconds, time.monotonic(), {}
    while todo:
        now = time.monotonic()
        for job in list(todo):
            if job.log is None:
                if not job.queued():
                    continue
                job.log = EventLog(str(job.run / "events.jsonl"), job.id)
                job.log.emit("status", state="running", source="runner", pid=os.getpid())
            due = min(total, int((now - start) * rate) + 1)
            while job.written < due:
                job.log.emit("metric", source="bench", metrics={"i": job.written})
                job.written += 1
            if job.written == total:
                if job.log is not False:
                    job.log.emit("status", state="succeeded", source="runner")
                    job.log = False
                if job.release():
                    todo.remove(job)
                    done[job.id] = job.written
        time.sleep(0.005)
    print(json.dumps(done))


# -- the benchmark -----------------------------------------------------------------------------------------
class Client:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.http = AsyncHTTPClient(max_clients=20)
        self.headers = {"Authorization": f"token {TOKEN}"}

    async def call(self, method: str, path: str, body: object = None) -> Any:
        request = HTTPRequest(
            f"{self.base}/jupyter-promote/{path}",
            method=method,
            headers=self.headers,
            body=json.dumps(body) if body is not None else None,
            request_timeout=120,
        )
        response = await self.http.fetch(request)
        return json.loads(response.body)

    async def timed_list(self, limit: int = 50) -> tuple[float, Any]:
        start = time.perf_counter()
        body = await self.call("GET", f"jobs?limit={limit}")
        return time.perf_counter() - start, body


class Bus:
    """A websocket client of the server's event bus: when each job event arrived, and its latency."""

    def __init__(self) -> None:
        self.arrivals: dict[tuple[str, int], float] = {}
        self.latencies: list[float] = []
        self.twice = 0
        self.messages = 0

    async def listen(self, ws: Any) -> None:
        while True:
            message = await ws.read_message()
            if message is None:
                return
            now = time.time()
            data = json.loads(message)
            if data.get("__schema__", data.get("schema_id")) != SCHEMA:
                continue
            self.messages += 1
            for event in json.loads(data["events"]):
                key = (data["job"], event["seq"])
                self.twice += key in self.arrivals
                self.arrivals[key] = now
                if event.get("source") == "bench":
                    self.latencies.append(now - event["ts"])


def start_server(args: argparse.Namespace, work: Path, root: Path, port: int) -> subprocess.Popen[bytes]:
    extra, env = [f"--LocalTarget.nice={args.nice}"], {"JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")}
    if not args.kernels:
        stand_in = work / "stand-in.sh"
        stand_in.write_text(STAND_IN)
        stand_in.chmod(0o755)
        extra = [f"--LocalTarget.python={stand_in}"]
        env["PROMOTE_BENCH_SPOOL"] = str(work / "spool")
    log = open(work / "server.log", "wb")  # noqa: SIM115 (held by the server process for the whole benchmark)
    return subprocess.Popen(
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
            f"--PromoteExtension.db_url={args.db_url}",
            *extra,
        ],
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


#: The largest page ``GET jobs`` gives (the server's MAX_PAGE; the sidebar asks for this many).
PAGE = 200


async def all_ended(client: Client, jobs: int) -> bool:
    """Whether every job has ended, page by page (more than :data:`PAGE` jobs take several calls)."""
    for offset in range(0, jobs, PAGE):
        listing = await client.call("GET", f"jobs?limit={PAGE}&offset={offset}")
        if any(job["state"] not in FINAL for job in listing["jobs"]):
            return False
    return True


async def until_all_ended(
    client: Client, jobs: int, started: asyncio.Event | None, peak: dict[str, int]
) -> list[float]:
    """``GET jobs`` (the sidebar's call) every 50 ms until every job has ended: the timings once the load
    started; ``peak["fds"]``, the most file descriptors the server held meanwhile."""
    loaded: list[float] = []
    while True:
        seconds, listing = await client.timed_list(min(jobs, PAGE))
        if started is None or started.is_set():
            loaded.append(seconds)
        peak["fds"] = max(peak.get("fds", 0), len(os.listdir(f"/proc/{peak['pid']}/fd")))
        if all(job["state"] in FINAL for job in listing["jobs"]) and await all_ended(client, jobs):
            return loaded
        await asyncio.sleep(0.05)


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    root = work / "root"
    root.mkdir()
    notebook(root / "emit.ipynb")
    (work / "spool").touch()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_server(args, work, root, port)
    client = Client(port)
    writers: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(300):
            try:
                await client.call("GET", "targets")
                break
            except Exception:
                await asyncio.sleep(0.2)
        bus = Bus()
        ws = await websocket_connect(HTTPRequest(f"ws://127.0.0.1:{port}/api/events/subscribe", headers=client.headers))
        listener = asyncio.create_task(bus.listen(ws))
        if not args.kernels:
            writers = [
                subprocess.Popen(
                    [
                        "nice",
                        "-n",
                        str(args.writers_nice),
                        sys.executable,
                        __file__,
                        "--write",
                        str(work / "spool"),
                        str(k),
                        str(args.writers),
                        str(args.jobs),
                        str(args.rate),
                        str(args.seconds),
                    ],
                    stdout=subprocess.PIPE,
                )
                for k in range(args.writers)
            ]

        # the load: from the moment every job runs (cluster: the writers start) until every job has ended
        load_started = asyncio.Event()
        cpu: dict[str, float] = {}

        async def watch_start() -> None:
            while True:
                if args.kernels or len((work / "spool").read_text().splitlines()) >= args.jobs:
                    cpu["start"], cpu["wall"] = cpu_seconds(server.pid), time.monotonic()
                    load_started.set()
                    return
                await asyncio.sleep(0.01)

        watcher = asyncio.create_task(watch_start())
        body = {"notebook": "emit.ipynb", "parameters": {"rate": args.rate, "seconds": args.seconds}}
        ids = [str((await client.call("POST", "jobs", body))["id"]) for _ in range(args.jobs)]
        peak = {"pid": server.pid}
        loaded = await until_all_ended(client, args.jobs, load_started, peak)
        await watcher
        cpu_load, wall = cpu_seconds(server.pid) - cpu["start"], time.monotonic() - cpu["wall"]
        idle = [(await client.timed_list(min(args.jobs, PAGE)))[0] for _ in range(100)]  # the same listing, no load
        await asyncio.sleep(1.0)  # the bus's last messages
        listener.cancel()
        ws.close()

        by_writers: dict[str, int] = {}
        for writer in writers:
            out, _ = writer.communicate(timeout=60)
            by_writers.update(json.loads(out))
        written = stored = on_bus = duplicates = 0
        failed = []
        for job_id in ids:
            record = await client.call("GET", f"jobs/{job_id}")
            if record["state"] != "succeeded":
                failed.append(f"{job_id}: {record['state']} {record.get('message')}")
            written += by_writers[job_id] if writers else int(record["metrics"].get("written", 0))
            events, after = [], 0
            while True:
                page = (await client.call("GET", f"jobs/{job_id}/events?after={after}"))["events"]
                if not page:
                    break
                events += page
                after = page[-1]["seq"]
            seqs = [e["seq"] for e in events]
            duplicates += len(seqs) - len(set(seqs))
            bench = [e for e in events if e.get("source") == "bench"]
            stored += len(bench)
            on_bus += sum(1 for e in bench if (job_id, e["seq"]) in bus.arrivals)
        lat = bus.latencies
        return {
            "mode": "kernels"
            if args.kernels
            else f"cluster ({args.writers} writer processes, nice {args.writers_nice})",
            "store": args.db_url.split("@")[-1] if args.db_url else "sqlite",
            "jobs": args.jobs,
            "rate_per_job": args.rate,
            "seconds": args.seconds,
            "load_wall_s": round(wall, 1),
            "failed_jobs": failed,
            "events_written": written,
            "events_stored": stored,
            "events_on_bus": on_bus,
            "lost_in_store": written - stored,
            "lost_on_bus": written - on_bus,
            "stored_twice": duplicates,
            "on_bus_twice": bus.twice,
            "bus_messages": bus.messages,
            "achieved_rate_per_job": round(written / args.jobs / args.seconds, 1),
            "get_jobs_idle_ms": {"p50": round(pct(idle, 0.5) * 1e3, 1), "p99": round(pct(idle, 0.99) * 1e3, 1)},
            "get_jobs_loaded_ms": {
                "p50": round(pct(loaded, 0.5) * 1e3, 1),
                "p99": round(pct(loaded, 0.99) * 1e3, 1),
                "samples": len(loaded),
            },
            "event_latency_ms": {
                "p50": round(pct(lat, 0.5) * 1e3, 1),
                "p99": round(pct(lat, 0.99) * 1e3, 1),
                "max": round(max(lat, default=float("nan")) * 1e3, 1),
            },
            "server_cpu_s": round(cpu_load, 1),
            "server_cpu_s_per_10k_events": round(cpu_load / max(1, stored) * 1e4, 3),
            "server_cpu_share": round(cpu_load / wall, 2),
            "server_fds_max": peak["fds"],
        }
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def cells(result: dict[str, Any]) -> list[tuple[str, str, float, str, bool | None]]:
    """(figure, measured, the number a ratio is taken of, target, met) of one run."""
    lost = result["lost_in_store"], result["lost_on_bus"]
    twice = result["stored_twice"], result["on_bus_twice"]
    lat, get, idle = result["event_latency_ms"], result["get_jobs_loaded_ms"], result["get_jobs_idle_ms"]
    cpu = result["server_cpu_s_per_10k_events"]
    ok_lost = not result["failed_jobs"] and lost == (0, 0)
    return [
        ("events lost (store / bus)", f"{lost[0]} / {lost[1]}", sum(lost), "0", ok_lost),
        ("events duplicated (store / bus)", f"{twice[0]} / {twice[1]}", sum(twice), "0", twice == (0, 0)),
        (
            "event latency p50 / p99 (ms)",
            f"{lat['p50']:.0f} / {lat['p99']:.0f}",
            lat["p99"],
            "p99 < 1000",
            lat["p99"] < 1000,
        ),
        (
            "GET jobs p50 / p99 under load (ms)",
            f"{get['p50']:.1f} / {get['p99']:.1f}",
            get["p99"],
            "p99 < 100",
            get["p99"] < 100,
        ),
        ("GET jobs p50 / p99 idle (ms)", f"{idle['p50']:.1f} / {idle['p99']:.1f}", idle["p99"], "(baseline)", None),
        (
            "server CPU s per 10,000 events",
            f"{cpu:.2f} ({result['server_cpu_share']:.0%} of a core)",
            cpu,
            "(reported)",
            None,
        ),
        ("server file descriptors, most", str(result["server_fds_max"]), result["server_fds_max"], "(reported)", None),
    ]


def report(result: dict[str, Any], baseline: dict[str, Any] | None = None) -> bool:
    """Each figure beside its baseline run (and the ratio of the two) and its target; True when every target
    is met."""
    rows, base = cells(result), cells(baseline) if baseline else None
    what = f"{baseline['jobs']} jobs x {baseline['rate_per_job']}/s" if baseline else "-"
    now = f"{result['jobs']} jobs x {result['rate_per_job']}/s"
    print(f"{'figure':36} {now:26} {what:26} {'ratio':7} target")
    for i, (name, measured, number, target, ok) in enumerate(rows):
        then = base[i] if base else ("", "", 0.0, "", None)
        ratio = f"x{number / then[2]:.2f}" if base and then[2] else ""
        print(
            f"{name:36} {measured:26} {then[1]:26} {ratio:7} {target} {'' if ok is None else 'met' if ok else 'MISSED'}"
        )
    return all(ok for *_, ok in rows if ok is not None)


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        spool, *numbers = sys.argv[2:]
        write(spool, *(int(n) for n in numbers))  # type: ignore[arg-type]
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", action="store_true", help="real kernels write the events (default: writers)")
    parser.add_argument("--jobs", type=int, help="jobs at once (default: 50; 8 with --kernels)")
    parser.add_argument("--rate", type=int, default=200, help="events per second per job")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--writers", type=int, default=2, help="writer processes (cluster mode)")
    parser.add_argument("--writers-nice", type=int, default=10, help="niceness of the writer processes (cluster mode)")
    parser.add_argument("--nice", type=int, default=0, help="LocalTarget.nice of the kernels (--kernels)")
    parser.add_argument(
        "--db-url", default="", help="the job store's database (c.PromoteExtension.db_url; default: the SQLite file)"
    )
    parser.add_argument(
        "--baseline-jobs",
        type=int,
        default=0,
        help="first the same load (events per second in all) over this many jobs, as the baseline (0: none)",
    )
    args = parser.parse_args()
    args.jobs = args.jobs or (8 if args.kernels else 50)
    baseline = None
    if args.baseline_jobs:
        few = argparse.Namespace(**{**vars(args), "jobs": args.baseline_jobs})
        few.rate = args.rate * args.jobs // args.baseline_jobs
        with tempfile.TemporaryDirectory(prefix="promote-load-") as tmp:
            baseline = asyncio.run(bench(few, Path(tmp)))
        print(json.dumps(baseline, indent=2))
    with tempfile.TemporaryDirectory(prefix="promote-load-") as tmp:
        result = asyncio.run(bench(args, Path(tmp)))
    print(json.dumps(result, indent=2))
    sys.exit(0 if report(result, baseline) else 1)


if __name__ == "__main__":
    main()
