"""The shipped environment in shards and parts (jupyter_promote.image.shards, .shipped): every folder under
the upload cap as Ray zips it, names that depend on content alone (one package more re-sends one shard), and
a tree put back together on the node only when everything arrived whole."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import pytest

from jupyter_promote.errors import ImageError
from jupyter_promote.freeze import LOCK_FILE
from jupyter_promote.image import shipped
from jupyter_promote.image.shards import entries, folder_bytes, pack

MIB = 1 << 20
CAP = 1 * MIB


def tree(root: Path, sizes: dict[str, int], seed: int = 7) -> Path:
    """Files of random (incompressible) bytes, as wheels are."""
    rng = random.Random(seed)
    for rel, size in sizes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rng.randbytes(size))
    return root


def wheels(count: int, seed: int = 3) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"wheelhouse/pkg{i:03d}-1.0-py3-none-any.whl": rng.randint(5_000, 300_000) for i in range(count)}


def ray_zip_bytes(folder: Path, out: Path) -> int:
    """The zip Ray's SDK sends for a py_modules folder (its own packaging code), in bytes."""
    from ray._private.runtime_env.packaging import create_package

    target = out / f"{folder.name}.zip"
    create_package(str(folder), target, include_gitignore=True, include_parent_dir=True)
    return target.stat().st_size


def test_every_folder_fits_the_cap_as_ray_zips_it(tmp_path):
    # Given 60 wheels (about 9 MiB) and one file over the cap (a torch wheel)
    sizes = {**wheels(60), "wheelhouse/torch-2.0-cp311-linux_x86_64.whl": int(2.5 * MIB)}
    files = entries(tree(tmp_path / "env", sizes))
    # When they are packed under a 1 MiB cap
    manifest, folders = pack(files, tmp_path / "out", CAP)
    # Then every folder, zipped by Ray's own code, is under the cap, and our estimate bounds it
    assert len(folders) > 9
    for folder in folders:
        real = ray_zip_bytes(folder, tmp_path)
        assert real <= folder_bytes(folder) <= CAP, folder
    # and the large file travels in parts, the others in shards
    assert len(manifest["wheelhouse/torch-2.0-cp311-linux_x86_64.whl"]["parts"]) == 3
    assert sum("shard" in e for e in manifest.values()) == 60


def test_the_same_files_make_the_same_folders_and_one_package_more_renames_one_shard(tmp_path):
    # Given 150 wheels packed once
    sizes = wheels(150)
    before, first = pack(entries(tree(tmp_path / "a", sizes)), tmp_path / "out1", CAP)
    # When the same files are packed again elsewhere, and with one package more in the middle
    again, second = pack(entries(tree(tmp_path / "b", sizes)), tmp_path / "out2", CAP)
    more = {**sizes, "wheelhouse/pkg074a-1.0-py3-none-any.whl": 120_000}
    _, third = pack(entries(tree(tmp_path / "c", more)), tmp_path / "out3", CAP)
    # Then the same files give the same names and manifest
    assert [f.name for f in first] == [f.name for f in second] and before == again
    # and the new package changes at most its shard and the next: every other shard keeps its name
    old, new = {f.name for f in first}, {f.name for f in third}
    assert len(old) > 8 and len(old - new) <= 2 and len(new - old) <= 2, (len(old), old - new)


def test_a_packed_environment_comes_back_whole_and_checked(tmp_path, monkeypatch):
    # Given an environment (lock, requirements, a built wheel and one found in a find-links folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = tree(tmp_path / "env", {"requirements.txt": 40, "wheels/mine-0.1-py3-none-any.whl": int(1.5 * MIB)})
    found = tree(tmp_path / "links", {"big-1.0-py3-none-any.whl": 3 * MIB}, seed=9)
    wheel = {"kind": "wheel", "wheel": "wheels/big-1.0-py3-none-any.whl", "found_in": str(found)}
    lock = {"content_hash": "sha256:" + "ab" * 32, "packages": [{"name": "big", "version": "1.0", "source": wheel}]}
    (env / LOCK_FILE).write_text(json.dumps(lock))
    # When it is sent (without fetching the lock's other wheels) and put together on the node
    folders = shipped.environment_folders(env, with_wheels=False, cap=CAP)
    assert folders == shipped.environment_folders(env, with_wheels=False, cap=CAP)  # staged once, same names
    by_name = {f.name: f for f in folders}
    shipped.assemble(folders[0] / shipped.MANIFEST, by_name.get, tmp_path / "node")
    # Then every file is there with its bytes, the found wheel included; each folder under the cap
    for rel in ("requirements.txt", "wheels/mine-0.1-py3-none-any.whl", LOCK_FILE):
        assert (tmp_path / "node" / rel).read_bytes() == (env / rel).read_bytes()
    assert (tmp_path / "node/wheels/big-1.0-py3-none-any.whl").read_bytes() == (found / wheel["wheel"][7:]).read_bytes()
    assert all(folder_bytes(f) <= CAP for f in folders) and folders[0].name.startswith("promote_env_")


def test_a_folder_that_did_not_arrive_is_named(tmp_path):
    # Given a packed tree whose third folder does not reach the node
    src = tree(tmp_path / "src", wheels(40))
    manifest, folders = pack(entries(src), tmp_path / "out", CAP)
    listing = tmp_path / "manifest.json"
    listing.write_text(json.dumps({"files": manifest}))
    lost = folders[2].name
    # When the node puts it together
    with pytest.raises(ImageError) as caught:
        shipped.assemble(listing, {f.name: f for f in folders if f.name != lost}.get, tmp_path / "node")
    # Then one line names the folder and what it held
    message = str(caught.value)
    assert "arrived incomplete" in message and lost in message and "wheelhouse/pkg" in message
    assert "\n" not in message


def test_a_part_that_arrived_damaged_is_refused_and_inputs_are_copies(tmp_path):
    # Given a large file in parts, one part changed on the way
    src = tree(tmp_path / "src", {"data/big.bin": int(2.2 * MIB), "data/small.csv": 100})
    manifest, folders = pack(entries(src), tmp_path / "out", CAP)
    listing = tmp_path / "manifest.json"
    listing.write_text(json.dumps({"files": manifest}))
    by_name = {f.name: f for f in folders}
    # When it is put together whole, as copies (a notebook's inputs), it is the same and no link
    shipped.assemble(listing, by_name.get, tmp_path / "ok", link=False)
    assert (tmp_path / "ok/data/big.bin").read_bytes() == (src / "data/big.bin").read_bytes()
    assert not (tmp_path / "ok/data/small.csv").is_symlink()
    part = by_name[manifest["data/big.bin"]["parts"][1]] / "part"
    part.write_bytes(b"x" + part.read_bytes()[1:])
    # Then a damaged part fails, naming the file
    with pytest.raises(ImageError, match=r"data/big\.bin arrived damaged"):
        shipped.assemble(listing, by_name.get, tmp_path / "bad", link=False)


def test_zip_estimate_bounds_pythons_zip_for_many_small_files(tmp_path):
    # Given a shard of many tiny files with long names (headers dominate)
    sizes = {f"wheelhouse/{'n' * 80}{i}.whl": 10 for i in range(300)}
    _, folders = pack(entries(tree(tmp_path / "src", sizes)), tmp_path / "out", CAP)
    # Then the estimate is never below the real zip
    for folder in folders:
        with zipfile.ZipFile(tmp_path / "z.zip", "w") as z:
            for path in sorted(folder.rglob("*")):
                z.write(path, f"{folder.name}/{path.relative_to(folder)}")
        assert (tmp_path / "z.zip").stat().st_size <= folder_bytes(folder)
