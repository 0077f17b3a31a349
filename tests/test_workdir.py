"""The job's working directory (``execute/workdir.py``): inputs by their relative paths, outputs kept apart,
datasets linked whole, run directories and tool folders left out, writes into inputs noticed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import job

from jupyter_promote.execute.workdir import LINK_WHOLE_ABOVE, artifacts, stage


def make_project(folder):
    (folder / "data").mkdir(parents=True)
    (folder / "data.csv").write_text("x\n1\n")
    (folder / "data" / "a.txt").write_text("a")
    (folder / "ckpt").mkdir()
    (folder / "ckpt" / "old.pt").write_text("old")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref")
    (folder / "runs" / "nb-1").mkdir(parents=True)
    (folder / "runs" / "nb-1" / "job.json").write_text("{}")
    images = folder / "images"
    images.mkdir()
    for i in range(LINK_WHOLE_ABOVE + 1):
        (images / f"{i}.png").write_bytes(b"")
    return folder


def test_inputs_are_links_outputs_are_new_files_and_datasets_are_one_link(tmp_path):
    # Given a project folder with files, a checkpoint folder, tool state, a run directory and a dataset
    source = make_project(tmp_path / "project")
    work = tmp_path / "run" / "work"
    # When a job's working directory is staged and the job writes new files, also into an existing folder
    staged = stage(source, work)
    (work / "result.txt").write_text("r")
    (work / "ckpt" / "new.pt").write_text("n")
    # Then inputs read the originals, outputs stay in the run, and only the new files are artifacts
    assert (work / "data.csv").read_text() == "x\n1\n" and (work / "data" / "a.txt").is_symlink()
    assert not (source / "result.txt").exists() and not (source / "ckpt" / "new.pt").exists()
    assert [a["path"] for a in artifacts(work)] == ["ckpt/new.pt", "result.txt"]
    assert (work / "images").is_symlink() and len(os.listdir(work / "images")) == LINK_WHOLE_ABOVE + 1
    assert not (work / ".git").exists() and not (work / "runs" / "nb-1").exists()
    assert staged.written() == []


def test_a_write_into_an_input_is_noticed(tmp_path):
    source = make_project(tmp_path / "project")
    work = tmp_path / "run" / "work"
    staged = stage(source, work)
    time.sleep(0.01)
    with open(work / "data.csv", "a") as f:  # through the link: the user's file
        f.write("2\n")
    (work / "images" / "extra.png").write_bytes(b"")  # into a dataset linked whole
    assert staged.written() == ["data.csv", "images/"]


def test_an_input_another_process_writes_is_not_the_jobs(tmp_path):
    # Given a log beside the notebook that another process (a shell's redirect, nohup, tee) appends to
    source = make_project(tmp_path / "project")
    with open(source / "run.log", "a") as log:  # the child keeps its own descriptor
        writer = subprocess.Popen(
            [sys.executable, "-c", "import time\nwhile True:\n    print('line', flush=True)\n    time.sleep(0.02)"],
            stdout=log,
        )
    try:
        time.sleep(0.2)
        # When the job's working directory is staged, and the job writes into one input while the writer goes on
        staged = stage(source, tmp_path / "run" / "work")
        time.sleep(0.1)
        with open(tmp_path / "run" / "work" / "data.csv", "a") as f:
            f.write("2\n")
        time.sleep(0.1)
        # Then only the input no other process held open for writing is reported
        assert staged.written() == ["data.csv"]
    finally:
        writer.kill()
        writer.wait()


def test_a_run_redirected_into_the_notebooks_folder_raises_no_alert(cli, tmp_path):
    # Given a healthy notebook, run as `jupyter promote run nb.ipynb > run.log` in its own folder
    folder = tmp_path / "nb"
    folder.mkdir()
    notebook = folder / "quiet.ipynb"
    notebook.write_text(
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [],'
        ' "source": "print(1)"}], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",'
        ' "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}'
    )
    with open(folder / "run.log", "w") as out:
        done = subprocess.run(
            cli.command("run", "quiet.ipynb"),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=folder,
            env=cli.env,
            timeout=240,
        )
    # Then it succeeds with no alert: the run's own output is not the job writing into an input
    text = (folder / "run.log").read_text()
    assert done.returncode == 0, text
    assert "alert" not in text and "input_written" not in text, text


def test_a_job_that_writes_into_an_input_gets_an_alert(cli, tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "data.csv").write_text("x\n")
    notebook = folder / "writes.ipynb"
    notebook.write_text(
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [],'
        ' "source": "open(\'data.csv\', \'a\').write(\'oops\\\\n\')"}], "metadata": {"kernelspec": {"name": "python3",'
        ' "display_name": "Python 3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}'
    )
    done = cli("run", str(notebook))
    assert done.returncode == 0, done.stderr
    record = job(cli.only_run())
    assert record["state"] == "succeeded"
    # which says what changed, not who: a write through the job's link reaches the original, and so would others'
    assert "input_written" in done.stderr and "data.csv beside the notebook changed while the job ran" in done.stderr
