"""A scheduled run judged against its schedule's own history: drift, per metric and in the environment.

Pure functions over plain values (the standard library, and parity's tolerance); the caller reads the runs and writes the result
(:mod:`jupyter_promote.launch.history`).

Metrics: this run's value against the same metric in the schedule's last :data:`WINDOW` succeeded runs, by a
robust z-score, ``(value - median) / (1.4826 * MAD)``: the median and the median absolute deviation are not
moved by the odd bad night the way a mean and a standard deviation are, and 1.4826 makes the MAD a standard
deviation for normally distributed values. Beyond :data:`THRESHOLD` (3.5, the usual cut for the modified
z-score) the metric drifted. When every past value is the same (MAD 0, a deterministic notebook), the
metric's parity tolerance decides (the notebook's own, else the configured one; none: exact equality).
With fewer than :data:`MIN_RUNS` past values there is no verdict, only "not enough history".

Environment: the packages and the Python of this run's lock against the previous run's (a schedule that
freezes at each run), or against the lock recorded when the schedule was created (a schedule frozen once:
any difference from that is drift).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .parity import Tolerance

DRIFT_FILE = "drift.json"
#: How many of the schedule's past runs a verdict looks at (the most recent ones).
WINDOW = 10
#: The fewest past values a verdict needs.
MIN_RUNS = 3
#: A robust z-score beyond this (either side) is drift.
THRESHOLD = 3.5
#: The MAD scaled to a standard deviation (normally distributed values).
MAD_SCALE = 1.4826


def is_number(value: Any) -> bool:
    """A finite int or float (a bool is not a metric value here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))


#: A robust z-score too large for a float (values near the float's limits).
Z_BEYOND = 1e9
#: The mean absolute deviation scaled to a standard deviation: the scale when more than half the past values
#: are the median (a MAD of 0) but not all of them.
MEAN_AD_SCALE = 1.2533


def robust_z(value: float, history: Sequence[float]) -> tuple[float, float, float | None]:
    """``(median, mad, z)`` of ``value`` against ``history``; ``z`` is None only when the past values do not
    vary at all (no scale to measure a difference in). When the MAD is 0 but the values vary (more than half
    of them are the median), the scale is the mean absolute deviation, as for a modified z-score. A z too
    large for a float is :data:`Z_BEYOND` (a verdict is stored as JSON, which has no infinity)."""
    median = statistics.median(history)
    mad = statistics.median(abs(v - median) for v in history)
    scale = MAD_SCALE * mad if mad else MEAN_AD_SCALE * statistics.fmean(abs(v - median) for v in history)
    if not scale:
        return median, mad, None
    try:
        z = (value - median) / scale
    except OverflowError:
        z = math.inf
    return median, mad, z if math.isfinite(z) else math.copysign(Z_BEYOND, value - median)


def metric_drift(
    name: str,
    value: Any,
    history: Sequence[Any],
    tolerance: Tolerance | None = None,
    threshold: float = THRESHOLD,
) -> dict[str, Any]:
    """The verdict on one metric: ``{metric, value, median, mad, z, drifted, history, basis, problem}``.

    ``history``: the metric's values in the past runs, oldest first (values that are not numbers are left
    out). ``basis`` says what decided: ``mad`` (the robust z-score), ``tolerance`` or ``exact`` (the past
    values do not vary), ``history`` (fewer than :data:`MIN_RUNS` values: ``drifted`` is False and
    ``problem`` says "not enough history: k runs").
    """
    past = [float(v) for v in history if is_number(v)]
    verdict: dict[str, Any] = {"metric": name, "value": value, "median": None, "mad": None, "z": None}
    verdict.update(drifted=False, history=past, basis="history", problem=None)
    if not is_number(value):
        verdict["problem"] = "not a number"
        return verdict
    if len(past) < MIN_RUNS:
        verdict["problem"] = f"not enough history: {len(past)} run{'' if len(past) == 1 else 's'}"
        return verdict
    median, mad, z = robust_z(float(value), past)
    verdict.update(median=median, mad=mad, z=z)
    if z is not None:
        verdict.update(basis="mad", drifted=abs(z) > threshold)
    else:  # the past values do not vary: the metric's parity tolerance decides, as parity's own rule does
        tolerance = tolerance or Tolerance()
        exact = not max(tolerance.abs, tolerance.rel * abs(median))
        verdict.update(basis="exact" if exact else "tolerance", drifted=not tolerance.allows(median, float(value)))
    return verdict


