"""The pre-flight check of a whole notebook: cells out of order or never run, installs, and the per-cell
hazards and undefined names of :mod:`.hazards` and :mod:`.names`, in one list of findings.
"""

from __future__ import annotations

import ast
import contextlib
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..job.cells import own_numbers
from ..job.notebook import source_of
from .findings import INSTALL, KINDS, MAGIC_LINE, MAGIC_VALUE, RUN_LINE, TIMED_LINE, Finding
from .hazards import Hazards
from .names import undefined_names

#: Targets whose jobs get the submitter's whole environment (``targets/local.py``), not only the allowlist.
WHOLE_ENVIRONMENT_TARGETS = frozenset({"local"})


def check_notebook(
    nb: Mapping[str, Any],
    *,
    gpus: int | None = None,
    env_allowlist: Iterable[str] = (),
    whole_environment: bool = False,
    secrets: Mapping[str, str | None] | None = None,
    secrets_read: set[str] | None = None,
) -> list[Finding]:
    """Report what will differ when the notebook runs as a job, statically (no cell is run).

    Parameters
    ----------
    nb
        The saved notebook, as read from its JSON (nbformat's ``NotebookNode`` is one too).
    gpus
        GPUs the job requests; with None or 0 every CUDA use not guarded by ``is_available()`` is reported.
    env_allowlist
        Environment variables carried into the job.
    whole_environment
        Whether the target carries the submitter's whole environment (``local``): no read is reported.
    secrets
        The job's secrets: name -> why it will not be there on the target (None: it will); a read of one
        that will not be there is reported, and (but on ``local``) a credential's name read that is not one.
    secrets_read
        Filled with the names of the secrets the notebook reads.

    Returns
    -------
    list[Finding]
        Findings the job will fail on first, then the others; each group in cell order, notebook-wide first.
    """
    sources, counts = _job_cells(nb)
    findings = [*_order(sources, counts), *_never_run(sources, counts)]
    to_python, trees = _transformer(), {}
    allowed = None if whole_environment else frozenset(env_allowlist)
    for number, source in enumerate(sources, 1):
        findings += _installs(number, source)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes in the user's code are not ours to report
                trees[number] = tree = ast.parse(to_python(source))
        except (SyntaxError, ValueError) as error:  # ValueError: null bytes
            line = f"line {error.lineno}: {error.msg}" if isinstance(error, SyntaxError) else str(error)
            text = f" in {error.text.strip()!r}" if isinstance(error, SyntaxError) and error.text else ""
            fails = "the job will fail here with this SyntaxError"
            findings.append(Finding("syntax", f"cell {number}: does not parse ({line}{text}); {fails}", number, True))
            continue
        except (RecursionError, MemoryError):
            findings.append(Finding("syntax", f"cell {number}: nested too deeply to check; not checked", number))
            continue
        hazards = Hazards(number, allowed, check_gpu=not gpus, secrets=secrets)
        try:
            hazards.visit(tree)
        except RecursionError:  # an expression thousands of terms long: the rest of the notebook is still checked
            trees.pop(number, None)
            findings.append(Finding("syntax", f"cell {number}: nested too deeply to check; not checked", number))
            continue
        findings += hazards.found.values()
        if secrets_read is not None:
            secrets_read |= hazards.secrets_read
    try:
        findings += undefined_names(trees)
    except RecursionError:
        findings.append(
            Finding("syntax", "the notebook's code is nested too deeply to check for undefined names", None)
        )
    return sorted(findings, key=lambda finding: (not finding.fails, finding.cell or 0, KINDS.index(finding.kind)))


def format_findings(findings: list[Finding]) -> list[str]:
    """One line per finding, for a terminal: ``error: cell 21: name 'P' is used before ...`` when the job will
    fail on it, ``warning: ...`` otherwise.

    Parameters
    ----------
    findings
        What :func:`check_notebook` returned.
    """
    return [f"{'error' if finding.fails else 'warning'}: {finding.message}" for finding in findings]


