#!/usr/bin/env bash
# Install everything jupyter-promote needs into ./.venv (Python package, test extras, the prebuilt
# labextension built by hatch-jupyter-builder with jlpm). Idempotent; safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# the lockfile must match package.json: a drift fails here rather than being rewritten by an install
PATH="$(pwd)/.venv/bin:$PATH" .venv/bin/python -m pip install --quiet "jupyterlab>=4,<5"
PATH="$(pwd)/.venv/bin:$PATH" jlpm install --immutable >/dev/null
.venv/bin/python -m pip install --quiet -e ".[test]"
# the editable install's labextension is a link to the build output (the template's dev set-up), so a
# rebuild (jlpm build) is what JupyterLab serves
PATH="$(pwd)/.venv/bin:$PATH" .venv/bin/jupyter-builder develop --overwrite . >/dev/null
# the editable build leaves a copy of install.json in the build output; a later wheel build (test_wheel, the
# rig) would then add it twice and fail ("a second file is being added"): the one at the root is the source
rm -f jupyter_promote/labextension/install.json
# the default python3 kernelspec must be this venv's interpreter
.venv/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (jupyter-promote)" >/dev/null
echo "setup: $(.venv/bin/jupyter promote --help >/dev/null && echo 'jupyter promote ready') in $(pwd)/.venv"
