#!/usr/bin/env bash
# mypy as a regular (non-editable) install sees the package: the wheel, built as a release builds it, installed
# with its required dependencies only (no extras, no test tools) into a venv of its own outside the repository.
# Two checks, both with the project's settings (pyproject.toml):
#   1. the installed package, from a folder outside the checkout: mypy -p jupyter_promote
#   2. the checkout's source with that venv, as CI does after `pip install .`: mypy jupyter_promote
# The project's own venv (editable, every extra) is checked by `mypy jupyter_promote` in scripts/test.sh; this
# is the other end, so mypy's verdict does not depend on how the package is installed.
#
# Cached in ${XDG_CACHE_HOME:-~/.cache}/jupyter-promote/mypy-installed: the venv, keyed by the package's
# dependencies, mypy's version (the project venv's pin) and Python's; the build backend's venv, keyed by
# [build-system] (pip's isolated build would install jupyterlab anew on every run); mypy's caches. A run builds
# and reinstalls only the wheel. The wheel build needs the labextension built (scripts/setup.sh does).
# Usage: scripts/mypy-installed.sh   (PYTHON: the interpreter to build with; default .venv/bin/python)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/jupyter-promote/mypy-installed
mypy_version=$("$py" -m mypy --version | awk '{print $2}')
# prints: the venv's key, the build venv's key, then the build requirements one a line
read_pyproject() {
  "$py" - "$root/pyproject.toml" "$mypy_version" <<'EOF'
import hashlib, sys, tomllib
with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)
builder = project["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]["dependencies"]
build = [*project["build-system"]["requires"], *builder]
for key in ((project["project"]["dependencies"], sys.argv[2]), build):
    print(hashlib.sha256(repr((key, sys.version_info[:2])).encode()).hexdigest()[:16])
print("\n".join(build))
EOF
}
mapfile -t pyproject < <(read_pyproject)
[ "${#pyproject[@]}" -ge 3 ] || { echo "mypy-installed: cannot read pyproject.toml" >&2; exit 1; }
venv=$cache/venv-${pyproject[0]}
build=$cache/build-${pyproject[1]}
mkdir -p "$cache"
work=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log

# the wheel, as a release builds it (its build backend from a venv of its own, made once)
if [ ! -x "$build/bin/python" ]; then
  echo "mypy-installed: making $build (once per [build-system])"
  rm -rf "$cache"/build-*
  "$py" -m venv "$build"
  "$build/bin/pip" install --quiet "${pyproject[@]:2}" >"$log" 2>&1 || { tail -30 "$log"; rm -rf "$build"; exit 1; }
fi
"$build/bin/pip" wheel "$root" --no-deps --no-build-isolation --quiet -w "$work/dist" >"$log" 2>&1 ||
  { tail -30 "$log"; exit 1; }
wheel=$(ls "$work"/dist/jupyter_promote-*.whl)

# the venv: made once per key (the wheel's dependencies and mypy), then only the wheel is reinstalled
if [ ! -x "$venv/bin/mypy" ]; then
  echo "mypy-installed: making $venv (once per dependency set)"
  rm -rf "$venv" "$cache"/venv-*  # an older key's venv is not used again
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet "$wheel" "mypy==$mypy_version" >"$log" 2>&1 || { tail -30 "$log"; rm -rf "$venv"; exit 1; }
fi
"$venv/bin/pip" install --quiet --no-deps --force-reinstall "$wheel" >"$log" 2>&1 || { tail -30 "$log"; exit 1; }

status=0
# 1. the installed package, checked where the checkout is not importable
(cd "$work" && "$venv/bin/mypy" --config-file "$root/pyproject.toml" --cache-dir "$cache/mypy-cache-installed" \
  -p jupyter_promote) || { echo "FAIL: mypy over the installed package"; status=1; }
# 2. the checkout's source, the package installed from the wheel beside it
(cd "$root" && "$venv/bin/mypy" --config-file pyproject.toml --cache-dir "$cache/mypy-cache-source" \
  jupyter_promote) || { echo "FAIL: mypy over the source with the package installed from its wheel"; status=1; }
exit $status
