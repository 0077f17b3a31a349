"""The events a follower cannot fold, set aside: each reported once in the job's own log, never fatal.

A line that is another writer's, that names an unknown type or state, or that holds no event at all (not
UTF-8, not JSON, nested too deep, NaN) becomes one ``bad_event`` alert; a job followed again from the start
of its file (a server restart) finds its earlier alerts there and reports nothing twice.
"""

from __future__ import annotations

from typing import Any

from ..events import problem
from ..events.authority import FinalStateRule
from ..runtime.events import EventLog, EventTail


def set_aside(
    events: list[dict[str, Any]], tail: EventTail, log: EventLog, rule: FinalStateRule
) -> list[dict[str, Any]]:
    """The events that can be folded; each one that cannot (another writer's line, an unknown type or state)
    and each line that holds no event (not UTF-8, not JSON, too deep, NaN) is set aside and reported as an
    alert in the job's own log, never fatal."""
    bad = [(e, "not this job's (another writer's line)") for e in tail.foreign]
    tail.foreign.clear()
    good = []
    for event in events:
        why = problem(event) or rule.why(event)
        if why is None:
            good.append(event)
        else:
            bad.append((event, why))
    # a job followed again (a server restart) reads its file from the start: each line is reported once
    reported = {
        (e.get("set_aside_seq"), e.get("set_aside_type"))
        for e in good
        if e["type"] == "alert" and e.get("kind") == "bad_event"
    }
    for event, why in bad:
        seq, kind = (repr(event.get(k))[:40] for k in ("seq", "type"))  # whatever the line held, as text
        if (seq, kind) in reported:
            continue
        log.emit(
            "alert",
            kind="bad_event",
            action="alert",
            source="pipeline",
            set_aside_seq=seq,
            set_aside_type=kind,
            message=f"an event was set aside: {why} (seq {seq}, type {kind})",
        )
    unreadable, reported_at = tail.unreadable[:], {e.get("set_aside_offset") for e in good if e["type"] == "alert"}
    tail.unreadable.clear()
    for offset, why in unreadable:
        if offset not in reported_at:
            message = f"a line of the events file was set aside: {why} (at byte {offset})"
            log.emit(
                "alert", kind="bad_event", action="alert", source="pipeline", set_aside_offset=offset, message=message
            )
    return good
