"""jupyter_promote.data against a real S3-compatible server: moto's, which scripts/s3-up.sh starts on
127.0.0.1:9000 with authentication on and two users (one allowed everything, one nothing).

Every bad input gives its one line; the node's cache downloads an input once per content (two processes
at once included) and never makes an entry of a partial download; no object key writes outside its folder;
artifacts go up and come back whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import S3, new_bucket

from jupyter_promote.data import check_data, download_tree, evict, fetch, parse_data, upload_tree
from jupyter_promote.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bucket(s3: S3) -> Iterator[str]:
    yield from new_bucket(s3, {})


@pytest.fixture(scope="module")
def seeded(s3: S3) -> Iterator[str]:
    """A bucket the checks only read: in/a.bin, and trav/../escape (a key that leads out of its folder)."""
    yield from new_bucket(s3, {"in/a.bin": b"data", "trav/../escape": b"x"})


def refusal(call: Any, *args: Any, **kwargs: Any) -> str:
    """The one line a call refuses with."""
    with pytest.raises(UsageError) as caught:
        call(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and message
    return message


# ---- parsing: no network -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("train", "data train: give it as NAME=URL"),
        ("2x=s3://b/p", "data 2x: NAME must be an identifier"),
        ("train=bucket/prefix", "data train: bucket/prefix is not a URL"),
        ("train=s3://", "data train: s3:// names no bucket"),
        ("train=nosuch://b/p", "data train: unknown scheme 'nosuch'"),
        ("train=gs://b/p", "data train: reading gs:// needs the package gcsfs, not installed here"),
        ("train=file:///data/x", "data train: file:///data/x is on this machine"),
        ("train=s3://AKIAXYZ:SeCrEt1234@b/p", "data train: s3://b/p: credentials do not belong in the URL"),
        ("train=s3://b/p?X-Amz-Signature=SeCrEt1234", "data train: s3://b/p: credentials do not belong in the URL"),
    ],
)
def test_parse_refuses_each_bad_input_in_one_line(text: str, expected: str) -> None:
    message = refusal(parse_data, text)
    assert message.startswith(expected)
    assert "SeCrEt1234" not in message


def test_parse_keeps_a_canonical_url_and_local_files_where_allowed() -> None:
    spec = parse_data("train=S3://bucket/some/prefix/")
    assert (spec.name, spec.url, spec.protocol, spec.path) == (
        "train",
        "s3://bucket/some/prefix",
        "s3",
        "bucket/some/prefix",
    )
    assert parse_data("x=file:///data/x", allow_local=True).url == "file:///data/x"
    with pytest.raises(UsageError) as caught:
        parse_data("train=s3://")
    assert (caught.value.subject, caught.value.field) == ("train", "data.train")


# ---- check before submit ---------------------------------------------------------------------------------
def test_check_counts_objects_and_bytes(s3: S3, bucket: str) -> None:
    s3.fs().pipe({f"{bucket}/in/a.bin": b"a" * 1000, f"{bucket}/in/sub/b.bin": b"b" * 500})
    summary = check_data(parse_data(f"train=s3://{bucket}/in"), s3.options())
    assert (summary.objects, summary.total_bytes) == (2, 1500)
    assert summary.describe() == "2 objects, 1.5 kB"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no-bucket", "data train: bucket 'no-such-bucket-{id}' does not exist"),
        ("empty", "data train: no objects under s3://{bucket}/nothing-here"),
        ("denied", "data train: access denied to s3://{bucket}/in at http://127.0.0.1:"),
        ("bad-key", "data train: access denied to s3://{bucket}/in"),
        ("no-credentials", "data train: no credentials to read s3://{bucket}/in: give them as secrets"),
        ("unreachable", "data train: cannot reach the storage endpoint http://127.0.0.1:1: it does not answer"),
        ("traversal", "data train: object key '../escape' would be written outside its folder: refused"),
    ],
)
def test_check_refuses_each_failure_in_one_line(
    s3: S3, seeded: str, case: str, expected: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bucket = seeded
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))  # no ~/.aws of the machine's
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    ident = uuid.uuid4().hex[:8]
    url = {"no-bucket": f"s3://no-such-bucket-{ident}/in", "empty": f"s3://{bucket}/nothing-here"}.get(case)
    url = url or (f"s3://{bucket}/trav" if case == "traversal" else f"s3://{bucket}/in")
    options = {
        "denied": s3.options("promote-denied"),
        "bad-key": {**s3.options(), "secret": "SeCrEt1234-wrong"},
        "no-credentials": {"endpoint_url": s3.endpoint},
        "unreachable": {**s3.options(), "endpoint_url": "http://127.0.0.1:1"},
    }.get(case, s3.options())
    started = time.monotonic()
    message = refusal(check_data, parse_data(f"train={url}"), options)
    assert message.startswith(expected.format(bucket=bucket, id=ident)), message
    assert time.monotonic() - started < 5  # a few seconds, not minutes of retries
    for user in s3.users.values():
        assert user["secret"] not in message
    assert "SeCrEt1234" not in message


# ---- the node's cache -------------------------------------------------------------------------------------
def test_fetch_downloads_once_per_content(s3: S3, bucket: str, tmp_path: Path) -> None:
    fs = s3.fs()
    fs.pipe({f"{bucket}/ds/a.bin": os.urandom(3000), f"{bucket}/ds/sub/b.bin": os.urandom(2000)})
    spec = parse_data(f"train=s3://{bucket}/ds")
    with fetch(spec, tmp_path, s3.options()) as cold:
        assert (cold.bytes_downloaded, cold.cached, cold.objects, cold.total_bytes) == (5000, False, 2, 5000)
        assert (cold.path / "sub/b.bin").read_bytes() == fs.cat(f"{bucket}/ds/sub/b.bin")
        inode = (cold.path / "a.bin").stat().st_ino
        with fetch(spec, tmp_path, s3.options()) as warm:  # while the first is held: one job, two names
            assert (warm.path, warm.bytes_downloaded, warm.cached) == (cold.path, 0, True)
            assert (warm.path / "a.bin").stat().st_ino == inode  # the same files, not a new copy
    fs.pipe({f"{bucket}/ds/a.bin": os.urandom(3000)})  # same size, new content: a new ETag
    with fetch(spec, tmp_path, s3.options()) as changed:
        assert (changed.bytes_downloaded, changed.cached) == (5000, False)
        assert changed.path != cold.path
        assert (changed.path / "a.bin").read_bytes() == fs.cat(f"{bucket}/ds/a.bin")
    with fetch(parse_data(f"one=s3://{bucket}/ds/sub/b.bin"), tmp_path, s3.options()) as single:
        assert single.path.name == "b.bin" and single.path.stat().st_size == 2000


def test_fetch_reads_credentials_from_the_environment(
    s3: S3, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a job gets them: secrets delivered as AWS_* variables, no storage_options."""
    s3.fs().pipe({f"{bucket}/ds/a.bin": b"hello"})
    keys = s3.users["promote"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys["secret"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    with fetch(parse_data(f"train=s3://{bucket}/ds"), tmp_path) as got:
        assert (got.path / "a.bin").read_bytes() == b"hello"


CHILD = """
import json, os, sys, time
from jupyter_promote.data import fetch, parse_data
url, cache, options, go, ready = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
with fetch(parse_data("train=" + url), cache, options) as got:
    print(json.dumps({"bytes": got.bytes_downloaded, "cached": got.cached, "path": str(got.path)}))
"""


def child(url: str, cache: Path, options: dict[str, Any], go: Path) -> subprocess.Popen[str]:
    """A process that fetches ``url`` into ``cache`` once ``go`` exists (a file ``go.*.ready`` says it waits)."""
    ready = go.parent / f"{go.name}.{uuid.uuid4().hex[:8]}.ready"
    command = [sys.executable, "-c", CHILD, url, str(cache), json.dumps(options), str(go), str(ready)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def test_two_processes_fetching_at_once_download_once(s3: S3, bucket: str, tmp_path: Path) -> None:
    s3.fs().pipe({f"{bucket}/ds/{i}.bin": os.urandom(4 << 20) for i in range(4)})
    go = tmp_path / "go"
    jobs = [child(f"s3://{bucket}/ds", tmp_path / "cache", s3.options(), go) for _ in range(2)]
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("go.*.ready"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # both started and waiting: the fetches begin together
    results = [json.loads(job.communicate(timeout=60)[0]) for job in jobs]
    assert sorted(r["bytes"] for r in results) == [0, 16 << 20]
    assert sorted(r["cached"] for r in results) == [False, True]
    assert results[0]["path"] == results[1]["path"]
    assert len(list((tmp_path / "cache/entries").iterdir())) == 1


def test_a_killed_fetch_leaves_no_entry(s3: S3, bucket: str, tmp_path: Path) -> None:
    s3.fs().pipe({f"{bucket}/ds/{i}.bin": os.urandom(8 << 20) for i in range(6)})
    go, cache = tmp_path / "go", tmp_path / "cache"
    go.touch()
    job = child(f"s3://{bucket}/ds", cache, s3.options(), go)
    deadline = time.monotonic() + 30
    while not any((cache / "tmp").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.002)
    job.send_signal(signal.SIGKILL)  # mid-download: its temporary folder exists
    job.wait(timeout=10)
    assert not list((cache / "entries").iterdir())
    with fetch(parse_data(f"train=s3://{bucket}/ds"), cache, s3.options()) as again:
        assert (again.bytes_downloaded, again.cached) == (48 << 20, False)
    assert not list((cache / "tmp").iterdir())  # the dead fetch's folder went


def test_eviction_removes_least_recently_used_entries_no_job_holds(s3: S3, bucket: str, tmp_path: Path) -> None:
    fs = s3.fs()
    fs.pipe({f"{bucket}/{name}/x.bin": os.urandom(1000) for name in "abcd"})

    def get(name: str) -> Any:
        return fetch(parse_data(f"{name}=s3://{bucket}/{name}"), tmp_path, s3.options(), max_bytes=2500)

    held = get("a")  # the oldest, but in use
    get("b").release()
    c = get("c")  # 3000 bytes > 2500: b goes (a is held, c is new)
    assert held.path.is_dir() and c.path.is_dir()
    assert len(list((tmp_path / "entries").iterdir())) == 2
    held.release()
    c.release()
    assert evict(tmp_path, 1000, keep=c.key) == [held.key]
    assert [p.name for p in (tmp_path / "entries").iterdir()] == [c.key]


# ---- no key writes outside its folder ---------------------------------------------------------------------
@pytest.mark.parametrize("key", ["../escape.txt", "a/../../escape.txt", "/escape.txt", "./escape.txt"])
def test_traversal_keys_are_refused(s3: S3, bucket: str, tmp_path: Path, key: str) -> None:
    s3.fs().pipe({f"{bucket}/art/fine.txt": b"fine", f"{bucket}/art/{key}": b"escaped"})
    if key.startswith("/"):
        assert f"{bucket}/art/{key}" in s3.fs().find(f"{bucket}/art")  # the server keeps the key as given
    out = tmp_path / "deep/out"
    message = refusal(download_tree, f"s3://{bucket}/art", out, s3.options())
    assert message.startswith(f"artifacts_url: object key {key!r} would be written outside its folder")
    message = refusal(fetch, parse_data(f"train=s3://{bucket}/art"), tmp_path / "cache", s3.options())
    assert message.startswith(f"data train: object key {key!r} would be written outside its folder")
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix == ".txt"]
    assert written == []


def test_a_link_in_the_folder_does_not_lead_a_download_out(s3: S3, bucket: str, tmp_path: Path) -> None:
    s3.fs().pipe({f"{bucket}/art/link/escape.txt": b"escaped"})
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "link").symlink_to(elsewhere)
    message = refusal(download_tree, f"s3://{bucket}/art", out, s3.options())
    assert message == "artifacts_url: object key 'link/escape.txt' leads outside its folder through a link: refused"
    assert not list(elsewhere.iterdir())


# ---- artifacts -------------------------------------------------------------------------------------------
def test_upload_and_download_round_trip(s3: S3, bucket: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoints/step-2").mkdir(parents=True)
    (run / "metrics.json").write_text('{"loss": 0.1}')
    (run / "checkpoints/step-2/model.pt").write_bytes(os.urandom(3 << 20))
    (run / "checkpoints/latest").symlink_to("step-2/model.pt")  # inside: uploaded as a file
    (tmp_path / "secret.txt").write_text("node's own")
    (run / "outside").symlink_to(tmp_path / "secret.txt")  # outside: left out
    keys = upload_tree(run, f"s3://{bucket}/runs/r1", s3.options())
    assert keys == ["checkpoints/latest", "checkpoints/step-2/model.pt", "metrics.json"]
    back = tmp_path / "back"
    assert download_tree(f"s3://{bucket}/runs/r1", back, s3.options()) == keys
    for key in keys:
        assert (back / key).read_bytes() == (run / key).read_bytes()
    assert sorted(p.relative_to(back).as_posix() for p in back.rglob("*") if p.is_file()) == keys
    message = refusal(upload_tree, tmp_path / "missing", f"s3://{bucket}/runs/r2", s3.options())
    assert message.startswith("artifacts_url: ") and "is not a folder" in message
