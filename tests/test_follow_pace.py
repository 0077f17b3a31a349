"""How often a followed job is looked at: at the poll interval while it changes, less often while it is quiet.

A sweep of 1,000 held tasks used a quarter of a core in the CLI when every task's follower looked ten times a
second at a job that wrote nothing (benchmarks/sweep_scale.py); the wait now grows while nothing changes and
is short again at the first event or new answer from the target.
"""

from __future__ import annotations

from types import SimpleNamespace

from jupyter_promote.launch.follow import IDLE_POLL_S, _Follower
from jupyter_promote.models import JobState
from jupyter_promote.targets.base import TargetStatus


def _follower(poll_interval: float = 0.1, state: JobState = JobState.QUEUED) -> SimpleNamespace:
    return SimpleNamespace(
        poll_interval=poll_interval, wait=poll_interval, last_said=(None, None), view=SimpleNamespace(state=state)
    )


def test_a_quiet_job_is_looked_at_less_often_up_to_the_idle_limit() -> None:
    # Given a held job: no events, the target says "queued, held" every time
    follower, held = _follower(), TargetStatus(JobState.QUEUED, "held")
    # When it is looked at many times
    waits = [_Follower.pace(follower, False, held) for _ in range(20)]
    # Then the first look after the first answer is at the poll interval, then each wait is longer, up to the limit
    assert waits[0] == 0.1 and waits[1] > waits[0] and waits == sorted(waits)
    assert waits[-1] == IDLE_POLL_S and sum(waits) < 20 * IDLE_POLL_S


def test_an_event_or_a_new_answer_from_the_target_brings_the_poll_interval_back() -> None:
    follower, queued = _follower(), TargetStatus(JobState.QUEUED, "held")
    for _ in range(20):
        _Follower.pace(follower, False, queued)
    # When the job writes an event, Then the next look is at the poll interval
    assert _Follower.pace(follower, True, queued) == 0.1
    for _ in range(20):
        _Follower.pace(follower, False, queued)
    # When the target's answer changes (the job starts), Then too
    assert _Follower.pace(follower, False, TargetStatus(JobState.RUNNING)) == 0.1
    # And a poll interval longer than the idle limit is kept as it is
    slow = _follower(poll_interval=2.0)
    assert [_Follower.pace(slow, False, queued) for _ in range(3)] == [2.0, 2.0, 2.0]


def test_a_running_job_is_looked_at_every_poll_interval_so_its_end_is_seen_at_once() -> None:
    # Given a running job in a long quiet cell: no events, the target says "running" every time
    follower, running = _follower(state=JobState.RUNNING), TargetStatus(JobState.RUNNING)
    # When it is looked at many times, Then every wait is the poll interval
    assert {_Follower.pace(follower, False, running) for _ in range(20)} == {0.1}
