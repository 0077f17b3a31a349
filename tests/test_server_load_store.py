"""The store's writer thread under load: events of many jobs queued off the event loop are stored once each,
handed on and published in seq order, never lost, and writes land in the order they were asked for."""

from __future__ import annotations

import asyncio
import random
import time

from jupyter_promote.models import JobRecord, JobState
from jupyter_promote.server.manager import JobManager
from jupyter_promote.server.store import JobStore, Stored


def _events(job: str, first: int, last: int) -> list[dict]:
    return [
        {"seq": s, "ts": time.time(), "job": job, "type": "metric", "metrics": {"i": s}} for s in range(first, last + 1)
    ]


def _batches(job: str, total: int, rng: random.Random) -> list[list[dict]]:
    """Polls of a job's file: batches of any size, some of them read again (a follower that restarted)."""
    batches, seq = [], 1
    while seq <= total:
        size = rng.randint(1, 40)
        batches.append(_events(job, seq, min(total, seq + size - 1)))
        if rng.random() < 0.1:
            batches.append(_events(job, max(1, seq - 5), min(total, seq + size - 1)))  # a replay
        seq += size
    return batches


def test_events_of_many_jobs_queued_at_once_are_stored_once_and_handed_on_in_order(store_url):
    # Given a store whose writer thread writes while 30 jobs' batches are queued, interleaved, with replays
    handed: list[Stored] = []
    store = JobStore(store_url, on_stored=handed.append)
    rng = random.Random(7)
    jobs = {f"job{n:02d}": _batches(f"job{n:02d}", 700, rng) for n in range(30)}
    # When they are queued as the event loop would, poll after poll, and the store closes
    while any(jobs.values()):
        for job, batches in jobs.items():
            if batches:
                store.add_events_soon(job, batches.pop(0))
    store.close()
    # Then every event is stored exactly once and handed on exactly once, in seq order per job
    store = JobStore(store_url)
    for n in range(30):
        job = f"job{n:02d}"
        assert [e["seq"] for e in store.events_after(job, 0)] == list(range(1, 701))
        assert [e["seq"] for j, new in handed if j == job for e in new] == list(range(1, 701))
    store.close()


def test_a_write_now_lands_after_what_is_queued(store_url):
    # Given a job's running record and its events queued for the writer thread
    store = JobStore(store_url)
    record = JobRecord(id="abcdef123456", notebook="/n.ipynb", target="local", kernel="python3")
    record.state = JobState.RUNNING
    store.add_events_soon(record.id, _events(record.id, 1, 500), record, None)
    # When its final record is written now
    record.state = JobState.SUCCEEDED
    store.put_job(record, None)
    # Then what was queued before is in, and the final record is not overwritten by the queued one
    assert store.last_seq(record.id) == 500
    found = store.get_job(record.id)
    assert found is not None and found[0].state is JobState.SUCCEEDED
    store.close()


def test_the_bus_gets_every_event_once_in_order_in_a_message_per_job_and_run(store_url):
    # Given a job manager publishing to a bus, with 10 jobs whose events come 5 at a time
    messages: list[tuple[str, list[int]]] = []
    store = JobStore(store_url)

    async def scenario() -> None:
        # the manager hands what the store writes to its publish (store.on_stored)
        JobManager(
            store,
            launcher=None,
            publish=lambda job, events: messages.append(  # type: ignore[arg-type]
                (job, [e["seq"] for e in events])
            ),
        )
        for first in range(1, 1000, 5):  # When the followers queue them, poll after poll
            for n in range(10):
                store.add_events_soon(f"job{n}", _events(f"job{n}", first, first + 4))
            await asyncio.sleep(0)
        store.flush()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if sum(len(seqs) for _, seqs in messages) == 10 * 1000:
                break

    asyncio.run(scenario())
    store.close()
    # Then each job's messages carry 1..1000 once, in order, each a run of consecutive seqs, fewer than the polls
    for n in range(10):
        mine = [seqs for job, seqs in messages if job == f"job{n}"]
        assert [s for seqs in mine for s in seqs] == list(range(1, 1001))
        assert all(seqs == list(range(seqs[0], seqs[-1] + 1)) for seqs in mine)
        assert len(mine) <= 200
