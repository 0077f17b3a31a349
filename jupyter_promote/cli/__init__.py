"""``jupyter promote``: the command-line door (``main`` parses and dispatches, one module per command group)."""

from .main import main, run_main

__all__ = ["main", "run_main"]
