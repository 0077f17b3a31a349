"""A report a colleague can open: ``report.html`` in every finished job's run directory.

The output notebook rendered as HTML (nbconvert, the cells jupyter-promote and papermill injected left out)
under a header that states how the job ended: its verdict (parity per metric), alerts, parameters,
environment and timings. Written once the job reaches its final state, whichever state that is, by
:func:`write_report`; it never raises (a report that cannot be made is logged, and never changes how the job
ended). nbconvert is imported only when a notebook is rendered: the CLI's start does not pay for it.
"""

from .render import REPORT_FILE, report_path, write_report

__all__ = ["REPORT_FILE", "report_path", "write_report"]
