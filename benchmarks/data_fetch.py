"""A node fetching an input from S3 (jupyter_promote.data.fetch): cold (downloaded into the node's cache), warm
(cached: one listing, nothing downloaded), and, side by side in one run, a plain recursive copy the way
``aws s3 sync`` does it with no cache (s3fs ``get(recursive=True)`` into a fresh folder), as ratios.

Against the real S3-compatible server of scripts/s3-up.sh (moto, 127.0.0.1:9000; the script is run first,
idempotent). The dataset (``--objects`` x ``--size``, 20 x 10 MB = 200 MB by default) is written to a bucket of
its own and removed afterwards.

Usage: python benchmarks/data_fetch.py [--objects N] [--size BYTES] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import s3fs

from jupyter_promote.data import fetch, parse_data

ROOT = Path(__file__).resolve().parent.parent
S3_HOME = Path(os.environ.get("PROMOTE_S3_HOME", "/opt/promote-s3"))


def server() -> dict[str, Any]:
    """The storage options of scripts/s3-up.sh's allowed user."""
    subprocess.run(["bash", str(ROOT / "scripts/s3-up.sh")], check=True, stdout=subprocess.DEVNULL)
    info = json.loads((S3_HOME / "credentials.json").read_text())
    user = info["users"]["promote"]
    return {"key": user["key"], "secret": user["secret"], "endpoint_url": info["endpoint_url"]}


def timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=20)
    parser.add_argument("--size", type=int, default=10 * 10**6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    options = server()
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    fs.call_s3("create_bucket", Bucket=bucket)
    try:
        for i in range(args.objects):
            fs.pipe_file(f"{bucket}/ds/part-{i:04d}.bin", os.urandom(args.size))
        spec = parse_data(f"train=s3://{bucket}/ds")
        total = args.objects * args.size
        cold, warm, plain = [], [], []
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                cache = Path(tmp) / f"cache-{r}"
                seconds, got = timed(lambda cache=cache: fetch(spec, cache, options))
                assert (got.bytes_downloaded, got.cached) == (total, False)
                got.release()
                cold.append(seconds)
                seconds, got = timed(lambda cache=cache: fetch(spec, cache, options))
                assert (got.bytes_downloaded, got.cached) == (0, True)
                got.release()
                warm.append(seconds)
                copy = Path(tmp) / f"plain-{r}"
                plain_fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)  # as a fresh `aws s3 sync`
                seconds, _ = timed(
                    lambda copy=copy, plain_fs=plain_fs: plain_fs.get(f"{bucket}/ds/", f"{copy}/", recursive=True)
                )
                assert sum(p.stat().st_size for p in copy.rglob("*") if p.is_file()) == total
                plain.append(seconds)
    finally:
        fs.rm(bucket, recursive=True)
    mb = total / 1e6
    c, w, p = (statistics.median(x) for x in (cold, warm, plain))
    print(f"input: {args.objects} objects x {args.size / 1e6:.1f} MB = {mb:.0f} MB; {args.rounds} rounds, median")
    print(f"  cold fetch (download into the cache): {c:7.3f} s  {mb / c:8.1f} MB/s")
    print(f"  warm fetch (cached, one listing)    : {w:7.3f} s  {mb / w:8.1f} MB/s (effective)")
    print(f"  plain recursive get (no cache)      : {p:7.3f} s  {mb / p:8.1f} MB/s")
    print(f"  warm/cold time: {w / c:.4f} ({c / w:.0f}x faster); cold/plain time: {c / p:.2f}")


if __name__ == "__main__":
    main()
