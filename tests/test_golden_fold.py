"""The one fold, proven the same: every golden event stream in tests/golden/events is folded by the Python
fold here and by the sidebar's TypeScript fold in labextension/src/__tests__/golden.spec.ts, and both must
give the view the file holds, key for key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_promote.events import JobView

GOLDEN = Path(__file__).parent / "golden" / "events"
STREAMS = sorted(GOLDEN.glob("*.json"))


def test_there_are_golden_streams_for_every_rule():
    assert len(STREAMS) >= 8


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_the_python_fold_gives_the_golden_view(path):
    # Given a stream of events as the server stores them (replays, bad lines and all)
    golden = json.loads(path.read_text())
    # When the Python fold folds them from an empty view
    view = JobView().fold(golden["events"])
    # Then it is the view the TypeScript fold gives too
    assert view.to_json() == golden["view"], golden["description"]
