"""The job's working directory mirrors the notebook's folder, but not the runs folder that holds the job itself."""

from __future__ import annotations

from jupyter_promote.execute.workdir import stage


def test_the_runs_folder_beside_the_notebook_does_not_appear_in_the_working_directory(tmp_path):
    # Given a notebook's folder holding the runs folder, whose only entry is this job's run directory,
    # and an empty folder of the user's own
    source = tmp_path / "project"
    run = source / "runs" / "train-20261205-101500-abc123"
    run.mkdir(parents=True)
    (run / "job.json").write_text("{}")
    (source / "train.ipynb").write_text("{}")
    (source / "data.csv").write_text("a,b\n")
    (source / "outputs").mkdir()
    # When the job's working directory is staged, as the runner stages it
    staged = stage(source, run / "work", exclude=(str(run),))
    # Then the user's files and folders are there, and no empty runs/ folder
    assert sorted(p.name for p in staged.work.iterdir()) == ["data.csv", "outputs", "train.ipynb"]
