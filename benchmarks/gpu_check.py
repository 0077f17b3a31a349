"""One check of jupyter-promote on a real CUDA device: each feature that needs a GPU, as a row of one table.

Rows: NVML sampling (``gpu`` events), the memory-pressure and fragmentation alerts, NaN on the GPU,
deterministic CUDA replicas, GPU contention, and the monitor's overhead on a CUDA loop (plain papermill
against ``jupyter promote run``, interleaved). Every job is a notebook written at run time into a temporary
folder and run with ``jupyter promote run NB --target local``; its run directory's ``job.json`` and
``events.jsonl`` are what each row judges. A row's failure never stops the others; every job has a timeout
and the whole check a time budget. The table is printed, and written as JSON to ``$OUT/gpu_check.json``
(else the repository root's ``gpu_check.json``). Exit status: 0 when no row failed (or no CUDA device: one line, skipped), else 1.

Usage: ``bash benchmarks/gpu_check.sh`` on the GPU machine (installs ``.whl/`` first), or
``python benchmarks/gpu_check.py [--kernel NAME] [--cpu-dry-run]``; ``--cpu-dry-run`` runs the same
notebooks with ``device='cpu'`` to check the plumbing, the rows that need CUDA marked skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SKIP_LINE = "gpu_check: no CUDA device: skipped"
#: The whole check's time budget (the machine gives it 8 minutes, installation included) and one job's limit.
BUDGET_S = 400.0
JOB_TIMEOUT_S = 120.0
#: The least a job gets to start; below it the row is not run.
MIN_JOB_S = 20.0
#: The project's target for the monitor's cost (benchmarks/run.py): promoted steps/s over plain.
OVERHEAD_TARGET = 0.98
#: memory_alerts' threshold for pressure (reserved peak over the device's memory), runtime/gpu.py.
PRESSURE = 0.9
GIB = 2**30
#: Fast GPU sampling for the memory rows (MonitorSettings' minimum), so a few seconds show several samples.
GPU_SAMPLING = ["--monitor", "gpu_sample_s=1"]


@dataclass
class Row:
    """One line of the table: what was run, what should be seen, what was, and whether that passes."""

    path: str
    expected: str
    seen: str = ""
    passed: bool | None = None  # None: skipped
    detail: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def mark(self) -> str:
        return "skip" if self.passed is None else ("pass" if self.passed else "FAIL")


@dataclass
class Job:
    """A finished (or stopped) command: exit code (None after a timeout), its output and its run directory."""

    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    run_dir: Path

    def record(self) -> dict[str, Any]:
        path = self.run_dir / "job.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in read_events(self.run_dir / "events.jsonl") if kind is None or e.get("type") == kind]

    def stdout_json(self) -> dict[str, Any]:
        start = self.stdout.find("{")
        return json.loads(self.stdout[start:]) if start >= 0 else {}

    def tail(self) -> str:
        """The end of what the command and the job's runner said: the reason a row failed, when it did."""
        log = self.run_dir / "job.log"
        text = self.stderr[-1500:] + (
            "\n--- job.log\n" + log.read_text(errors="replace")[-1500:] if log.is_file() else ""
        )
        return ("timed out\n" if self.rc is None else "") + text


class OutOfTime(Exception):
    """The check's budget is spent: the rows left are not run."""


