"""Behaviour, not exit codes: a run's reported metrics against the notebook's tested baseline.

The baseline is what ``promote.report(...)`` displayed in the saved source notebook during its
interactive run (outputs of mimetype ``application/vnd.jupyter-promote.report+json``). Each baseline
metric is compared with what the job reported, under a tolerance: the one declared in the notebook
(``promote.report(accuracy=acc, tolerance={"accuracy": 0.01})``: a number is absolute, or
``{"abs": A, "rel": R}``), else ``PromoteSettings.parity_tolerance``, else exact. Beside the verdict, the
environment diff (the notebook kernel's lock against the job's) is the first place to look when one fails.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError
from .freeze.lock import canonical_name
from .runtime.report import REPORT_MIMETYPE

PARITY_FILE = "parity.json"
REPORT_FILE = "parity.txt"


@dataclass(frozen=True)
class Tolerance:
    abs: float = 0.0
    rel: float = 0.0

    def allows(self, baseline: float, value: float) -> bool:
        return abs(value - baseline) <= max(self.abs, self.rel * abs(baseline))

    def __str__(self) -> str:
        parts = ([f"±{self.abs:g}"] if self.abs else []) + ([f"±{self.rel:.3g} rel"] if self.rel else [])
        return " or ".join(parts) or "exact"


def parse_tolerance(name: str, spec: Any) -> Tolerance:
    if isinstance(spec, bool) or spec is None:
        raise UsageError(f"tolerance of {name}: {spec!r} is not a number or {{abs, rel}}", subject=name)
    if isinstance(spec, (int, float)):
        return Tolerance(abs=float(spec))
    if isinstance(spec, dict) and set(spec) <= {"abs", "rel"}:
        try:
            return Tolerance(abs=float(spec.get("abs", 0.0)), rel=float(spec.get("rel", 0.0)))
        except (TypeError, ValueError):
            pass
    raise UsageError(f"tolerance of {name}: {spec!r} is not a number or {{abs, rel}}", subject=name)


def baseline_of(nb: Any) -> dict[str, Any]:
    """The metrics and tolerances the saved notebook's ``promote.report`` outputs hold (later ones win)."""
    metrics: dict[str, Any] = {}
    tolerance: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            payload = (output.get("data") or {}).get(REPORT_MIMETYPE)
            if isinstance(payload, dict):
                metrics.update(payload.get("metrics") or {})
                tolerance.update(payload.get("tolerance") or {})
    return {"metrics": metrics, "tolerance": tolerance}


def compare_metrics(baseline: dict[str, Any], job_metrics: dict[str, Any], configured: dict[str, Any]) -> dict[str, Any]:
    """Per baseline metric: both values, the tolerance, pass or fail; the verdict over all of them."""
    rows = []
    for name, expected in baseline["metrics"].items():
        spec = baseline["tolerance"].get(name, configured.get(name))
        tolerance = parse_tolerance(name, spec) if spec is not None else Tolerance()
        row: dict[str, Any] = {"metric": name, "baseline": expected, "job": job_metrics.get(name), "tolerance": str(tolerance)}
        if name not in job_metrics:
            row.update(ok=False, problem="not reported by the job")
        elif _number(expected) and _number(job_metrics[name]):
            diff = float(job_metrics[name]) - float(expected)
            row.update(ok=tolerance.allows(float(expected), float(job_metrics[name])), difference=diff)
            if not row["ok"]:
                row["problem"] = f"differs by {diff:+.6g}, beyond {tolerance}"
        else:
            row.update(ok=job_metrics[name] == expected)
            if not row["ok"]:
                row["problem"] = "not equal"
        rows.append(row)
    extra = sorted(set(job_metrics) - set(baseline["metrics"]))
    verdict = "no baseline" if not rows else ("pass" if all(r["ok"] for r in rows) else "fail")
    return {"verdict": verdict, "metrics": rows, "not_in_baseline": extra}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))


def environment_diff(notebook_lock: dict[str, Any], job_lock: dict[str, Any]) -> dict[str, Any]:
    """Packages added, removed and changed; Python, torch/CUDA/cuDNN, hardware and thread settings."""
    have = {canonical_name(p["name"]): p["version"] for p in job_lock.get("packages", [])}
    want = {canonical_name(p["name"]): p["version"] for p in notebook_lock.get("packages", [])}
    facts = {}
    for label, path in (("python", ("python", "version")), ("torch", ("torch", "version")), ("cuda", ("torch", "cuda")),
                        ("cudnn", ("torch", "cudnn")), ("cpu", ("hardware", "cpu")), ("gpu", ("hardware", "gpu"))):  # fmt: skip
        a, b = _get(notebook_lock, path), _get(job_lock, path)
        if a != b:
            facts[label] = {"notebook": a, "job": b}
    threads = {}
    for name in sorted(set(notebook_lock.get("env", {})) | set(job_lock.get("env", {}))):
        a, b = notebook_lock.get("env", {}).get(name), job_lock.get("env", {}).get(name)
        if a != b and ("THREADS" in name or name.startswith(("CUBLAS", "PYTHONHASHSEED", "CUDA"))):
            threads[name] = {"notebook": a, "job": b}
    return {
        "added": sorted(set(have) - set(want)),
        "removed": sorted(set(want) - set(have)),
        "changed": [{"name": n, "notebook": want[n], "job": have[n]} for n in sorted(set(want) & set(have)) if want[n] != have[n]],
        "facts": facts,
        "settings": threads,
    }


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data


def judge(source_notebook: Any, job_metrics: dict[str, Any], notebook_lock: dict[str, Any], job_lock: dict[str, Any],
          configured: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    result = compare_metrics(baseline_of(source_notebook), job_metrics, configured)
    result["environment"] = environment_diff(notebook_lock, job_lock)
    return result


def render(result: dict[str, Any], title: str) -> str:
    """The readable report: the verdict, a table of metrics, the environment diff beside any failure."""
    lines = [f"parity of {title}: {result['verdict'].upper()}"]
    if result["metrics"]:
        rows = [("metric", "baseline", "job", "tolerance", "")] + [
            (r["metric"], _show(r["baseline"]), _show(r["job"]), r["tolerance"], "ok" if r["ok"] else f"FAIL: {r['problem']}")
            for r in result["metrics"]
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4] for row in rows]
    if result["not_in_baseline"]:
        lines.append("  reported by the job only: " + ", ".join(result["not_in_baseline"]))
    env = result["environment"]
    changes = [f"{c['name']} {c['notebook']} -> {c['job']}" for c in env["changed"]]
    changes += [f"+{n}" for n in env["added"]] + [f"-{n}" for n in env["removed"]]
    changes += [f"{k}: {v['notebook']} -> {v['job']}" for k, v in {**env["facts"], **env["settings"]}.items()]
    lines.append("  environment: " + ("; ".join(changes) if changes else "the same as the notebook kernel's"))
    return "\n".join(lines) + "\n"


def _show(value: Any) -> str:
    return "-" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))


def write(run_dir: Path, result: dict[str, Any], title: str) -> str:
    (run_dir / PARITY_FILE).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    text = render(result, title)
    (run_dir / REPORT_FILE).write_text(text)
    return text