def _job_cells(nb: Mapping[str, Any]) -> tuple[list[str], list[int | None]]:
    """The sources and execution counts of the notebook's own code cells the job runs, numbered as progress and
    verdicts number them (:func:`jupyter_promote.job.cells.own_numbers`)."""
    cells = [nb["cells"][index] for index in own_numbers(nb["cells"])]
    sources = [source_of(cell) for cell in cells]
    return sources, [cell.get("execution_count") for cell in cells]


def _runs_code(source: str) -> bool:
    """Whether a cell holds more than comments: one of comments alone runs nothing, in any order."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in source.splitlines())


def _cells(numbers: list[int]) -> str:
    """``cell 4``, ``cells 4, 5`` or ``cells 22-30, 33``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    parts = [f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs]
    return f"cell{'s' if len(numbers) > 1 else ''} {', '.join(parts)}"


def _order(sources: list[str], counts: list[int | None]) -> list[Finding]:
    findings = []
    counts = [count if _runs_code(source) else None for source, count in zip(sources, counts, strict=True)]
    for number, count in enumerate(counts, 1):
        if count is None:
            continue
        later = [i for i, c in enumerate(counts[: number - 1], 1) if c is not None and c > count]
        if later:
            message = f"cell {number} ran before {_cells(later)}: the job runs top to bottom"
            findings.append(Finding("order", message, number))
    return findings


def _never_run(sources: list[str], counts: list[int | None]) -> list[Finding]:
    if all(count is None for count in counts):
        return []  # a clean notebook: nothing ran, so nothing is out of step
    never = [
        number for number, (s, c) in enumerate(zip(sources, counts, strict=True), 1) if c is None and _runs_code(s)
    ]
    if not never:
        return []
    verb, them = ("were", "them") if len(never) > 1 else ("was", "it")
    message = f"{_cells(never)} {verb} never run in the saved notebook; the job runs {them}"
    return [Finding("never_run", message, never[0] if len(never) == 1 else None)]


def _installs(number: int, source: str) -> list[Finding]:
    """``%pip install`` and the like, read from the raw lines (before IPython syntax is transformed)."""
    lines = source.splitlines()
    shell = bool(lines) and re.match(r"%%(?:bash|sh|script)\b", lines[0]) is not None
    findings = []
    for line in lines:
        if not (match := INSTALL.match(line)) or not (match["magic"] or shell):
            continue
        tool, verb, shown = match["tool"], match["verb"], line.strip()[:70]
        fails = tool in ("conda", "mamba", "micromamba")
        if fails:
            why = f"{tool} is not in the job's image, so the line fails there; remove it"
        elif verb == "install":
            why = "in the job this line would reinstall at run time (needs network, changes the environment); "
            why += "remove it or move the package into the kernel's environment"
        else:
            why = f"in the job this line would {verb} at run time (changes the environment); remove it"
        message = f"cell {number}: '{shown}': the frozen environment already holds what the kernel had; {why}"
        findings.append(Finding("install", message, number, fails))
    return findings


def _transformer() -> Callable[[str], str]:
    """Cell source -> Python: IPython's transformer when importable, else magics and shell lines become ``pass``."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        ipython: Any = TransformerManager()  # type: ignore[no-untyped-call, unused-ignore]  # IPython ships none
    except ImportError:
        ipython = None

    def to_python(source: str) -> str:
        if source.startswith("%%"):
            if not source.startswith(("%%time", "%%capture", "%%prun")):
                return ""  # %%bash, %%writefile, %%html ...: not Python
            magic, _, source = source.partition("\n")
            output = [word for word in magic.split()[1:] if not word.startswith("-")]  # `%%capture out`
            source = f"{output[0]} = None\n{source}" if output and magic.startswith("%%capture") else f"\n{source}"
        source = RUN_LINE.sub(r"\1from _ import *", TIMED_LINE.sub(r"\1", source))
        if ipython is not None:
            with contextlib.suppress(Exception):  # when IPython gives up, the plain fallback still parses most cells
                return str(ipython.transform_cell(source))
        return MAGIC_LINE.sub(r"\1pass", MAGIC_VALUE.sub(r"\1None", source))

    return to_python
