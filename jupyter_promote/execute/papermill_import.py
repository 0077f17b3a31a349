"""papermill, imported by the runner without the IRI grammars nothing in a job uses.

Importing papermill imports nbformat, whose validator imports jsonschema; jsonschema's format checkers
import ``rfc3987_syntax`` when it is installed, which compiles 38 lark grammars at import: 1-2 s on a small
node, before a cell can run (jsonschema issue 1428). nbformat's notebook schemas declare no ``format``, so
no check the runner makes uses those grammars: the runner imports papermill with ``rfc3987_syntax``
marked absent, as jsonschema sees it where that optional package is not installed, and unmarks it after.
"""

from __future__ import annotations

import sys
from types import ModuleType

#: Optional dependencies of jsonschema's format checkers that the runner's imports never need.
UNUSED_AT_IMPORT = ("rfc3987_syntax",)


def import_papermill() -> ModuleType:
    """``papermill``, with its engines' registry loaded (the ``promote`` engine is one of its entry points)."""
    marked = [name for name in UNUSED_AT_IMPORT if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError: "not installed"
    try:
        import papermill
        import papermill.engines  # loads the engines, ours among them
    finally:
        for name in marked:
            if sys.modules.get(name) is None:
                del sys.modules[name]
    module: ModuleType = papermill
    return module
