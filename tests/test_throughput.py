"""The throughput judge on real jobs: a tenfold slowdown a few seconds in is caught within three windows and
named (rate, baseline, when it began, the cell); warm-up, jitter, a pause, long steps and a cell that trains a
heavier model than the cell before raise nothing.

The six notebooks run at once (their steps mostly sleep, so they do not slow each other down), with the
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
CASES = ["slowdown", "slow_first_window", "jitter", "pause", "long_steps", "heavier_cell"]


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
    assert 320 <= alert["since_step"] <= 460 and "since step" in alert["message"], alert
    assert f"{alert['steps_per_s']:.3g} steps/s" in alert["message"] and "baseline of" in alert["message"]
    # and the cell, numbered as the user counts the notebook's code cells, with its first line
    assert alert["cell"] == 3 and alert["cell_source"].startswith('if case == "slowdown":'), alert
    assert 'in cell 3 (`if case == "slowdown":' in alert["message"], alert


@pytest.mark.parametrize("case", ["slow_first_window", "jitter", "pause", "long_steps", "heavier_cell"])
def test_no_alert(runs, case):
    evs = runs[case]
    assert alerts(evs) == [], alerts(evs)
    assert any(e["type"] == "step" for e in evs)  # the loop was seen, and judged


# ---- the judge alone, on a simulated clock: the same cases at full length, and the ones too slow to run ----
def judged(step_times: list[float], tick: float = 0.5) -> list[Drop]:
    """Feed a :class:`ThroughputJudge` the ticks of the monitor's watcher over steps of these durations."""
    return judged_cells([(0.0, step_times)], tick)


def judged_cells(cells: list[tuple[float, list[float]]], tick: float = 0.5) -> list[Drop]:
    """The same over cells run one after the other: each spends ``idle`` seconds before its loop (imports, data
    loading, building a model), then takes steps of these durations. A cell is a segment, as the monitor's
    ``pre_run_cell`` hook numbers them (the job's setup cell is segment 0)."""
    judge, drops = ThroughputJudge(WINDOW_S, 0.0), []
    clock = {"now": 0.0, "steps": 0, "step_at": 0.0, "tick": tick}

    def until(segment: int, t: float) -> None:
        while clock["tick"] < t:
            drop = judge.observe(segment, int(clock["steps"]), clock["step_at"], clock["tick"])
            drops.extend([drop] if drop else [])
            clock["tick"] += tick

    for segment, (idle, step_times) in enumerate(cells, 1):
        clock["now"] += idle
        until(segment, clock["now"])
        for duration in step_times:
            clock["now"] += duration
            until(segment, clock["now"])
            clock["steps"] += 1
            clock["step_at"] = clock["now"]
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


def test_judge_gives_each_cell_its_own_baseline():
    # Given a small model trained in one cell, then a model four times heavier in the next (a lecture notebook's
    # "now a bigger network"), with a second of model building between them
    cells = [(0.5, [0.006] * 1000), (1.0, [0.024] * 400)]
    # When the monitor judges both
    drops = judged_cells(cells)
    # Then the second cell's pace is its own baseline, not a drop from the first cell's
    assert drops == [], drops
    # and a real drop within the heavier cell is still caught, against that cell's own pace
    [drop] = judged_cells([(0.5, [0.006] * 1000), (1.0, [0.024] * 200 + [0.24] * 30)])
    assert 1200 <= drop.since_step <= 1215, drop


def test_judge_starts_the_first_window_at_the_loops_first_step():
    # Given a cell that loads data for 10 s before its loop, whose first steps are slowed by the machine's load
    cells = [(10.0, [0.006] * 170 + [0.03] * 100 + [0.006] * 300)]
    # When the judge reports the slow steps
    drops = judged_cells(cells)
    # Then the drop begins where the slow steps did, never at step 1 or before the loop began (no "-0 s")
    assert drops, "the slow steps were judged"
    assert all(d.since_step > 100 and d.since_s >= 10.0 for d in drops), drops
