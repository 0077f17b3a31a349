"""Preflight: what a notebook run as a job will do differently from the interactive session.

A job runs the saved notebook top to bottom, in the frozen environment, on another machine. These checks
read the notebook statically (nothing runs) and report what will differ: cells saved out of order or never
run, names used before the cell that defines them, ``%pip install`` lines, paths that exist only here,
environment variables the job does not get (on targets that carry only the allowlist), CUDA in a job without
a GPU. Findings the job will fail on (a SyntaxError, a NameError, a line that fails there) are errors and come
first; the others are warnings. None blocks (but ``--strict``). Cells of comments only are never out of order.

Cells are numbered 1..N among the code cells the job runs, in notebook order, as progress and verdicts number
them: markdown, raw, empty and ``skip-execution`` cells, and injected cells, are not counted. IPython syntax (``%magic``, ``!shell``) becomes Python through IPython's own transformer when IPython
is importable, else those lines become ``pass``; ``%%`` cells other than ``%%time``/``%%capture`` are skipped.
Paths under ``/tmp``, ``/dev``, ``/proc`` and ``/sys`` are taken for scratch or system paths and not reported.
"""

from .check import WHOLE_ENVIRONMENT_TARGETS, check_notebook, format_findings
from .findings import KINDS, Finding

__all__ = ["KINDS", "WHOLE_ENVIRONMENT_TARGETS", "Finding", "check_notebook", "format_findings"]
