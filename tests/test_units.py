"""Small pure pieces: resource parsing, parameter typing (against papermill's own), lock hashing."""

from __future__ import annotations

import pytest
from papermill.cli import _resolve_type

from jupyter_promote.errors import UsageError
from jupyter_promote.freeze.lock import classify, content_hash
from jupyter_promote.job.parameters import resolve_type
from jupyter_promote.models import Resources, parse_memory, parse_time_limit


@pytest.mark.parametrize("value", ["1", "-3", "1.5", "1e3", "True", "False", "None", "abc", "0x10", "nan", "inf", ""])
def test_parameter_typing_matches_papermill(value):
    assert repr(resolve_type(value)) == repr(_resolve_type(value))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("10m", 600), ("2h", 7200), ("30", 1800), ("1:30:00", 5400), ("1-00:00:00", 86400), ("05:00", 300)],
)
def test_time_limits(text, seconds):
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize(
    ("text", "size"), [("512M", 512 * 2**20), ("4G", 4 * 2**30), ("2GiB", 2 * 2**30), ("100", 100 * 2**20)]
)
def test_memory_sizes(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("bad", [{"cpus": "0"}, {"gpus": "x"}, {"memory": "lots"}, {"time": "soon"}])
def test_bad_resources_are_usage_errors(bad):
    with pytest.raises(UsageError):
        Resources.parse(**bad)


def test_hash_ignores_origin_and_hardware():
    lock = {"schema": 1, "packages": [{"name": "a"}], "origin": {"host": "x"}, "hardware": {"cpu": 1}}
    other = {**lock, "origin": {"host": "y"}, "hardware": {"cpu": 2}}
    assert content_hash(lock) == content_hash(other)
    assert content_hash(lock) != content_hash({**lock, "packages": [{"name": "b"}]})


def test_provenance_classification():
    assert (
        classify({"name": "torch", "version": "2.1.0+cu121", "installer": "pip"})["index"]
        == "https://download.pytorch.org/whl/cu121"
    )
    unknown = classify({"name": "corp", "version": "1.0+internal", "installer": "pip"})
    assert unknown["index"] is None and unknown["index_known"].startswith("unknown")
    vcs = classify(
        {
            "name": "x",
            "version": "1",
            "direct_url": {"url": "https://github.com/o/x", "vcs_info": {"vcs": "git", "commit_id": "abc"}},
        }
    )
    assert vcs == {"kind": "vcs", "vcs": "git", "url": "https://github.com/o/x", "commit": "abc"}
    assert "unreproducible" in classify({"name": "c", "version": "1", "installer": "conda"})
