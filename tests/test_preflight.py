"""Preflight: what a job run of a notebook will do differently from the interactive session (static, no kernel)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_promote.preflight import KINDS, Finding, check_notebook, format_findings

NOTEBOOKS = Path(__file__).parent / "notebooks" / "preflight"


def saved(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def notebook(*sources: str, counts: list[int | None] | None = None) -> nbformat.NotebookNode:
    """Code cells from sources; counts 1..N as if run top to bottom, unless given."""
    numbers = counts if counts is not None else list(range(1, len(sources) + 1))
    return new_notebook(cells=[new_code_cell(s, execution_count=c) for s, c in zip(sources, numbers, strict=True)])


def of_kind(findings: list[Finding], kind: str) -> list[tuple[int | None, str]]:
    return [(f.cell, f.message) for f in findings if f.kind == kind]


# --- saved notebooks, as users save them ---------------------------------------------------------------------


def test_lecture_notebook_saved_out_of_order_warns_of_order_undefined_and_never_run() -> None:
    # Given Karpathy's bigram lecture saved mid-session: sampling (cell 8, count 797) reads P, which cell 11
    # (count 805) defines; cell 10 ran at 710, after cells 8 and 9; the plot cell never ran
    nb = saved("makemore_bigrams.ipynb")

    # When it is checked
    findings = check_notebook(nb)

    # Then each difference is one line naming its cell, in cell order
    assert format_findings(findings) == [
        "error: cell 8: name 'P' is used before any earlier cell defines it (cell 11 defines it)",
        "warning: cell 10 ran before cells 8, 9: the job runs top to bottom",
        "warning: cell 12 was never run in the saved notebook; the job runs it",
    ]
    assert findings[0].to_json() == {
        "kind": "undefined",
        "message": "cell 8: name 'P' is used before any earlier cell defines it (cell 11 defines it)",
        "cell": 8,
        "fails": True,
    }


def test_well_formed_training_notebook_has_no_findings() -> None:
    # Given a training notebook run top to bottom: try/except ImportError, walrus, comprehensions, f-strings, a
    # function and a class reading globals set in later cells, a lambda default, `global`, match, `import *`
    nb = saved("train_mlp.ipynb")

    # When it is checked, with or without a GPU
    findings = check_notebook(nb) + check_notebook(nb, gpus=1, env_allowlist=["OMP_NUM_THREADS"])

    # Then nothing is reported
    assert findings == []


def test_laptop_notebook_warns_of_installs_paths_environment_and_cuda() -> None:
    # Given a notebook written for one laptop
    nb = saved("laptop_finetune.ipynb")

    # When it is checked for a job without a GPU
    findings = check_notebook(nb, env_allowlist=["OMP_NUM_THREADS"])

    # Then installs, paths, environment reads and CUDA are reported, each on its cell
    assert [(f.kind, f.cell) for f in findings] == [
        ("install", 1),
        ("install", 1),
        ("path", 2),
        ("path", 2),
        ("path", 2),
        ("env", 2),
        ("secret", 2),
        ("gpu", 3),
        ("path", 4),
    ]
    messages = "\n".join(f.message for f in findings)
    assert "absolute path '/home/alice/datasets/reviews.csv' will not exist on the target" in messages
    assert "'~' is the job's home, not yours" in messages
    assert "path '../shared/vocab.json' leaves the notebook's folder" in messages
    assert (
        "reads environment variable 'WANDB_PROJECT', which is not carried into the job (allowed: OMP_NUM_THREADS"
        in messages
    )
    assert "reads environment variable 'HF_TOKEN', a credential, which is never carried by value" in messages
    assert "cell 3: uses CUDA ('.cuda()') but the job requests no GPU (--gpus N)" in messages
    assert "/tmp/scratch.txt" not in messages


# --- order and never_run ------------------------------------------------------------------------------------


def test_order_names_the_earlier_cells_that_ran_later_as_compact_ranges() -> None:
    # Given 34 cells where cells 22-30 and 33 ran after cell 34
    counts: list[int | None] = [*range(1, 22), *range(100, 109), 31, 32, 109, 50]
    nb = notebook(*(f"x{i} = {i}" for i in range(1, 35)), counts=counts)

    # When it is checked
    findings = of_kind(check_notebook(nb), "order")

    # Then cell 34 is reported once, with its earlier cells as ranges; cells 31, 32 ran before 22-30 too
    assert findings[-1] == (34, "cell 34 ran before cells 22-30, 33: the job runs top to bottom")
    assert findings[:2] == [
        (31, "cell 31 ran before cells 22-30: the job runs top to bottom"),
        (32, "cell 32 ran before cells 22-30: the job runs top to bottom"),
    ]
    assert len(findings) == 3


def test_order_is_quiet_when_cells_ran_top_to_bottom_even_with_gaps() -> None:
    # Given counts that grow with gaps (cells re-run in order), markdown between cells
    nb = notebook("a = 1", "b = a", "c = b", counts=[3, 7, 40])
    nb.cells.insert(1, new_markdown_cell("notes"))

    # When / Then nothing is out of order
    assert check_notebook(nb) == []


def test_never_run_lists_the_cells_without_a_count() -> None:
    # Given a run notebook where two non-empty cells never ran and an empty one did not either
    nb = notebook("a = 1", "b = a", "", "c = b", counts=[1, None, None, None])

    # When it is checked
    findings = of_kind(check_notebook(nb), "never_run")

    # Then one notebook-wide finding lists them (the empty cell is not one the job runs, nor numbered)
    assert findings == [(None, "cells 2, 3 were never run in the saved notebook; the job runs them")]


def test_never_run_is_quiet_for_a_clean_notebook() -> None:
    # Given a notebook whose outputs were cleared (no counts at all)
    nb = notebook("a = 1", "b = a", counts=[None, None])

    # When / Then nothing is reported
    assert check_notebook(nb) == []


# --- undefined names -----------------------------------------------------------------------------------------


def test_cells_are_numbered_among_code_cells_only() -> None:
    # Given markdown and raw cells before the cell that uses a name too early
    nb = notebook("print(total)", "total = 1")
    nb.cells[:0] = [new_markdown_cell("# Title"), nbformat.v4.new_raw_cell("raw")]

    # When / Then the code cell is cell 1
    assert of_kind(check_notebook(nb), "undefined") == [
        (1, "cell 1: name 'total' is used before any earlier cell defines it (cell 2 defines it)")
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("print(ghost)", "name 'ghost' is never defined in the notebook"),
        ("print(late)\nlate = 1", "name 'late' is used on line 1 before this cell defines it (line 2)"),
        ("steps += 1", "name 'steps' is never defined in the notebook"),
        ("[x for x in range(3)]\nprint(x)", "name 'x' is never defined in the notebook"),
        ("a = 1\ndel a\nprint(a)", "name 'a' is used after a del"),
        ("f = lambda k=missing_default: k", "name 'missing_default' is never defined in the notebook"),
        ("class C:\n    size = unset_size * 2", "name 'unset_size' is never defined in the notebook"),
        ("def train():\n    return lerning_rate * 2", "name 'lerning_rate' in function 'train' is never defined"),
        ("score = lambda y: y * wieght", "name 'wieght' in a lambda is never defined in the notebook"),
    ],
)
def test_undefined_names_are_reported(source: str, message: str) -> None:
    # Given a one-cell notebook using a name nothing defines in time
    nb = notebook(source)

    # When it is checked
    findings = of_kind(check_notebook(nb), "undefined")

    # Then the name is reported on cell 1
    assert [cell for cell, _ in findings] == [1]
    assert findings[0][1].startswith(f"cell 1: {message}")


def test_no_false_undefined_names_in_ordinary_code() -> None:
    # Given the forms a static pass gets wrong most easily
    nb = notebook(
        "import os.path\nimport numpy as np\nfrom collections import Counter as C",
        "try:\n    import ujson as json\nexcept ImportError:\n    json = None",
        "total = 0\ntotal += 1\nfor i, (a, b) in enumerate([(1, 2)]):\n    total += a * b\nfirst, *rest = [1, 2]",
        "with open('data.txt') as f, open('out.txt', 'w') as g:\n    pass",
        "if (n := len(rest)) > 0:\n    print(n, [m for v in rest if (m := v)], m)",
        "squares = {k: k * k for k in range(3)}\nnested = [[c for c in row] for row in ['ab']]",
        "print(f'{total=} {os.path.sep} {np.pi} {C()} {json}')\nprint(__name__, In, _, _3, display)",
        "def use_later():\n    return later_global + helper()\n\n\ndef helper():\n    return 1",
        "def init():\n    global cache\n    cache = {}\n\n\ninit()\nprint(cache)",
        "class Model:\n    scale = 2\n    doubled = scale * 2\n\n    def forward(self, x: Tensor) -> Tensor:\n"
        "        return x * self.scale * later_global",
        "try:\n    value = int('3')\nexcept ValueError as error:\n    print(error, value)",
        "match squares:\n    case {0: zero, **others}:\n        print(zero, others)\n    case [head, *tail]:\n"
        "        print(head, tail)\n    case Model(scale=s) as model:\n        print(s, model)",
        "later_global = 3",
        "async def fetch(url):\n    async with session.get(url) as response:\n        return await response.text()",
        "session = None",
    )

    # When / Then nothing is reported
    assert check_notebook(nb) == []


def test_nothing_is_undefined_after_a_star_import() -> None:
    # Given a cell that uses a name after `from x import *` (unknowable) and a function that uses another
    nb = notebook("print(before)", "from helpers import *", "print(after)\ndef f():\n    return anything")

    # When / Then only the use before the star import is reported
    assert of_kind(check_notebook(nb), "undefined") == [(1, "cell 1: name 'before' is never defined in the notebook")]


# --- IPython syntax and cells that do not parse -----------------------------------------------------------------


IPYTHON_CELLS = (
    "files = !ls\n%matplotlib inline\nfor name in files:\n    !echo {name}",
    "%time result = len(files)",
    "%%time\nsummary = result + 1",
    "%%capture --no-stderr captured\nprint(summary)",
    "captured.show()",
    "%%bash\necho $undefined_in_bash",
    "print(summary)",
    "%run helpers.py",
    "print(defined_by_helpers)",
)


def test_ipython_syntax_defines_and_uses_names_as_ipython_would() -> None:
    # Given magics, shell lines and cell magics that define names
    nb = notebook(*IPYTHON_CELLS)

    # When / Then nothing is reported: `x = !cmd` and `%time x = ...` define x, %%bash is not Python,
    # and %run may define anything
    assert check_notebook(nb) == []


def test_without_ipython_magics_and_shell_lines_are_blanked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given IPython cannot be imported
    monkeypatch.setitem(sys.modules, "IPython.core.inputtransformer2", None)

    # When the same cells are checked
    findings = check_notebook(notebook(*IPYTHON_CELLS))

    # Then they still parse and nothing is reported
    assert findings == []


def test_a_cell_that_does_not_parse_is_reported_and_skipped() -> None:
    # Given a cell with a syntax error between two good ones
    nb = notebook("a = 1", "b = = a\nprint(never_checked)", "print(a)")

    # When it is checked
    findings = check_notebook(nb)

    # Then one syntax finding names the line; the cell's names are not checked
    assert [(f.kind, f.cell) for f in findings] == [("syntax", 2)]
    assert findings[0].message.startswith("cell 2: does not parse (line 1: invalid syntax")


# --- installs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("%pip install torch==2.3.0", "would reinstall at run time (needs network, changes the environment)"),
        ("!pip install -q numpy", "would reinstall at run time"),
        ("!{sys.executable} -m pip install scipy", "would reinstall at run time"),
        ("!uv pip install polars", "would reinstall at run time"),
        ("%pip uninstall -y tensorflow", "would uninstall at run time (changes the environment)"),
        ("%conda install -y numpy", "conda is not in the job's image, so the line fails there"),
        ("!mamba install -y numpy", "mamba is not in the job's image"),
    ],
)
def test_installs_are_reported(line: str, says: str) -> None:
    # Given a cell installing a package at run time
    nb = notebook(f"import sys\n{line}")

    # When it is checked
    findings = of_kind(check_notebook(nb), "install")

    # Then the line is quoted with what it would do in the job
    assert len(findings) == 1
    assert findings[0][1].startswith(f"cell 1: '{line}': the frozen environment already holds what the kernel had")
    assert says in findings[0][1]


def test_install_lines_in_a_bash_cell_are_reported_and_lookalikes_are_not() -> None:
    # Given a %%bash cell installing, and lines that only look like installs
    nb = notebook("%%bash\npip install requests", "%pip list\n# !pip install old\nprint('pip install x')")

    # When / Then only the bash cell is reported
    assert [cell for cell, _ in of_kind(check_notebook(nb), "install")] == [1]


# --- paths ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("df = open('/home/me/data.csv')", "absolute path '/home/me/data.csv' will not exist on the target"),
        ("root = '/data/x'", "absolute path '/data/x' will not exist on the target; put the file beside the"),
        ("out = f'/scratch/me/{1}.pt'", "absolute path '/scratch/me/' will not exist"),
        ("cfg = '~/.config/app.toml'", "path '~/.config/app.toml' is under '~', and '~' is the job's home"),
        ("home = '~'", "path '~' is under '~'"),
        ("x = open('../data/train.csv')", "leaves the notebook's folder; only files beside the notebook are carried"),
        ("from pathlib import Path\nh = Path.home() / 'data'", "Path.home() is the job's home, not yours"),
        ("import os\np = os.path.expanduser(name)\nname = 'x'", "expanduser() expands '~'"),
    ],
)
def test_paths_that_exist_only_here_are_reported(source: str, says: str) -> None:
    # Given a cell naming a path outside the notebook's folder
    nb = notebook(source)

    # When it is checked
    findings = of_kind(check_notebook(nb), "path")

    # Then the path is reported on its cell
    assert len(findings) == 1
    assert says in findings[0][1]


def test_strings_that_are_not_foreign_paths_are_not_reported() -> None:
    # Given URLs, system and scratch paths, regexes, routes with spaces, relative paths, one-component paths
    nb = notebook(
        "import re\nurls = ['https://example.org/a/b', '//cdn.example.org/x/y']",
        "sinks = ['/dev/null', '/tmp', '/tmp/run/out.pt', '/proc/self/status', '/']",
        "pattern = re.compile(r'^/api/v\\d+/(\\w+)$')\nfmt = '/%Y/%m/%d'",
        "msg = 'copy /home/me/a.csv by hand'\nrel = ['data/train.csv', './data/x', 'a/../b', '/usr']",
        '"""A docstring mentioning /home/me/notes and ~/things."""',
    )

    # When / Then nothing is reported
    assert of_kind(check_notebook(nb), "path") == []


# --- environment variables --------------------------------------------------------------------------------------


def test_environment_reads_outside_the_allowlist_are_reported() -> None:
    # Given reads of environment variables by subscript, .get, getenv and `in`
    nb = notebook(
        "import os\nkey = os.environ['WANDB_PROJECT']\nregion = os.environ.get('AWS_REGION', 'eu')",
        "from os import environ, getenv\ndebug = getenv('DEBUG')\nif 'HF_HOME' in environ:\n    pass",
    )

    # When it is checked with an allowlist
    findings = of_kind(
        check_notebook(nb, env_allowlist=["TZ", "LANG", "LC_ALL", "PYTHONHASHSEED", "MKL_NUM_THREADS"]), "env"
    )

    # Then each name is reported once, on its cell, with the allowlist named briefly
    assert [(cell, message.split("'")[1]) for cell, message in findings] == [
        (1, "WANDB_PROJECT"),
        (1, "AWS_REGION"),
        (2, "DEBUG"),
        (2, "HF_HOME"),
    ]
    assert findings[0][1] == (
        "cell 1: reads environment variable 'WANDB_PROJECT', which is not carried into the job "
        "(allowed: LANG, LC_ALL, MKL_NUM_THREADS, PYTHONHASHSEED, ...; set PromoteSettings.env_allowlist)"
    )


def test_environment_reads_that_the_job_has_are_not_reported() -> None:
    # Given reads of allowlisted, always-present and target-set variables, and writes
    nb = notebook(
        "import os\nos.environ['WANDB_MODE'] = 'offline'\nmode = os.environ['WANDB_MODE']",
        "home, user = os.environ['HOME'], os.getenv('USER')\njob = os.environ.get('SLURM_JOB_ID')",
        "gpus = os.environ['CUDA_VISIBLE_DEVICES']\nrun = os.getenv('PROMOTE_RUN_ID')\nname = os.environ[key]",
        "key = 'X'",
    )

    # When it is checked with WANDB_MODE allowed
    findings = check_notebook(nb, env_allowlist=["WANDB_MODE"])

    # Then nothing is reported
    assert of_kind(findings, "env") == []


# --- CUDA -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "use"),
    [
        ("model = model.cuda()", ".cuda()"),
        ("x = x.to('cuda')", ".to('cuda')"),
        ("x = x.to('cuda:0', non_blocking=True)", ".to('cuda:0')"),
        ("dev = torch.device('cuda')", "torch.device('cuda')"),
        ("t = torch.zeros(3, device='cuda:1')", "device='cuda:1'"),
        ("x = x.to('cuda' if use_gpu else 'cpu')", ".to('cuda')"),
    ],
)
def test_cuda_without_gpus_is_reported(source: str, use: str) -> None:
    # Given a cell using CUDA
    nb = notebook("import torch\nmodel = x = use_gpu = None", source)

    # When it is checked for a job that requests no GPU
    findings = of_kind(check_notebook(nb, gpus=0), "gpu")

    # Then the use is reported once
    assert findings == [(2, f"cell 2: uses CUDA ('{use}') but the job requests no GPU (--gpus N)")]


def test_cuda_is_not_reported_when_guarded_or_when_the_job_has_gpus() -> None:
    # Given CUDA chosen by is_available(), and a direct .cuda()
    guarded = notebook(
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
        "model = torch.nn.Linear(2, 2)\nif torch.cuda.is_available():\n    model = model.cuda()",
        "x = torch.ones(2).to('cuda:0' if torch.cuda.is_available() else 'cpu')\ny = x.to(device)",
    )
    direct = notebook("import torch\nmodel = torch.nn.Linear(2, 2).cuda()")

    # When / Then the guarded forms are quiet without GPUs, and .cuda() is quiet with one
    assert of_kind(check_notebook(guarded), "gpu") == []
    assert of_kind(check_notebook(direct, gpus=1), "gpu") == []


# --- output forms -----------------------------------------------------------------------------------------------


def test_findings_serialize_and_format_one_line_each() -> None:
    # Given a finding per kind in the documented order
    nb = notebook("print(P)", "P = 1")

    # When formatted
    findings = check_notebook(nb)

    # Then each is one terminal line and a JSON object with the three fields
    assert format_findings(findings) == [
        "error: cell 1: name 'P' is used before any earlier cell defines it (cell 2 defines it)"
    ]
    assert findings[0].to_json() == {"kind": "undefined", "message": findings[0].message, "cell": 1, "fails": True}
    assert set(KINDS) == {"order", "never_run", "syntax", "undefined", "install", "path", "env", "secret", "gpu"}


# --- no false alarms (issue 24) -----------------------------------------------------------------------------------


def test_comment_only_cells_are_neither_out_of_order_nor_never_run() -> None:
    # Given cells of comments only (notes, a commented-out line), one run late and one never run
    late = notebook("a = 1", "# a note\n\n# print(a)", "b = a", counts=[1, 9, 2])
    never = notebook("a = 1", "# TODO: plot", "b = a", counts=[1, None, 2])

    # When / Then nothing is reported: such a cell runs nothing, in any order
    assert check_notebook(late) == [] and check_notebook(never) == []


def test_a_cell_that_does_not_parse_says_the_job_fails_there_and_comes_first() -> None:
    # Given a warning in cell 1 and a syntax error in cell 2
    nb = notebook("data = open('/home/me/data.csv')", "b = = 1")

    # When it is checked
    findings = check_notebook(nb)

    # Then the syntax error comes first, as an error: the job fails on it
    assert [(f.kind, f.cell, f.fails) for f in findings] == [("syntax", 2, True), ("path", 1, False)]
    assert format_findings(findings)[0] == (
        "error: cell 2: does not parse (line 1: invalid syntax in 'b = = 1'); the job will fail here with this "
        "SyntaxError"
    )


def test_findings_that_will_fail_the_run_come_first() -> None:
    # Given a path warning in cell 1 and a name cell 3 reads that nothing defines
    nb = notebook("data = open('/home/me/data.csv')", "import os", "print(ghost)")

    # When it is checked and formatted
    lines = format_findings(check_notebook(nb))

    # Then the NameError to come is first, marked as an error; the warning follows
    assert lines == [
        "error: cell 3: name 'ghost' is never defined in the notebook",
        "warning: cell 1: absolute path '/home/me/data.csv' will not exist on the target; put the file beside the "
        "notebook and read it by a relative path",
    ]


def test_cells_are_numbered_as_the_job_runs_them() -> None:
    # Given empty and blank cells, a cell tagged skip-execution and an injected cell before the early use
    nb = notebook("", "   \n", "print('skipped')", "x = 0", "print(total)", "total = 1", counts=[None] * 6)
    nb.cells[2].metadata["tags"] = ["skip-execution"]
    nb.cells[3].metadata["tags"] = ["jupyter-promote-injected"]

    # When / Then the cell is numbered among the cells the job runs, as progress and verdicts number it
    assert of_kind(check_notebook(nb), "undefined") == [
        (1, "cell 1: name 'total' is used before any earlier cell defines it (cell 2 defines it)")
    ]


def test_a_target_that_carries_the_whole_environment_reports_no_environment_reads() -> None:
    # Given a read of a variable outside the allowlist
    nb = notebook("import os\nkey = os.environ['WANDB_API_KEY']")

    # When it is checked for a target that passes the submitter's whole environment (local)
    # Then nothing is reported
    assert check_notebook(nb, whole_environment=True) == []
