"""The command line as a newcomer meets it: help for every option, hints for a near miss, a status listing that
reads newest first, and a compare that says when there is nothing to compare with."""

from __future__ import annotations

import argparse

from conftest import NOTEBOOKS, job

from jupyter_promote.cli.parser import build_parser


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in commands.items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert missing == []


def test_a_parameter_written_name_equals_value_gets_a_hint_on_one_line(cli):
    result = cli("run", str(NOTEBOOKS / "success.ipynb"), "-p", "lr=0.1")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "jupyter promote: error: run: argument -p/--parameters: expected 2 arguments "
        "(give a name and a value apart: -p lr 0.1, not -p lr=0.1)"
    )


def test_status_says_when_there_are_no_jobs_and_where_it_looked(cli):
    result = cli("status")
    assert result.returncode == 0 and result.stdout.strip() == (
        f"no jobs yet in {cli.runs} (the runs directory: c.PromoteSettings.runs_dir or $JUPYTER_PROMOTE_RUNS_DIR)"
    )


def test_status_lists_newest_first_under_a_header_and_compare_without_baseline_says_so(cli):
    ids = []
    for _ in range(2):
        assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
        ids.append(next(job(run)["id"] for run in cli.runs.iterdir() if job(run)["id"] not in ids))
    lines = cli("status").stdout.splitlines()
    assert lines[0].split() == ["JOB", "STATE", "REASON", "TARGET", "CREATED", "NOTEBOOK"]
    assert [line.split()[0] for line in lines[1:]] == ids[::-1]
    # success.ipynb reports no metrics: nothing to judge against, which is not a parity failure
    run = next(p for p in cli.runs.iterdir() if job(p)["id"] == ids[0])
    before = (run / "parity.txt").read_text() if (run / "parity.txt").exists() else None
    result = cli("compare", str(NOTEBOOKS / "success.ipynb"), str(run))
    assert result.returncode == 0, result.stderr
    assert "no baseline to compare with" in result.stdout
    assert ((run / "parity.txt").read_text() if (run / "parity.txt").exists() else None) == before


def test_a_terminal_gets_a_progress_bar_over_the_notebooks_cells(tmp_path):
    """On a TTY (a real pseudo-terminal here) the status line is rewritten in place, with a bar of the cells."""
    import os
    import pty
    import select
    import subprocess
    import time

    from conftest import BIN, NOTEBOOKS

    main, child = pty.openpty()
    env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "200"}
    command = [str(BIN / "jupyter"), "promote", "run", str(NOTEBOOKS / "hang.ipynb"), "-p", "seconds", "3"]
    process = subprocess.Popen(command, stdin=child, stdout=child, stderr=child, env=env, cwd=tmp_path)
    os.close(child)
    seen = b""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the other side closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    os.close(main)
    assert process.wait(timeout=30) == 0, seen.decode(errors="replace")
    text = seen.decode(errors="replace")
    assert "\r\x1b[K" in text  # the line is rewritten, not repeated
    assert "█" in text and "| running · cell " in text, text[-2000:]


def test_the_bar_fills_by_eighths():
    from jupyter_promote.cli.progress import bar

    assert bar(0, 4, width=8) == "|        |"
    assert bar(1, 4, width=8) == "|██      |"
    assert bar(1, 3, width=8) == "|██▋     |"
    assert bar(4, 4, width=8) == "|████████|"
    assert bar(5, 0, width=8) == "|        |"
