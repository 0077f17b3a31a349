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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..freeze import OBSERVED_FILE
from ..freeze.lock import canonical_name
from ..runtime.report import REPORT_MIMETYPE

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


def compare_metrics(
    baseline: dict[str, Any],
    job_metrics: dict[str, Any],
    configured: dict[str, Any],
    band: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Per baseline metric: both values, the tolerance, pass or fail; the verdict over all of them.

    ``band``: metric -> half-width of the seed-variance band (:func:`seed_band`). A metric beyond its
    tolerance but within the band of the baseline passes, and the row says so: on other hardware a
    difference the seed alone would make is not a change of behaviour.
    """
    band = band or {}
    rows = []
    for name, expected in baseline["metrics"].items():
        spec = baseline["tolerance"].get(name, configured.get(name))
        tolerance = parse_tolerance(name, spec) if spec is not None else Tolerance()
        row: dict[str, Any] = {
            "metric": name,
            "baseline": expected,
            "job": job_metrics.get(name),
            "tolerance": str(tolerance),
        }
        if name not in job_metrics:
            row.update(ok=False, problem="not reported by the job")
        elif _number(expected) and _number(job_metrics[name]):
            diff = float(job_metrics[name]) - float(expected)
            row.update(ok=tolerance.allows(float(expected), float(job_metrics[name])), difference=diff)
            if name in band:
                row["seed_band"] = band[name]
            if not row["ok"] and abs(diff) <= band.get(name, -1.0):
                row.update(ok=True, within_seed_band=True)
            elif not row["ok"]:
                beyond = f"{tolerance}" + (f" and the seed band ±{band[name]:.3g}" if name in band else "")
                row["problem"] = f"differs by {diff:+.6g}, beyond {beyond}"
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
    for label, path in (
        ("python", ("python", "version")),
        ("torch", ("torch", "version")),
        ("cuda", ("torch", "cuda")),
        ("cudnn", ("torch", "cudnn")),
        ("cpu", ("hardware", "cpu", "model")),
        ("cpus usable", ("hardware", "cpu", "usable")),
        ("gpu", ("hardware", "gpu")),
    ):
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
        "changed": [
            {"name": n, "notebook": want[n], "job": have[n]}
            for n in sorted(set(want) & set(have))
            if want[n] != have[n]
        ],
        "facts": facts,
        "settings": threads,
        # what the job itself reported in force (observed_env.json): torch threads, determinism flags, GPUs
        "in_force": ((job_lock.get("runtime") or {}).get("torch")) or {},
    }


def job_environment(run_dir: Path, frozen_lock: dict[str, Any]) -> dict[str, Any]:
    """What the job ran with: the environment it recorded itself (``observed_env.json``), else, for a run
    from before that or one that never reached its end, the lock it was made from, with the Python of the
    image it ran in (an image's Python may differ in its patch version). The one rule of every judgement:
    a job's own, ``compare``, and replicas judged together."""
    try:
        observed: dict[str, Any] = json.loads((Path(run_dir) / OBSERVED_FILE).read_text())
    except (OSError, ValueError):
        pass
    else:
        return observed
    try:
        image = json.loads((Path(run_dir) / "job.json").read_text()).get("image") or {}
    except (OSError, ValueError, AttributeError):
        image = {}
    python = (image.get("verification") or {}).get("python") if isinstance(image, dict) else None
    if python:
        return {**frozen_lock, "python": {**frozen_lock.get("python", {}), "version": python}}
    return frozen_lock


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data


def judge(
    source_notebook: Any,
    job_metrics: dict[str, Any],
    notebook_lock: dict[str, Any],
    job_lock: dict[str, Any],
    configured: dict[str, Any],
    band: dict[str, float] | None = None,
) -> dict[str, Any]:
    result = compare_metrics(baseline_of(source_notebook), job_metrics, configured, band)
    result["environment"] = environment_diff(notebook_lock, job_lock)
    return result


#: The seed-variance band is this many standard deviations of the per-seed means, either side.
SEED_BAND_SIGMAS = 2.0


def seed_band(runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
    """Per metric, the half-width of the band the seed alone moves it in: ``SEED_BAND_SIGMAS`` standard
    deviations of the per-seed means, from runs (parameters, metrics) with at least two distinct seeds.
    """
    import statistics

    names = {name for _, metrics in runs for name, value in metrics.items() if _number(value)}
    band = {}
    for name in names:
        seeds = by_seed((parameters, metrics[name]) for parameters, metrics in runs if _number(metrics.get(name)))
        if len(seeds) >= 2:
            band[name] = SEED_BAND_SIGMAS * statistics.pstdev(statistics.fmean(v) for v in seeds.values())
    return band


def by_seed(values: Iterable[tuple[dict[str, Any], Any]]) -> dict[str, list[float]]:
    """Values (with the parameters of the run that made each) grouped by the runs' ``seed`` parameter."""
    groups: dict[str, list[float]] = {}
    for parameters, value in values:
        groups.setdefault(json.dumps(parameters.get("seed")), []).append(float(value))
    return groups


def first_divergence(reports: list[list[dict[str, Any]]]) -> dict[str, Any] | None:
    """Where replicas that should be bitwise identical first differ: each run's metric reports in order
    (the ``metrics`` of its metric events); None when they agree throughout. The step is the report's own
    ``step`` metric when it has one, else the report's position.
    """
    if len(reports) < 2:
        return None
    for i in range(max(len(r) for r in reports)):
        present = [r[i] if i < len(r) else None for r in reports]
        if any(p is None for p in present):
            return {
                "report": i,
                "step": _step(next(p for p in present if p is not None), i),
                "metric": None,
                "values": [None if p is None else "reported" for p in present],
                "problem": "some runs stopped reporting here",
            }
        reported = [p for p in present if p is not None]  # all of them, as checked above
        for name in sorted(set().union(*reported)):
            values = [p.get(name) for p in reported]
            if any(json.dumps(v) != json.dumps(values[0]) for v in values):
                return {"report": i, "step": _step(reported[0], i), "metric": name, "values": values}
    return None


def _step(report: dict[str, Any], position: int) -> Any:
    return report.get("step", position)


def render(result: dict[str, Any], title: str) -> str:
    """The readable report: the verdict, a table of metrics, the environment diff beside any failure."""
    lines = [f"parity of {title}: {result['verdict'].upper()}"]
    if result["metrics"]:
        rows = [("metric", "baseline", "job", "tolerance", "")] + [
            (r["metric"], _show(r["baseline"]), _show(r["job"]), r["tolerance"], _verdict(r)) for r in result["metrics"]
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4] for row in rows
        ]
    if result["not_in_baseline"]:
        lines.append("  reported by the job only: " + ", ".join(result["not_in_baseline"]))
    env = result["environment"]
    changes = [f"{c['name']} {c['notebook']} -> {c['job']}" for c in env["changed"]]
    changes += [f"+{n}" for n in env["added"]] + [f"-{n}" for n in env["removed"]]
    changes += [f"{k}: {v['notebook']} -> {v['job']}" for k, v in {**env["facts"], **env["settings"]}.items()]
    lines.append("  environment: " + ("; ".join(changes) if changes else "the same as the notebook kernel's"))
    in_force = env.get("in_force") or {}
    if in_force:
        flags = [f"torch threads {in_force.get('threads')}"]
        if "deterministic_algorithms" in in_force:
            on = in_force["deterministic_algorithms"]
            flags.append(
                "deterministic algorithms "
                + ("on" + (" (warn only)" if in_force.get("deterministic_warn_only") else "") if on else "off")
            )
            flags.append(
                f"cudnn.deterministic {in_force.get('cudnn_deterministic')}, cudnn.benchmark {in_force.get('cudnn_benchmark')}"
            )
        if in_force.get("gpus"):
            flags.append("GPUs " + ", ".join(in_force["gpus"]))
        lines.append("  in force in the job: " + "; ".join(flags))
    return "\n".join(lines) + "\n"


def _verdict(row: dict[str, Any]) -> str:
    if row.get("within_seed_band"):
        return f"ok: beyond {row['tolerance']}, within the seed-variance band ±{row['seed_band']:.3g}"
    return "ok" if row["ok"] else f"FAIL: {row['problem']}"


def _show(value: Any) -> str:
    return "-" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))


def write(run_dir: Path, result: dict[str, Any], title: str) -> str:
    (run_dir / PARITY_FILE).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    text = render(result, title)
    (run_dir / REPORT_FILE).write_text(text)
    return text
