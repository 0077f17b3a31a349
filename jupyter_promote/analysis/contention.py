"""Contention: the job beside a co-located stress workload, against the same job alone.

``--contention cpu[:N]`` runs N CPU burners (default: one per CPU), ``memory[:SIZE]`` one process that
holds SIZE of memory and keeps touching it (default: half of what is available), ``gpu`` a matmul loop on
the first GPU. The stress runs on the machine of the job (the local target, or a node the job shares).
The report sets steps/s, peak memory and the reported metrics of both runs side by side.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from ..errors import UsageError
from ..models import parse_memory
from ..runtime.events import read_events

CONTENTION_FILE = "contention.json"
_CPU = "while True: pass"
_MEMORY = (
    "import sys, time\n"
    "block = bytearray(int(sys.argv[1]))\n"
    "while True:\n"
    "    for i in range(0, len(block), 4096):\n"
    "        block[i] = (block[i] + 1) % 256\n"
    "    time.sleep(0.05)\n"
)
_GPU = "import torch\na = torch.randn(4096, 4096, device='cuda')\nwhile True:\n    a = (a @ a).clamp_(-1, 1)\n"


#: More co-located burners than this is a typo (or a fork bomb asked for over HTTP), not a test.
MAX_BURNERS = 256


@dataclass(frozen=True)
class Stress:
    kind: str
    level: int  # burners, bytes, or GPU loops

    @classmethod
    def parse(cls, spec: str) -> Stress:
        kind, _, level = spec.partition(":")
        if kind == "cpu":
            try:
                n = int(level) if level else (os.cpu_count() or 1)
            except ValueError:
                raise UsageError(f"contention {spec}: cpu:N takes a number of burners", subject="contention") from None
            if not 1 <= n <= MAX_BURNERS:
                raise UsageError(f"contention {spec}: between 1 and {MAX_BURNERS} burners", subject="contention")
            return cls("cpu", n)
        if kind == "memory":
            size = parse_memory(level) if level else _available_bytes() // 2
            if size > _available_bytes():  # never the machine's own OOM killer, whoever asked
                raise UsageError(
                    f"contention {spec}: more memory than this machine has available", subject="contention"
                )
            return cls("memory", size)
        if kind == "gpu":
            n = int(level) if level.isdigit() else 1
            if not 1 <= n <= MAX_BURNERS:
                raise UsageError(f"contention {spec}: between 1 and {MAX_BURNERS} GPU loops", subject="contention")
            return cls("gpu", n)
        raise UsageError(f"contention {spec}: not cpu[:N], memory[:SIZE] or gpu[:N]", subject="contention")

    def describe(self) -> str:
        if self.kind == "memory":
            return f"memory pressure ({self.level // (1 << 20)} MiB held and touched)"
        return f"{self.level} {self.kind} burner(s)" if self.kind == "cpu" else f"{self.level} GPU matmul loop(s)"


def _available_bytes() -> int:
    """The memory this machine can give without swapping (Linux's MemAvailable, through psutil)."""
    return int(psutil.virtual_memory().available)


class StressWorkload:
    """The co-located workload, started on enter and stopped (all of it) on exit."""

    def __init__(self, stress: Stress, python: str = sys.executable) -> None:
        self.stress = stress
        self.python = python
        self.procs: list[subprocess.Popen[bytes]] = []
        self.held_bytes = 0  # peak resident memory of the workload, read as it stops

    def __enter__(self) -> StressWorkload:
        if self.stress.kind == "gpu":
            probe = subprocess.run(
                [self.python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                capture_output=True,
                check=False,
            )
            if probe.returncode != 0:
                raise UsageError("contention gpu: no GPU visible to torch on this machine", subject="contention")
        if self.stress.kind == "cpu":
            commands = [[self.python, "-c", _CPU]] * self.stress.level
        elif self.stress.kind == "memory":
            commands = [[self.python, "-c", _MEMORY, str(self.stress.level)]]
        else:
            commands = [[self.python, "-c", _GPU]] * self.stress.level
        for command in commands:
            self.procs.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            )
        return self

    def peak_rss_bytes(self) -> int:
        """The workload's peak resident memory, all processes together: what it really held (Linux's VmHWM;
        where the system keeps no peak, macOS, the resident memory now: the workload holds it to the end)."""
        total = 0
        for proc in self.procs:
            try:
                with open(f"/proc/{proc.pid}/status") as f:  # psutil does not read the peak
                    total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")), 0)
            except OSError:
                with contextlib.suppress(psutil.Error):
                    total += int(psutil.Process(proc.pid).memory_info().rss)
        return total

    def __exit__(self, *exc: Any) -> None:
        self.held_bytes = self.peak_rss_bytes()
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def measure(run_dir: Path) -> dict[str, Any]:
    """What the monitor saw of a run: mean steps/s, peak RSS, wall time, the reported metrics."""
    events = read_events(str(run_dir / "events.jsonl"))
    rates = [e["steps_per_s"] for e in events if e["type"] == "step" and e.get("steps_per_s")]
    rss = [e["rss_bytes"] for e in events if e["type"] == "heartbeat" and e.get("rss_bytes")]
    states = [e for e in events if e["type"] == "status"]
    started = next((e["ts"] for e in states if e["state"] == "running"), None)
    ended = states[-1]["ts"] if states else None
    metrics: dict[str, Any] = {}
    for e in events:
        if e["type"] == "metric":
            metrics.update(e.get("metrics", {}))
    return {
        "state": states[-1]["state"] if states else "unknown",
        "steps_per_s": statistics.fmean(rates) if rates else None,
        "peak_rss_bytes": max(rss) if rss else None,
        "wall_s": round(ended - started, 3) if started and ended else None,
        "metrics": metrics,
    }


def report(
    isolated: Path, contended: Path, stress: Stress, held_bytes: int | None = None
) -> tuple[dict[str, Any], str]:
    """Both runs side by side; written to the contended run's contention.json, and added to its parity
    report (parity.txt) when it has one: the same job, judged alone and under contention."""
    a, b = measure(isolated), measure(contended)
    result = {
        "stress": {"kind": stress.kind, "level": stress.level, "peak_rss_bytes": held_bytes},
        "isolated": a,
        "contended": b,
        "isolated_run": str(isolated),
        "contended_run": str(contended),
    }
    if a["steps_per_s"] and b["steps_per_s"]:
        result["steps_per_s_ratio"] = round(b["steps_per_s"] / a["steps_per_s"], 3)
    (contended / CONTENTION_FILE).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    rows = [("", "isolated", f"under {stress.describe()}")]
    rows.append(("steps/s", _fmt(a["steps_per_s"]), _fmt(b["steps_per_s"])))
    rows.append(("peak RSS", _mib(a["peak_rss_bytes"]), _mib(b["peak_rss_bytes"])))
    rows.append(("wall", _fmt(a["wall_s"], "s"), _fmt(b["wall_s"], "s")))
    for name in sorted(set(a["metrics"]) | set(b["metrics"])):
        rows.append((name, _fmt(a["metrics"].get(name)), _fmt(b["metrics"].get(name))))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    text = "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    if "steps_per_s_ratio" in result:
        text += f"\n  steps/s under contention: {result['steps_per_s_ratio']:.2f}x of isolated"
    if held_bytes:
        text += f"\n  the stress workload held {_mib(held_bytes)} at its peak"
    parity_report = contended / "parity.txt"
    if parity_report.exists():
        with open(parity_report, "a", encoding="utf-8") as f:
            f.write(f"contention: the same job alone and under {stress.describe()}\n{text}\n")
    return result, text + "\n"


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.4g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def _mib(value: Any) -> str:
    return "-" if value is None else f"{value / (1 << 20):.0f} MiB"