def metrics_drift(
    metrics: Mapping[str, Any],
    past: Sequence[Mapping[str, Any]],
    tolerances: Mapping[str, Tolerance] | None = None,
    window: int = WINDOW,
    threshold: float = THRESHOLD,
) -> list[dict[str, Any]]:
    """Each numeric metric of this run (``metrics``) against the past runs' (``past``: each run's metrics,
    oldest first; the last ``window`` runs that reported it count), in the metrics' order."""
    tolerances = tolerances or {}
    found = []
    for name, value in metrics.items():
        if not is_number(value):
            continue
        history = [run[name] for run in past if is_number(run.get(name))][-window:]
        found.append(metric_drift(name, value, history, tolerances.get(name), threshold))
    return found


def package_diff(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, Any]:
    """Packages (name -> version) ``added``, ``removed`` and ``changed`` (``{name, before, after}``) from
    ``before`` to ``after``, each sorted by name."""
    return {
        "added": [{"name": n, "version": after[n]} for n in sorted(set(after) - set(before))],
        "removed": [{"name": n, "version": before[n]} for n in sorted(set(before) - set(after))],
        "changed": [
            {"name": n, "before": before[n], "after": after[n]}
            for n in sorted(set(before) & set(after))
            if before[n] != after[n]
        ],
    }


def environment_drift(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, against: str
) -> dict[str, Any]:
    """This run's environment (``after``) against ``before`` (the previous run's, or the schedule's at its
    creation; ``against`` says which, in words). Each is ``{lock_hash, python, packages: {name: version}}``.

    ``drifted``: the lock's content hash differs; ``added``/``removed``/``changed`` and ``python`` say what
    differs. Nothing to compare with (no lock on either side): ``drifted`` is False and ``problem`` says why.
    """
    result: dict[str, Any] = {"against": against, "drifted": False, "problem": None, "python": None}
    result.update(before=(before or {}).get("lock_hash"), after=(after or {}).get("lock_hash"))
    result.update(added=[], removed=[], changed=[])
    if not before or not after or not before.get("lock_hash") or not after.get("lock_hash"):
        result["problem"] = "this run has no environment lock" if not after else f"no environment lock of {against}"
        return result
    if before["lock_hash"] == after["lock_hash"]:
        return result
    result["drifted"] = True
    result.update(package_diff(before.get("packages") or {}, after.get("packages") or {}))
    if before.get("python") != after.get("python"):
        result["python"] = {"before": before.get("python"), "after": after.get("python")}
    return result


def environment_changes(env: Mapping[str, Any]) -> str:
    """What changed in an environment drift, in one line (``numpy 1.26.4 -> 2.0.1; +rich 13.7.1; -tqdm 4.66``)."""
    parts = [f"python {env['python']['before']} -> {env['python']['after']}"] if env.get("python") else []
    parts += [f"{c['name']} {c['before']} -> {c['after']}" for c in env.get("changed", [])]
    parts += [f"+{p['name']} {p['version']}" for p in env.get("added", [])]
    parts += [f"-{p['name']} {p['version']}" for p in env.get("removed", [])]
    return "; ".join(parts) or f"the lock's content hash changed ({env.get('before')} -> {env.get('after')})"


