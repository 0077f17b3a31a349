"""The throughput judge on real jobs: a tenfold slowdown a few seconds in is caught within three windows and
named (rate, baseline, when it began); warm-up, jitter, a pause and long steps raise nothing.

The five notebooks run at once (their steps mostly sleep, so they do not slow each other down), with the
default 2-second window.
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import NOTEBOOKS, events

from jupyter_promote.runtime.throughput import DROP_RATIO, Drop, ThroughputJudge

random.seed(0)

WINDOW_S = 2.0
CASES = ["slowdown", "slow_first_window", "jitter", "pause", "long_steps"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    from conftest import CLI

    cli = CLI(tmp_path_factory.mktemp("throughput"))
    procs = {
        case: cli.popen("run", str(NOTEBOOKS / "throughput.ipynb"), "-p", "case", case, "--json") for case in CASES
    }
    out = {}
    for case, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, (case, stderr)
        record = json.loads(stdout)
        assert record["state"] == "succeeded", record
        run = next(cli.runs.glob(f"*-{record['id'][:6]}"))
        out[case] = events(run)
    return out


def alerts(evs: list[dict]) -> list[dict]:
    return [e for e in evs if e["type"] == "alert"]


def test_a_tenfold_slowdown_a_few_seconds_in_is_flagged_within_three_windows(runs):
    evs = runs["slowdown"]
    began = next(e["metrics"]["slowdown_began"] for e in evs if e["type"] == "metric")
    [alert] = alerts(evs)
    assert alert["kind"] == "throughput_drop" and alert["action"] == "alert"
    assert alert["ts"] - began <= 3 * WINDOW_S, alert
    # the alert names the rate, the baseline and when the drop began (the 401st step, a few seconds in)
    # (the rate when it was judged: the median of the last samples, the one the drop began in among them, so
    # anywhere under the judge's threshold, not yet the slow rate itself)
    assert alert["steps_per_s"] < DROP_RATIO * alert["baseline"], alert
    # (to the tick: the sample in which the first slow step fell, at most half a second of steps before it)
    assert 380 <= alert["since_step"] <= 460 and "since step" in alert["message"], alert
    assert f"{alert['steps_per_s']:.3g} steps/s" in alert["message"] and "baseline of" in alert["message"]


@pytest.mark.parametrize("case", ["slow_first_window", "jitter", "pause", "long_steps"])
def test_no_alert(runs, case):
    evs = runs[case]
    assert alerts(evs) == [], alerts(evs)
    assert any(e["type"] == "step" for e in evs)  # the loop was seen, and judged


# ---- the judge alone, on a simulated clock: the same cases at full length, and the ones too slow to run ----
def judged(step_times: list[float], tick: float = 0.5) -> list[Drop]:
    """Feed a :class:`ThroughputJudge` the ticks of the monitor's watcher over steps of these durations."""
    judge, now, steps, step_at, next_tick, drops = ThroughputJudge(WINDOW_S, 0.0), 0.0, 0, 0.0, tick, []
    for duration in step_times:
        now += duration
        while next_tick < now:
            drop = judge.observe(0, steps, step_at, next_tick)
            drops += [drop] if drop else []
            next_tick += tick
        steps, step_at = steps + 1, now
    return drops


def test_judge_flags_the_issues_slowdown_a_second_after_it_begins():
    # 400 steps in 2.4 s, then ten times slower
    [drop] = judged([0.006] * 400 + [0.06] * 250)
    assert 395 <= drop.since_step <= 420 and 2.3 <= drop.since_s <= 3.0 and drop.steps_per_s < 0.15 * drop.baseline


@pytest.mark.parametrize(
    "case, step_times",
    [
        (
            "jitter",
            [
                0.006 * m * random.uniform(0.7, 1.3)
                for m in [random.uniform(0.7, 1.3) for _ in range(100)]
                for _ in range(100)
            ],
        ),
        ("slow start", [1.5] + [0.06] * 16 + [0.006] * 2000),
        ("pause within the cell", [0.006] * 800 + [8.0] + [0.006] * 800),
        ("a step a minute", [60 * random.uniform(0.7, 1.3) for _ in range(30)]),
    ],
)
def test_judge_stays_quiet(case, step_times):
    assert judged(step_times) == [], case


def test_judge_flags_slow_loops_too():
    assert len(judged([0.1] * 50 + [5.0] * 10)) == 1  # 50x on 0.1 s steps: not mistaken for a pause
    assert len(judged([60.0] * 10 + [600.0] * 5)) == 1  # a step a minute becoming one in ten
