"""The cost of giving a job the files beside its notebook: the working directory of links that every task gets
(``jupyter_promote.execute.workdir.stage``) against copying the folder per task (what a job would need for the
same isolation without links), on one synthetic project folder, side by side in one run.

Usage: python benchmarks/stage_inputs.py [--files N] [--size BYTES] [--folders N] [--rounds N]

With more than 1000 files a folder (a dataset) the folder is one link; with fewer, one link per file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_promote.execute.workdir import artifacts, stage


def project(root: Path, files: int, size: int, folders: int) -> Path:
    """A notebook folder with ``files`` input files of ``size`` bytes in ``folders`` sub-folders of data/."""
    folder = root / "project"
    payload = os.urandom(size)
    for i in range(files):
        sub = folder / "data" / f"{i % folders:04d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{i:07d}.bin").write_bytes(payload)
    (folder / "train.ipynb").write_text("{}")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--folders", type=int, default=100, help="sub-folders the files are spread over")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = project(root, args.files, args.size, args.folders)
        links, copies, listing = [], [], []
        for r in range(args.rounds):
            started = time.perf_counter()
            staged = stage(source, root / f"links-{r}" / "work")
            links.append(time.perf_counter() - started)
            started = time.perf_counter()
            artifacts(staged.work)
            staged.written()
            listing.append(time.perf_counter() - started)
            started = time.perf_counter()
            shutil.copytree(source, root / f"copy-{r}" / "work")
            copies.append(time.perf_counter() - started)
        mib = args.files * args.size / 2**20
        print(
            f"inputs: {args.files} files in {args.folders} folders, {mib:.0f} MiB; {args.rounds} rounds, median seconds"
        )
        print(f"  links (stage):                 {statistics.median(links):.3f}")
        print(f"  after the job (artifacts, written inputs): {statistics.median(listing):.3f}")
        print(f"  copy (shutil.copytree):        {statistics.median(copies):.3f}")
        print(f"  ratio links/copy: {statistics.median(links) / statistics.median(copies):.3f}")


if __name__ == "__main__":
    main()
