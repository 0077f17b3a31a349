"""Images from the files the kernel already has (image/pack*.py), against the real Docker engine and the
small kernel's venv: packing is chosen when the base image runs the kernel's files, the image's
site-packages is verified byte-identical, a platform the base image lacks or a file that embeds the
kernel's prefix falls back to the rebuild with the reason, and the same environment packs to the same bytes."""

from __future__ import annotations

import copy
import csv
import hashlib
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest
from conftest import BASE_IMAGE

from jupyter_promote.freeze import FrozenEnv, freeze, python_interpreter
from jupyter_promote.image.builder import ImageBuilder
from jupyter_promote.image.pack import PackRefused, collect, site_packages
from jupyter_promote.image.pack_layer import record_digest, write_layers, write_tar
from jupyter_promote.image.pack_platform import wheel_mismatch
from jupyter_promote.image.pack_verify import summary, unowned


@pytest.fixture(scope="module")
def small_env(small_kernel: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> FrozenEnv:
    """The small kernel's environment, frozen."""
    return freeze(python_interpreter(small_kernel["PROMOTE_SMALL_PYTHON"]), tmp_path_factory.mktemp("env") / "env")


def _builder(tmp_path: Path) -> ImageBuilder:
    return ImageBuilder(base_image=BASE_IMAGE, cache_dir=str(tmp_path / "cache"))


def test_a_matching_venv_is_packed_and_its_site_packages_verified_byte_identical(small_env, tmp_path):
    # Given the small kernel's frozen environment and a base image of the same OS, architecture and Python
    builder, lines = _builder(tmp_path), []
    # When its image is ensured (rebuilt: whatever an earlier run left)
    ref = builder.ensure(
        small_env, python_interpreter(small_env.lock["origin"]["executable"]), rebuild=True, on_line=lines.append
    )
    # Then it was packed, says why, and the verification checked every packed file inside the image
    build = ref.verification["build"]
    assert ref.built and build["mode"] == "pack" and "files packed from" in build["reason"]
    assert build["files"]["ok"] and build["files"]["record_verified"] > 1000
    assert not build["files"]["different"] and not build["files"]["extra"]
    assert any(line.startswith("build mode: pack (") for line in lines)
    assert any("files verified against RECORD" in line and "byte-identical" in line for line in lines)
    # and a file of the image is the kernel's byte for byte (numpy's compiled core, read in the container)
    site = Path(site_packages(small_env.lock["origin"]["prefix"], small_env.lock["python"]["version"]))
    core = sorted((site / "numpy" / "_core").glob("_multiarray_umath*.so"))[0]
    inside = "/opt/promote/env/lib/python3.11/site-packages/numpy/_core/" + core.name
    out = subprocess.run(["docker", "run", "--rm", ref.ref, "sha256sum", inside], capture_output=True, text=True)
    assert out.stdout.split()[0] == hashlib.sha256(core.read_bytes()).hexdigest()
    # and the same environment again: the same tag, nothing built
    again = builder.ensure(small_env, python_interpreter(small_env.lock["origin"]["executable"]))
    assert again.ref == ref.ref and not again.built


def test_a_lock_for_another_architecture_is_rebuilt_with_the_reason(small_env, tmp_path):
    # Given a lock that claims the kernel ran on another CPU architecture
    lock = copy.deepcopy(small_env.lock)
    lock["platform"]["machine"] = "aarch64"
    # When its image is planned
    plan = _builder(tmp_path).plan(FrozenEnv(lock, small_env.directory))
    # Then it is rebuilt from the pins, and the plan says why
    assert plan.mode == "rebuild" and "aarch64" in plan.reason and "pip" in plan.dockerfile
    assert "ADD pack/" not in plan.dockerfile


def test_wheels_needing_a_newer_glibc_or_another_libc_do_not_fit():
    base = {"machine": "x86_64", "libc": {"name": "glibc", "version": "2.17"}}
    lock = {"platform": {"libc": {"name": "glibc", "version": "2.36"}}}
    assert wheel_mismatch("a==1", ["cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"], lock, base) is None
    assert wheel_mismatch("a==1", ["py3-none-any"], lock, base) is None
    why = wheel_mismatch("a==1", ["cp311-cp311-manylinux_2_28_x86_64"], lock, base)
    assert why is not None and "glibc 2.28" in why and "2.17" in why
    assert "glibc 2.36" in (wheel_mismatch("a==1", ["cp311-cp311-linux_x86_64"], lock, base) or "")
    assert wheel_mismatch("a==1", ["cp311-cp311-musllinux_1_2_x86_64"], lock, base) is not None
    assert wheel_mismatch("a==1", ["cp311-cp311-manylinux_2_17_aarch64"], lock, base) is not None


def test_the_same_environment_packs_to_the_same_bytes(small_env, tmp_path):
    # Given the small kernel's ipython (console scripts with the kernel's #! line) and traitlets
    lock, prefix = small_env.lock, small_env.lock["origin"]["prefix"]
    pins = [(p["name"], p["version"]) for p in lock["packages"] if p["name"].lower() in ("ipython", "traitlets")]
    (group,) = collect("env", pins, prefix, lock["python"]["version"], "/opt/promote/env", buckets=1)
    # When it is packed twice
    first = write_tar(group, tmp_path / "a.tar")
    write_tar(group, tmp_path / "b.tar")
    # Then the tars are the same bytes, relocated, owned by root, sorted; the scripts' #! lines rewritten
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    with tarfile.open(tmp_path / "a.tar") as tar:
        members = tar.getmembers()
        script = tar.extractfile("opt/promote/env/bin/ipython").read()  # type: ignore[union-attr]
    assert all(
        m.uid == 0 and m.gid == 0 and ("opt/promote/env".startswith(m.name) or m.name.startswith("opt/promote/env/"))
        for m in members
    )
    files = [m.name for m in members if m.isfile()]
    assert files == sorted(files)
    assert script.startswith(b"#!/opt/promote/env/bin/python") and prefix.encode() not in script
    assert first["/opt/promote/env/bin/ipython"]["relocated"]


def _venv_with_ptyprocess(env: Path) -> tuple[Path, str]:
    """A real venv at ``env`` with one distribution installed by pip (ptyprocess 0.7.0); its Python's major.minor."""
    venv.create(env, with_pip=False)
    pip = [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", "--no-deps"]
    subprocess.run([*pip, "ptyprocess==0.7.0"], check=True, timeout=300)
    return env, f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_a_file_that_embeds_the_kernels_prefix_is_refused_with_its_name(tmp_path):
    # Given a real venv whose installed module records the venv's own path (RECORD updated to match)
    env, version = _venv_with_ptyprocess(tmp_path / "kernel")
    site = Path(site_packages(str(env), version))
    module = site / "ptyprocess" / "util.py"
    module.write_text(module.read_text() + f"\nPREFIX = {str(env)!r}\n")
    record = site / "ptyprocess-0.7.0.dist-info" / "RECORD"
    rows = [r for r in csv.reader(record.read_text().splitlines())]
    digest = record_digest(hashlib.sha256(module.read_bytes()).digest())
    rows = [[r[0], digest, str(module.stat().st_size)] if r[0] == "ptyprocess/util.py" else r for r in rows]
    with open(record, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    groups = tuple(collect("env", [("ptyprocess", "0.7.0")], str(env), version, "/opt/promote/env"))
    # When it is packed
    with pytest.raises(PackRefused) as refused:
        write_layers(groups, tmp_path / "context", lambda line: None)
    # Then packing is refused, naming the file and why (the builder falls back to the rebuild with it)
    assert "ptyprocess/util.py" in refused.value.reason and "cannot be relocated" in refused.value.reason
    # and a file changed since it was frozen is refused too
    module.write_text(module.read_text().replace(str(env), "elsewhere"))
    with pytest.raises(PackRefused, match="differs from its RECORD"):
        write_layers(groups, tmp_path / "context", lambda line: None)


def test_files_no_distribution_owns_are_named_and_a_venv_on_the_system_site_is_not_packed(tmp_path):
    # Given a real venv with one distribution and a module copied into its site-packages by hand
    env, version = _venv_with_ptyprocess(tmp_path / "kernel")
    (Path(site_packages(str(env), version)) / "handmade_mod.py").write_text("VALUE = 42\n")
    groups = collect("env", [("ptyprocess", "0.7.0")], str(env), version, "/opt/promote/env")
    # When the pack is checked against the kernel's site-packages
    left = unowned(groups, version)
    # Then the hand-made module is named, and the verdict does not call the image byte-identical
    assert left == ["handmade_mod.py"]
    check = {"ok": True, "files": 9, "record_verified": 8, "relocated": 0, "unowned": left}
    line = summary(check)
    assert "handmade_mod.py" in line and "byte-identical" not in line
    assert "byte-identical" in summary({**check, "unowned": []})
    # And a venv that sees its base interpreter's packages is not packed, saying so (not "changed since frozen")
    cfg = env / "pyvenv.cfg"
    cfg.write_text(
        cfg.read_text().replace("include-system-site-packages = false", "include-system-site-packages = true")
    )
    with pytest.raises(PackRefused, match="include-system-site-packages = true"):
        collect("env", [("ptyprocess", "0.7.0")], str(env), version, "/opt/promote/env")


def test_a_one_package_change_changes_one_small_layer(small_env):
    # Given the small kernel's distributions, and the same less one small one (comm)
    lock, prefix = small_env.lock, small_env.lock["origin"]["prefix"]
    pins = [(p["name"], p["version"]) for p in lock["packages"]]
    version = lock["python"]["version"]
    every = collect("env", pins, prefix, version, "/opt/promote/env")
    less = collect("env", [p for p in pins if p[0].lower() != "comm"], prefix, version, "/opt/promote/env")
    # Then numpy has a layer of its own, the rest share a few, well under Docker's 127 layers
    assert "numpy" in [g.name for g in every] and 3 < len(every) <= 20
    # and the change rewrites one layer only: a shared one, small, in the same place; the others keep their tars
    assert len(every) == len(less)
    changed = [(a, b) for a, b in zip(every, less, strict=True) if a.tar != b.tar]
    assert len(changed) == 1
    (was, now), comm = changed[0], [f for f in changed[0][0].files if f.dist.lower().startswith("comm==")]
    assert was.name == now.name and was.name.startswith("env.") and comm and not set(comm) & set(now.files)
    assert len(was.files) < sum(len(g.files) for g in every) / 3