def series(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Runs (job id, metrics), oldest first, as per-metric series: ``{"jobs": [id, ...], "metrics": {name:
    [value or None, ...]}}``, one value per run (None where a run did not report the metric as a number)."""
    names = list(dict.fromkeys(name for _, metrics in runs for name, v in metrics.items() if is_number(v)))
    return {
        "jobs": [job for job, _ in runs],
        "metrics": {name: [m.get(name) if is_number(m.get(name)) else None for _, m in runs] for name in names},
    }


def show(value: Any) -> str:
    """A number as the reports show metrics (6 significant digits)."""
    return "-" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))


def metric_message(verdict: Mapping[str, Any]) -> str:
    """One line for a drifted metric: ``loss drifted: 0.91 vs a median of 0.42 over the last 10 runs (robust z 7.3)``."""
    runs = len(verdict["history"])
    said = f"robust z {verdict['z']:.1f}" if verdict["z"] is not None else "every past run had the same value"
    if verdict["basis"] == "tolerance":
        said += ", beyond its parity tolerance"
    return (
        f"{verdict['metric']} drifted: {show(verdict['value'])} vs a median of {show(verdict['median'])} "
        f"over the last {runs} runs ({said})"
    )


def environment_message(env: Mapping[str, Any]) -> str:
    """One line for an environment drift."""
    return f"the environment changed since {env['against']}: {environment_changes(env)}"


def judge(
    metrics: Mapping[str, Any],
    past: Sequence[Mapping[str, Any]],
    environment: dict[str, Any] | None,
    tolerances: Mapping[str, Tolerance] | None = None,
    window: int = WINDOW,
    threshold: float = THRESHOLD,
) -> dict[str, Any]:
    """The whole verdict (what ``drift.json`` holds): the metrics' verdicts, the environment's (or None),
    and the overall ``verdict``: ``drift`` (a metric or the environment drifted), ``steady``, or
    ``not enough history`` (no metric had enough past values, and no environment to compare with)."""
    rows = metrics_drift(metrics, past, tolerances, window, threshold)
    drifted = [row["metric"] for row in rows if row["drifted"]]
    env_drifted = bool(environment and environment["drifted"])
    if drifted or env_drifted:
        verdict = "drift"
    elif any(row["basis"] != "history" for row in rows) or (environment and not environment["problem"]):
        verdict = "steady"
    else:
        verdict = "not enough history"
    return {
        "verdict": verdict,
        "window": window,
        "threshold": threshold,
        "runs": len(past),
        "metrics": rows,
        "environment": environment,
        "drifted": drifted,
    }


def summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the job's record keeps of a verdict (``JobRecord.drift``)."""
    env = result.get("environment") or {}
    return {
        "verdict": result["verdict"],
        "runs": result["runs"],
        "drifted": list(result["drifted"]),
        "environment": bool(env.get("drifted")),
    }


def lines(result: Mapping[str, Any]) -> list[str]:
    """The verdict as ``jupyter promote status`` prints it: one line overall, one per metric, one for the
    environment."""
    out = [f"drift against the schedule's last {result['runs']} runs: {str(result['verdict']).upper()}"]
    for row in result.get("metrics", []):
        if row["basis"] == "history":
            out.append(f"  {row['metric']} {show(row['value'])}: {row['problem']}")
            continue
        z = f"robust z {row['z']:.1f}" if row["z"] is not None else f"{row['basis']} (no spread in the past runs)"
        said = "DRIFTED" if row["drifted"] else "ok"
        out.append(f"  {row['metric']} {show(row['value'])} (median {show(row['median'])}, {z}): {said}")
    env = result.get("environment")
    if env:
        if env["drifted"]:
            out.append(f"  environment: changed since {env['against']}: {environment_changes(env)}")
        else:
            out.append(f"  environment: {env['problem'] or 'unchanged since ' + str(env['against'])}")
    return out


def read(run_dir: str | Path) -> dict[str, Any] | None:
    """A run directory's ``drift.json``, or None (not a scheduled job, or not judged)."""
    try:
        data = json.loads((Path(run_dir) / DRIFT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
