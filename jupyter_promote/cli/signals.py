"""How the command line talks and stops: notes on stderr, and the signals that stop a job as Ctrl-C does."""

from __future__ import annotations

import signal
import sys
from typing import Any

#: Ctrl-C, and what CI systems, `timeout` and a batch system's end send (SIGTERM) or a closed terminal (SIGHUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM and SIGHUP outside a running job: stop as Ctrl-C does."""
    raise KeyboardInterrupt


def say(text: str) -> None:
    """One line for the person at the terminal (stderr; stdout is for --json)."""
    print(text, file=sys.stderr, flush=True)