def read_events(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of an events file (torn or foreign lines skipped)."""
    events = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def notebook(path: Path, kernel: str, parameters: str, *cells: str) -> Path:
    """Write a notebook: a cell tagged 'parameters', then ``cells``, for ``kernel``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# ---- the notebooks ----------------------------------------------------------------------------------------
HOLD = (
    "import time\nimport torch\n\n"
    "for _ in range(40):  # the previous job's memory may take a moment to come back\n"
    "    free, total = torch.cuda.mem_get_info()\n"
    "    if free > 0.95 * total:\n"
    "        break\n"
    "    time.sleep(0.25)\n"
)
REPORT = "import jupyter_promote as promote\n"
NVML = (
    "free, total = torch.cuda.mem_get_info()\n"
    "block = torch.empty(int(free * fraction), dtype=torch.uint8, device=device)\n"
    "block.fill_(1)\n"
    "torch.cuda.synchronize()\n"
    "time.sleep(hold_s)\n"
    "promote.report(block_bytes=block.numel(), device_total=total)\n"
)
PRESSURE_CELL = (
    "free, total = torch.cuda.mem_get_info()\n"
    "size = free - int(total * headroom)  # of the whole device: reserved peak above memory_alerts' 90 %\n"
    "chunk = 2 * 2**30\n"
    "blocks = [torch.empty(min(chunk, size - at), dtype=torch.uint8, device=device) for at in range(0, size, chunk)]\n"
    "time.sleep(hold_s)\n"
    "promote.report(reserved_fraction=torch.cuda.memory_reserved() / total)\n"
)
FRAGMENT = (
    "free, total = torch.cuda.mem_get_info()\n"
    "size = int(free * fill / segments) // 2**21 * 2**21\n"
    "big = [torch.empty(size, dtype=torch.uint8, device=device) for _ in range(segments)]\n"
    "kept = []\n"
    "for i in range(segments):\n"
    "    big[i] = None  # segment i back to the cache, whole; the next block can only fit there: a split\n"
    "    kept.append(torch.empty(int(size * keep), dtype=torch.uint8, device=device))\n"
    "try:  # more than is free: cudaMalloc fails, the cache is flushed (split segments stay) and it retries\n"
    "    torch.empty(torch.cuda.mem_get_info()[0] + size, dtype=torch.uint8, device=device)\n"
    "except RuntimeError:  # torch.OutOfMemoryError\n"
    "    pass\n"
    "time.sleep(hold_s)\n"
    "stats = torch.cuda.memory_stats()\n"
    "promote.report(inactive_split=stats['inactive_split_bytes.all.current'], reserved=stats['reserved_bytes.all.current'],\n"
    "               allocated=stats['allocated_bytes.all.current'], alloc_retries=stats['num_alloc_retries'])\n"
)
# tests/notebooks/diverge.ipynb on a device: the data, the initial weights and the batches drawn on the CPU
# as there, so the run follows the CPU test's trajectory
DIVERGE_SETUP = (
    "import torch\nfrom torch import nn\n\n"
    "torch.manual_seed(seed)\n"
    "X = torch.randn(2048, 16)\n"
    "true_w = torch.randn(16, 1)\n"
    "y = (X @ true_w > 0).float()\n"
    "model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))\n"
    "X, y, model = X.to(device), y.to(device), model.to(device)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
    "loss_fn = nn.BCEWithLogitsLoss()\n"
)
DIVERGE_LOOP = (
    "for step in range(steps):\n"
    "    idx = torch.randint(0, X.shape[0], (batch_size,)).to(device)\n"
    "    loss = loss_fn(model(X[idx]), y[idx])\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)
# a small CUDA model with an embedding (its backward accumulates) and cuBLAS matmuls; data drawn on the device
MODEL = (
    "import time\nimport torch\nfrom torch import nn\n"
    "import jupyter_promote as promote\n\n"
    "torch.manual_seed(seed)\n"
    "tokens = torch.randint(0, 512, (4096, 8), device=device)\n"
    "target = torch.randn(4096, 1, device=device)\n"
    "model = nn.Sequential(nn.Embedding(512, 32), nn.Flatten(), nn.Linear(256, hidden), nn.ReLU(),\n"
    "                      nn.Linear(hidden, 1)).to(device)\n"
    "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n\n"
    "def train_step():\n"
    "    idx = torch.randint(0, 4096, (batch_size,), device=device)\n"
    "    loss = ((model(tokens[idx]) - target[idx]) ** 2).mean()\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    return loss\n\n"
    "def sync():\n"
    "    if device == 'cuda':\n"
    "        torch.cuda.synchronize()\n"
)
REPLICA_LOOP = (
    "for step in range(steps):\n"
    "    loss = train_step()\n"
    "    if step % 100 == 0:\n"
    "        promote.report(step=step, loss=loss)\n"
    "promote.report(loss=loss, weight_sum=sum(p.double().sum() for p in model.parameters()))\n"
)
TIMED_LOOP = (
    "steps, start = 0, time.perf_counter()\n"
    "while time.perf_counter() - start < seconds:\n"
    "    train_step()\n"
    "    steps += 1\n"
    "sync()\n"
    "promote.report(steps=steps, steps_per_s=steps / (time.perf_counter() - start))\n"
)
BENCH_LOOP = (
    "import json, os\n"
    "for _ in range(warmup):\n"
    "    train_step()\n"
    "sync()\n"
    "start = time.perf_counter()\n"
    "for _ in range(steps):\n"
    "    train_step()\n"
    "sync()\n"
    "with open(os.environ['BENCH_OUT'], 'w') as f:\n"
    "    json.dump({'steps_per_s': steps / (time.perf_counter() - start)}, f)\n"
)


class Check:
    """The rows, their jobs and the budget they share."""

    def __init__(self, args: argparse.Namespace, work: Path, started: float) -> None:
        self.kernel: str = args.kernel
        self.dry = bool(args.cpu_dry_run)
        self.device = "cpu" if self.dry else "cuda"
        self.work = work
        self.budget: float = args.budget
        self.deadline = started + args.budget
        self.job_timeout: float = args.job_timeout
        self.tag = uuid.uuid4().hex  # marks every process this check starts, for the clean-up
        self.env = {**os.environ, "GPU_CHECK_TAG": self.tag, "JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")}
        self.jupyter = _jupyter_command()

    # ---- jobs ---------------------------------------------------------------------------------------------
    def timeout(self) -> float:
        left = self.deadline - time.monotonic()
        if left < MIN_JOB_S:
            raise OutOfTime(f"not run: the check's {self.budget:.0f} s budget is spent")
        return min(self.job_timeout, left)

    def promote(self, nb: Path, name: str, *options: str, env: dict[str, str] | None = None) -> Job:
        """``jupyter promote run NB --target local`` into ``runs/NAME``, to its end or its timeout."""
        run_dir = self.work / "runs" / name
        command = [
            *self.jupyter,
            "promote",
            "run",
            str(nb),
            "--target",
            "local",
            "--kernel",
            self.kernel,
            "--out",
            str(run_dir),
            "--json",
            *options,
        ]
        return self.run(command, run_dir, env)

    def run(self, command: list[str], run_dir: Path, env: dict[str, str] | None = None) -> Job:
        timeout = self.timeout()
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**self.env, **(env or {})},
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # the CLI cancels its job as on Ctrl-C
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            rc = None
            self.reap()
        return Job(rc, out, err, time.monotonic() - start, run_dir)

    def reap(self) -> None:
        """Kill what this check started and left behind (a runner, a kernel, a stress loop), so the GPU is free."""
        needle = f"GPU_CHECK_TAG={self.tag}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                continue

    def nb(self, name: str, parameters: dict[str, Any], *cells: str) -> Path:
        values = {**parameters, "device": self.device}
        text = "\n".join(f"{key} = {value!r}" for key, value in values.items())
        return notebook(self.work / "notebooks" / name / f"{name}.ipynb", self.kernel, text, *cells)

    def needs_cuda(self, row: Row) -> bool:
        if self.dry:
            row.seen, row.passed = "skipped: needs CUDA (--cpu-dry-run)", None
        return self.dry

    # ---- the rows -----------------------------------------------------------------------------------------
    def nvml(self, row: Row) -> None:
        if self.needs_cuda(row):
            return
        nb = self.nb("nvml", {"fraction": 0.25, "hold_s": 4.0}, HOLD + REPORT + NVML)
        job = self.promote(nb, "nvml", *GPU_SAMPLING)
        devices = [d for e in job.events("gpu") for d in e.get("devices") or [] if d.get("index") == 0]
        block = job.record().get("metrics", {}).get("block_bytes") or 0
        used = max((d.get("memory_used") or 0 for d in devices), default=0)
        allocated = max((d.get("allocated") or 0 for d in devices), default=0)
        fields = sorted({key for d in devices for key in d})
        total = max((d.get("memory_total") or 0 for d in devices), default=0)
        row.seen = (
            f"{len(devices)} gpu samples; NVML memory_used max {used / GIB:.1f} of {total / GIB:.1f} GiB; "
            f"torch allocated max {allocated / GIB:.1f} GiB (block {block / GIB:.1f} GiB); "
            f"fields {','.join(fields)}"
        )
        row.passed = bool(block) and len(devices) >= 2 and used >= block and allocated >= block
        row.detail = {"samples": devices[-3:], "state": job.record().get("state")}
        if not row.passed:
            row.detail["tail"] = job.tail()

    def pressure(self, row: Row) -> None:
        if self.needs_cuda(row):
            return
        nb = self.nb("pressure", {"headroom": 0.03, "hold_s": 4.0}, HOLD + REPORT + PRESSURE_CELL)
        job = self.promote(nb, "pressure", *GPU_SAMPLING)
        alerts = [a for a in job.events("alert") if a.get("kind") == "memory" and a.get("finding") == "pressure"]
        fraction = job.record().get("metrics", {}).get("reserved_fraction")
        row.seen = (
            f"job {job.record().get('state')}; reserved {fraction if fraction is None else f'{fraction:.1%}'} "
            f"of the device; " + (f"alert: {alerts[0].get('message')}" if alerts else "no pressure alert")
        )
        row.passed = bool(alerts)
        if not row.passed:
            row.detail["tail"] = job.tail()

    def fragmentation(self, row: Row) -> None:
        if self.needs_cuda(row):
            return
        parameters = {"segments": 8, "fill": 0.8, "keep": 0.6, "hold_s": 4.0}
        nb = self.nb("fragmentation", parameters, HOLD + REPORT + FRAGMENT)
        job = self.promote(
            nb, "fragmentation", *GPU_SAMPLING, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}
        )
        alerts = [a for a in job.events("alert") if a.get("kind") == "memory" and a.get("finding") == "fragmentation"]
        metrics = job.record().get("metrics", {})
        split, reserved = metrics.get("inactive_split") or 0, metrics.get("reserved") or 0
        numbers = (
            f"inactive_split {split / GIB:.1f} GiB of {reserved / GIB:.1f} GiB reserved, "
            f"alloc_retries {metrics.get('alloc_retries')}"
        )
        if alerts:
            row.seen, row.passed = f"{numbers}; alert: {alerts[0].get('message')}", True
        else:
            row.seen, row.passed = f"not provoked: {numbers} (job {job.record().get('state')})", False
            row.detail["tail"] = job.tail()

    def nan(self, row: Row) -> None:
        parameters = {"lr": 1e4, "steps": 5000, "seed": 0, "hidden": 8, "batch_size": 32}
        nb = self.nb("diverge", parameters, DIVERGE_SETUP, DIVERGE_LOOP, "print('finished training')")
        job = self.promote(nb, "diverge")
        record = job.record()
        alerts = [a for a in job.events("alert") if a.get("kind") == "nan"]
        took = (record.get("finished_at") or 0) - (record.get("started_at") or 0)
        step = alerts[0].get("step") if alerts else None
        row.seen = (
            f"{record.get('state')} ({record.get('reason')}) {took:.1f} s after start, nan alert at step {step}"
            if alerts
            else f"{record.get('state')} ({record.get('reason')}), no nan alert"
        )
        row.passed = record.get("state") == "failed" and record.get("reason") == "nan" and bool(alerts) and took < 60
        if not row.passed:
            row.detail["tail"] = job.tail()

    def replicas(self, row: Row) -> None:
        parameters = {"seed": 0, "steps": 300, "hidden": 256, "batch_size": 256}
        nb = self.nb("replicas", parameters, MODEL, REPLICA_LOOP)
        job = self.promote(nb, "replicas", "--replicas", "2", "--deterministic")
        summary = job.stdout_json()
        tasks = summary.get("tasks") or []
        states = [t.get("state") for t in tasks]
        agreement = summary.get("replicas") or [{}]
        identical = (
            bool(agreement[0].get("identical"))
            and len({json.dumps(t.get("metrics"), sort_keys=True) for t in tasks}) == 1
        )
        nondeterministic = sum(
            1
            for t in tasks
            for a in read_events(job.run_dir / str(t.get("dir")) / "events.jsonl")
            if a.get("type") == "alert" and a.get("kind") == "nondeterministic_op"
        )
        final = [t.get("metrics", {}).get("weight_sum") for t in tasks]
        row.seen = (
            f"tasks {states}; weight_sum {final}; identical={identical}"
            + (f", first divergence {agreement[0].get('first_divergence')}" if not identical else "")
            + f"; {nondeterministic} nondeterministic_op alert(s)"
        )
        row.passed = len(tasks) == 2 and all(s == "succeeded" for s in states) and identical
        row.detail = {"replicas": agreement}
        if not row.passed:
            row.detail["tail"] = job.tail()

    def contention(self, row: Row) -> None:
        stress = "cpu:1" if self.dry else "gpu"
        if self.dry:
            row.path += " (cpu:1 stress in the dry run)"
        nb = self.nb("contention", {"seed": 0, "seconds": 6.0, "hidden": 1024, "batch_size": 1024}, MODEL, TIMED_LOOP)
        job = self.promote(nb, "contention", "--contention", stress, "--monitor", "window_s=0.5")
        report = job.stdout_json()
        alone, beside = report.get("isolated") or {}, report.get("contended") or {}
        ratio = report.get("steps_per_s_ratio")
        row.seen = (
            f"isolated {alone.get('state')} {_num(alone.get('steps_per_s'))} steps/s, contended "
            f"{beside.get('state')} {_num(beside.get('steps_per_s'))} steps/s, ratio {_num(ratio)}; "
            f"stress {report.get('stress', {}).get('kind')}"
        )
        row.passed = alone.get("state") == beside.get("state") == "succeeded" and ratio is not None
        row.detail = {"report": report}
        if not row.passed:
            row.detail["tail"] = job.tail()

    def overhead(self, row: Row, rounds: int = 3) -> None:
        parameters = {"seed": 0, "steps": 5000, "warmup": 300, "hidden": 64, "batch_size": 64}
        nb = self.nb("overhead", parameters, MODEL, BENCH_LOOP)
        rates: dict[str, list[float]] = {"plain": [], "promoted": []}
        out = self.work / "bench" / "rate.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        for round_no in range(rounds):
            # ABBA: which goes first alternates, so the machine's drift cancels out
            for variant in ("plain", "promoted") if round_no % 2 == 0 else ("promoted", "plain"):
                out.unlink(missing_ok=True)
                name = f"overhead-{variant}-{round_no}"
                if variant == "plain":
                    command = [
                        sys.executable,
                        "-m",
                        "papermill",
                        str(nb),
                        str(self.work / f"{name}.ipynb"),
                        "-k",
                        self.kernel,
                        "--cwd",
                        str(nb.parent),
                    ]
                    job = self.run(command, self.work / "runs" / name, {"BENCH_OUT": str(out)})
                else:
                    job = self.promote(nb, name, env={"BENCH_OUT": str(out)})
                if job.rc != 0 or not out.is_file():
                    tail = job.tail()
                    print(f"gpu_check: {name} failed (exit {job.rc}):\n{tail}", file=sys.stderr, flush=True)
                    raise RuntimeError(f"{name} failed (exit {job.rc}): {tail.strip().splitlines()[-1][-300:]}")
                rates[variant].append(json.loads(out.read_text())["steps_per_s"])
        plain, promoted = statistics.median(rates["plain"]), statistics.median(rates["promoted"])
        paired = [q / p for p, q in zip(rates["plain"], rates["promoted"], strict=True)]
        row.seen = (
            f"plain {plain:.0f} steps/s, promoted {promoted:.0f} steps/s: ratio {promoted / plain:.3f} "
            f"(rounds {min(paired):.3f}..{max(paired):.3f}, {rounds} interleaved)"
        )
        row.passed = promoted / plain >= OVERHEAD_TARGET
        row.detail = {"steps_per_s": rates}


