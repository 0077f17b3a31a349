"""What the pre-flight check reports: findings, each a warning naming its cell, and the constants the checks share."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from typing import Any

#: Every ``Finding.kind``, in the order the findings of one cell are listed.
KINDS = ("order", "never_run", "syntax", "undefined", "install", "path", "env", "secret", "gpu")

IPYTHON = {"In", "Out", "get_ipython", "display", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh"}
KNOWN = frozenset(dir(builtins)) | IPYTHON | {"_dh"}
HISTORY = re.compile(r"_i?\d+$")  # _5, _i5: IPython's output and input history
ENV_PRESENT = ("HOME", "USER", "LOGNAME", "PATH", "PWD", "TMPDIR", "HOSTNAME", "SHELL")
#: Words in a variable's name that make it a credential: never carried by value (freeze/introspect.py),
#: only as a secret (--secret).
CREDENTIAL_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH")
ENV_SET_BY_TARGET = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "SLURM_", "PROMOTE_", "JUPYTER_")
SCRATCH_DIRS = ("tmp", "dev", "proc", "sys")
NOT_A_PATH = re.compile(r"[\s\\^$*+?()\[\]{}|<>%]|://")  # whitespace, regex or format syntax, URLs
RELATIVE = "put the file beside the notebook and read it by a relative path"
INSTALL = re.compile(
    r"\s*(?:[\w.]+\s*=\s*)?(?P<magic>[!%]+\s*)?(?:(?:\S*python[\d.]*|\{sys\.executable\})\s+-m\s+)?"
    r"(?P<tool>pip3?|uv pip|conda|mamba|micromamba)\s+(?P<verb>install|uninstall|remove|add)\b"
)
TIMED_LINE = re.compile(r"^(\s*)%(?:time|timeit|prun)\s+(?!-)", re.M)  # `%time x = f()`: keep `x = f()`
RUN_LINE = re.compile(r"^(\s*)%run\b.*$", re.M)  # binds what the script binds: as unknowable as `import *`
MAGIC_VALUE = re.compile(r"^(\s*[\w.]+\s*=\s*)[!%].*$", re.M)
MAGIC_LINE = re.compile(r"^(\s*)[!%].*$", re.M)


@dataclass(frozen=True)
class Finding:
    """One difference between the interactive session and the job: a warning, or an error when the job will fail on
    it (a SyntaxError, a NameError, a line that fails there); a report, never a block (but ``--strict``).

    Parameters
    ----------
    kind
        One of :data:`KINDS`.
    message
        One line naming the cell(s), e.g. ``cell 31 ran before cells 22-30: the job runs top to bottom``.
    cell
        The 1-based number of the cell among the code cells the job runs; None when notebook-wide.
    fails
        Whether the job will fail on it when that cell runs.
    """

    kind: str
    message: str
    cell: int | None
    fails: bool = False

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON object, ``{"kind", "message", "cell", "fails"}``."""
        return {"kind": self.kind, "message": self.message, "cell": self.cell, "fails": self.fails}
