"""The job's working directory: the files beside the notebook readable by their relative paths, and
everything the job writes kept in its run directory, as its artifacts.

The rule is the same on every target. ``RUN_DIR/work`` mirrors the notebook's folder: each directory is
made anew and each file is a symbolic link to the original (what Snakemake calls a full shadow
directory). A notebook that reads ``data.csv`` or ``data/train/0.png`` reads the user's file in place,
without a copy, however many tasks a sweep runs; a notebook that writes ``result.txt`` or
``ckpt/model.pt`` creates a new file in its own ``work/``, so tasks and replicas never touch each other's
files nor the user's. The regular files found in ``work/`` when the job ends are its artifacts.

A folder of more than :data:`LINK_WHOLE_ABOVE` entries (a dataset: images, shards) and a symbolic link to
a directory (a dataset mounted elsewhere) are linked as a whole, not walked: one link instead of one per file
(``benchmarks/stage_inputs.py`` measures both). Writing *into* an input through a link would reach the
original: container targets mount the notebook's folder read-only so that fails there, and elsewhere the
runner compares each linked input's size and modification time (a whole-linked folder's own modification
time) after the job and raises an ``input_written`` alert naming them.

Not every change is the job's: a run started as ``jupyter promote run nb.ipynb > run.log`` (or under
``nohup``, or piped to ``tee``) in the notebook's folder appends to ``run.log`` while the job runs. An input
that a process held open for writing when the job was staged or when it ended (the kernel is not running
then) was written by that process, not by the job, and is not reported. Any other change has no known
author: the alert says what changed, not who changed it. Open files are read through psutil; where it
does not say how a file was opened (macOS), a file held open at all counts as held for writing; where
psutil is absent (a container image's runner), every change is reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Folders beside a notebook that are never inputs: tool state, caches and environments.
SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".ipynb_checkpoints",
        "__pycache__",
        ".venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        "node_modules",
    }
)
#: Files that mark a run or sweep directory of jupyter-promote (an ``--out`` inside the project folder).
_RUN_MARKERS = ("job.json", "sweep.json")
#: At most this many artifacts are listed (the files stay in ``work/`` regardless).
MAX_LISTED = 10_000
#: A folder with more entries than this is a dataset: linked as a whole rather than mirrored file by file.
LINK_WHOLE_ABOVE = 1000
#: Files mirrored one by one at most; past them, folders are linked whole (a notebook saved in $HOME).
MAX_MIRRORED = 20_000


@dataclass
class StagedInputs:
    """What was linked into the working directory: input path -> (size, mtime_ns) at staging."""

    source: Path
    work: Path
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: folders linked as a whole: path -> (0, mtime_ns) at staging (an entry made in them changes it)
    folders: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: files in the source folder that some process held open for writing at staging (real paths)
    held: frozenset[str] = frozenset()

    def written(self) -> list[str]:
        """Inputs whose size or modification time changed since staging, except those another process held
        open for writing at staging or holds now (a log the run's own output is redirected into)."""
        changed = self._changed()
        files = {os.path.realpath(self.source / rel): rel for rel in changed if not rel.endswith("/")}
        others = (self.held | held_for_writing(os.path.realpath(self.source))) & files.keys()
        return [rel for rel in changed if rel not in {files[path] for path in others}]

    def _changed(self) -> list[str]:
        changed = []
        for rel, before in self.files.items():
            try:
                st = os.stat(self.source / rel)
            except OSError:
                continue  # removed meanwhile: not ours to report
            if (st.st_size, st.st_mtime_ns) != before:
                changed.append(rel)
        for rel, (_, mtime) in self.folders.items():
            try:
                if os.stat(self.source / rel).st_mtime_ns != mtime:
                    changed.append(rel + "/")
            except OSError:
                continue
        return sorted(changed)


def stage(source: str | os.PathLike[str], work: str | os.PathLike[str], exclude: tuple[str, ...] = ()) -> StagedInputs:
    """Mirror ``source`` into ``work`` with one link per file; ``exclude`` are paths never entered."""
    src, dst = Path(source), Path(work)
    dst.mkdir(parents=True, exist_ok=True)
    staged = StagedInputs(src, dst)
    if not src.is_dir():  # the notebook's folder is not here (not mounted): an empty working directory
        return staged
    skip = {os.path.realpath(p) for p in exclude} | {os.path.realpath(dst)}
    _mirror(src, dst, "", skip, staged)
    staged.held = held_for_writing(os.path.realpath(src))
    return staged


def held_for_writing(folder: str) -> frozenset[str]:
    """The files under ``folder`` (a real path) that a process of this user holds open for writing now (other
    users' processes are not readable). Where the system does not say how a file was opened (macOS), every
    file a process holds open counts; where psutil is not installed (an image's runner, which has only what
    it needs to run: the notebook's folder is mounted read-only there), none is known."""
    try:
        import psutil  # the job process: not every runner environment has it
    except ImportError:
        return frozenset()
    prefix = folder.rstrip(os.sep) + os.sep
    held: set[str] = set()
    for process in psutil.process_iter():
        try:
            files = process.open_files()
        except psutil.Error:
            continue  # gone, or another user's
        held.update(f.path for f in files if f.path.startswith(prefix) and _writable(f))
    return frozenset(held)


def _writable(file: Any) -> bool:
    """Whether an open file of :func:`psutil.Process.open_files` was opened for writing (O_WRONLY or O_RDWR);
    True where its flags are not known."""
    flags = getattr(file, "flags", None)
    return flags is None or (flags & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


def _mirror(
    src: Path,
    dst: Path,
    prefix: str,
    skip: set[str],
    staged: StagedInputs,
    entries: list[os.DirEntry[str]] | None = None,
) -> None:
    if entries is None:
        try:
            entries = list(os.scandir(src))
        except OSError:
            return  # unreadable: as for the user's own kernel, the job cannot read it either
    for entry in entries:
        if entry.name in SKIPPED or (entry.name.startswith(".") and entry.is_dir()):
            continue  # tool state, and hidden folders (~/.cache, ~/.local, ~/.conda when the notebook is in $HOME)
        rel = prefix + entry.name
        target = dst / entry.name
        if entry.is_dir(follow_symlinks=False):
            if os.path.realpath(entry.path) in skip or any(
                os.path.exists(os.path.join(entry.path, m)) for m in _RUN_MARKERS
            ):
                continue
            try:
                children = list(os.scandir(entry.path))
            except OSError:
                continue
            if len(children) <= LINK_WHOLE_ABOVE and len(staged.files) < MAX_MIRRORED:
                target.mkdir(exist_ok=True)
                _mirror(Path(entry.path), target, rel + "/", skip, staged, children)
                if children and not any(target.iterdir()):  # all of it skipped (the runs folder holding this job)
                    target.rmdir()
                continue
        if entry.is_dir(follow_symlinks=True):  # a dataset, or a link to a folder elsewhere: linked whole
            if not os.path.lexists(target):
                os.symlink(entry.path, target)
            staged.folders[rel] = (0, entry.stat(follow_symlinks=True).st_mtime_ns)
            continue
        if not os.path.lexists(target):
            os.symlink(entry.path, target)
        if entry.is_file(follow_symlinks=True) and not entry.name.endswith(".ipynb"):  # the user edits notebooks
            st = entry.stat(follow_symlinks=True)
            staged.files[rel] = (st.st_size, st.st_mtime_ns)


def artifacts(work: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The regular files under ``work`` (not the links to inputs): ``{"path", "size"}``, sorted by path."""
    root = Path(work)
    found: list[dict[str, Any]] = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                continue
            found.append({"path": path.relative_to(root).as_posix(), "size": path.stat().st_size})
            if len(found) >= MAX_LISTED:
                break
        if len(found) >= MAX_LISTED:
            break
    return sorted(found, key=lambda a: str(a["path"]))