ROWS: list[tuple[str, str, Callable[[Check, Row], None]]] = [
    (
        "gpu samples (runtime/gpu.py GpuSampler, monitor -> gpu events)",
        "gpu events with NVML memory_used/memory_total and torch allocated >= the job's block",
        Check.nvml,
    ),
    (
        "memory pressure alert (memory_alerts: pressure)",
        f"alert kind=memory finding=pressure once the reserved peak > {PRESSURE:.0%} of the device",
        Check.pressure,
    ),
    (
        "fragmentation alert (memory_alerts: fragmentation)",
        "alert kind=memory finding=fragmentation: >30 % of reserved unallocated (inactive splits) and new alloc retries",
        Check.fragmentation,
    ),
    ("NaN on the device (diverge.ipynb-style)", "job failed, reason nan, a nan alert, within 60 s of start", Check.nan),
    (
        "deterministic replicas (run --replicas 2 --deterministic)",
        "both succeeded, reported metrics identical bit for bit",
        Check.replicas,
    ),
    (
        "contention (run --contention gpu)",
        "isolated and contended runs succeed; steps/s of both and their ratio reported",
        Check.contention,
    ),
    (
        "monitor overhead (plain papermill vs promoted, steps/s)",
        f"promoted/plain >= {OVERHEAD_TARGET} (median of 3 interleaved rounds)",
        Check.overhead,
    ),
]


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def _jupyter_command() -> list[str]:
    """``jupyter`` from PATH (the wheels' /tmp/site/bin first), else the one beside this interpreter."""
    found = shutil.which("jupyter") or shutil.which("jupyter", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "jupyter_promote.cli"]


