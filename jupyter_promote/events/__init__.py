"""Job events -> job state and progress (folded the same way by the CLI, the server and the sidebar)."""

from .fold import JobView, problem

__all__ = ["JobView", "problem"]
