#!/usr/bin/env bash
# One GPU check of jupyter-promote (benchmarks/gpu_check.py); prints one line and exits 0 where there is no GPU.
# Run from anywhere: bash benchmarks/gpu_check.sh [gpu_check.py options]; the JSON goes to $OUT or the repo root.
# With .whl/ (jupyter-promote's wheel and its dependencies' for this Python, carried to a machine with no
# index) they are installed into /tmp/site first; without it, python3's own jupyter-promote is used.
set -u
cd "$(dirname "$0")/.." || exit 1
if ! nvidia-smi -L >/dev/null 2>&1 && [ ! -e /dev/nvidia0 ]; then
  echo "gpu_check: no CUDA device: skipped"
  exit 0
fi
PY=${PYTHON:-python3}
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
  # the working tree's package over the wheel's: the check runs the code as it is now, the wheel built or not
  cp -r jupyter_promote/. /tmp/site/jupyter_promote/ || exit 1
fi
$PY -m ipykernel install --prefix /tmp/kernels --name gpu-py --display-name gpu-py >/dev/null || exit 1
export JUPYTER_PATH=/tmp/kernels/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}
# from a folder of no package: `python -m papermill` puts its working directory first on sys.path, where the
# checkout's jupyter_promote/ (no _version.py: the build writes it) would shadow the installed one
root=$(pwd)
cd "$(mktemp -d)" || exit 1
exec $PY "$root/benchmarks/gpu_check.py" --kernel gpu-py "$@"