def probe_cuda() -> dict[str, Any] | None:
    """The device as torch sees it, from a child process (this one never holds a CUDA context); None: no CUDA."""
    code = (
        "import json, torch\n"
        "ok = torch.cuda.is_available()\n"
        "p = torch.cuda.get_device_properties(0) if ok else None\n"
        "print(json.dumps({'torch': torch.__version__, 'name': p.name if p else None,"
        " 'total_gib': round(p.total_memory / 2**30, 1) if p else None}))"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return info if info.get("name") else None


def print_table(rows: list[Row]) -> None:
    cells = [("path", "expected", "seen", "pass")]
    cells += [(r.path, r.expected, " ".join(r.seen.split()), r.mark) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    for n, line in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kernel",
        default=os.environ.get("GPU_CHECK_KERNEL", "python3"),
        help="kernelspec the jobs run with (default: $GPU_CHECK_KERNEL or python3)",
    )
    parser.add_argument("--cpu-dry-run", action="store_true", help="device='cpu'; the rows that need CUDA skipped")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for the whole check")
    parser.add_argument("--job-timeout", type=float, default=JOB_TIMEOUT_S, help="seconds for one job")
    parser.add_argument("--only", nargs="+", type=int, metavar="N", help="run only these rows (1-based)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder of notebooks and runs")
    args = parser.parse_args()
    started = time.monotonic()
    device = {"torch": None, "name": "cpu (dry run)", "total_gib": None} if args.cpu_dry_run else probe_cuda()
    if device is None:
        print(SKIP_LINE)
        return 0
    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    check = Check(args, work, started)
    print(
        f"gpu_check: {device['name']} ({device['total_gib']} GiB), torch {device['torch']}, kernel {args.kernel},"
        f" work {work}",
        flush=True,
    )
    rows = []
    for n, (path, expected, fn) in enumerate(ROWS, start=1):
        row = Row(path, expected)
        rows.append(row)
        if args.only and n not in args.only:
            row.seen = "skipped: not in --only"
            continue
        start = time.monotonic()
        try:
            fn(check, row)
        except OutOfTime as exc:
            row.seen, row.passed = str(exc), False
        except Exception as exc:  # a row's failure is that row's, never the check's
            row.seen, row.passed = f"error: {type(exc).__name__}: {exc}"[:400], False
        finally:
            check.reap()
        row.seconds = round(time.monotonic() - start, 1)
        print(f"gpu_check: row {n} {row.mark} in {row.seconds} s: {row.path}", flush=True)
    print_table(rows)
    failed = sum(1 for r in rows if r.passed is False)
    result = {
        "device": device,
        "mode": "cpu-dry-run" if args.cpu_dry_run else "cuda",
        "kernel": args.kernel,
        "seconds": round(time.monotonic() - started, 1),
        "failed": failed,
        "rows": [{**asdict(r), "pass": r.mark} for r in rows],
    }
    target = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).resolve().parent.parent
    (target / "gpu_check.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(
        f"gpu_check: {len(rows) - failed} of {len(rows)} rows did not fail, in {result['seconds']} s; "
        f"json in {target / 'gpu_check.json'}"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
