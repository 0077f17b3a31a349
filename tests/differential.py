"""Comparing a notebook run by plain papermill with the same notebook run by ``jupyter promote run``.

What a person compares: the outcome (succeeded or failed), for a failure the cell that failed (as the user
counts the notebook's code cells: papermill's output marks it, we name it), and each code cell's outputs
and execution count. Outputs are compared as a reader sees them: consecutive stream outputs of one stream
joined (how nbclient splits a stream depends on timing), tracebacks by their exception name and value (their
frames name files and ANSI colours), memory addresses, the kernel's per-process cell file names
(``/tmp/ipykernel_14363/2619436388.py`` in a warning), clock times (``2026-12-05T14:01:07Z``: nbclient's
Sleep1s prints the time) and the two working folders written alike.

The agreement figures (:data:`FIGURES`) are printed at the end of the test run by conftest.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_promote.job.cells import own_numbers

FIGURES: Counter[str] = Counter()
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_KERNEL_FILE = re.compile(r"ipykernel_\d+/\d+\.py")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?")


def summary() -> list[str]:
    """The agreement figures, one line each ("" when no differential test ran)."""
    if not FIGURES["notebooks"]:
        return []
    f = FIGURES
    return [
        f"notebooks run by papermill and by jupyter promote: {f['notebooks']}",
        f"same outcome: {f['outcome agree']}/{f['notebooks']}",
        f"same failing cell: {f['failing cell agree']}/{f['failures']}",
        f"same outputs: {f['cells agree']}/{f['cells']} code cells"
        f" ({f['notebooks outputs agree']}/{f['notebooks compared']} notebooks entirely)",
        f"same execution counts: {f['counts agree']}/{f['cells']} code cells",
    ]


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _normal(text: str, folders: tuple[str, ...]) -> str:
    for folder in folders:
        text = text.replace(folder, "<cwd>")
    text = _KERNEL_FILE.sub("ipykernel_<pid>/<cell>.py", text)
    return _TIMESTAMP.sub("<time>", _ADDRESS.sub("0x<address>", text))


def outputs_of(cell: dict[str, Any], folders: tuple[str, ...]) -> list[Any]:
    """A code cell's outputs as a reader compares them."""
    seen: list[Any] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            if seen and seen[-1][0] == "stream" and seen[-1][1] == output.get("name"):
                seen[-1] = ("stream", output.get("name"), seen[-1][2] + _text(output.get("text", "")))
            else:
                seen.append(("stream", output.get("name"), _text(output.get("text", ""))))
        elif kind == "error":
            seen.append(("error", output.get("ename"), _normal(str(output.get("evalue")), folders)))
        else:
            data = {mime: _normal(_text(value), folders) for mime, value in sorted(output.get("data", {}).items())}
            seen.append((kind, json.dumps(data, sort_keys=True)))
    return [(*o[:-1], _normal(o[-1], folders)) if o[0] == "stream" else o for o in seen]


def code_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    """The notebook's own executed code cells of an output notebook, in order (injected cells aside)."""
    cells = nb["cells"]
    return [cells[i] for i in sorted(own_numbers(cells))]


def papermill_failing_cell(nb: dict[str, Any]) -> int | None:
    """The number (as the user counts) of the cell papermill's output marks as failed, or None.

    The cell whose ``metadata.papermill`` says it failed (``exception`` true): where the execution stopped.
    Without one (a kernel that died), as papermill's ``raise_for_execution_errors`` finds it: the first
    error output other than a clean ``SystemExit``. (That search also stops at a cell tagged
    ``raises-exception``, whose error was allowed, and papermill's banner then points there; its cell
    metadata still marks the cell that stopped the run, which is what a verdict must name.)
    """
    numbers = own_numbers(nb["cells"])
    for index, cell in enumerate(nb["cells"]):
        if cell.get("metadata", {}).get("papermill", {}).get("exception") is True:
            return numbers.get(index, 0)
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                if output.get("ename") == "SystemExit" and str(output.get("evalue")) in ("", "0"):
                    continue
                return numbers.get(index, 0)
    return None


def compare_cells(theirs: dict[str, Any], ours: dict[str, Any], folders: tuple[str, ...]) -> list[str]:
    """Differences between two output notebooks' code cells (outputs and execution counts), one line each;
    the figures count each cell."""
    a, b = code_cells(theirs), code_cells(ours)
    differences = []
    if len(a) != len(b):
        differences.append(f"papermill's output has {len(a)} code cells, ours {len(b)}")
    for number, (mine, other) in enumerate(zip(a, b, strict=False), 1):
        FIGURES["cells"] += 1
        if outputs_of(mine, folders) == outputs_of(other, folders):
            FIGURES["cells agree"] += 1
        else:
            differences.append(
                f"cell {number}: outputs differ: {outputs_of(mine, folders)!r} != {outputs_of(other, folders)!r}"
            )
        if mine.get("execution_count") == other.get("execution_count"):
            FIGURES["counts agree"] += 1
        else:
            differences.append(
                f"cell {number}: In [{mine.get('execution_count')}] != In [{other.get('execution_count')}]"
            )
    return differences
