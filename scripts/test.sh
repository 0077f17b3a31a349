#!/usr/bin/env bash
# Install everything, then run every test: Python (pytest, real kernels and papermill) and the
# labextension checks. Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$(pwd)/.venv/bin:$PATH"
status=0
# the prebuilt labextension is shipped and enabled
jupyter labextension list 2>&1 | tee /tmp/jupyter-promote-labext.txt
grep -q "jupyter-promote .*enabled.*OK" /tmp/jupyter-promote-labext.txt || { echo "labextension not enabled/OK"; status=1; }
jupyter server extension list 2>&1 | grep -q "jupyter_promote.*OK" || { echo "server extension not OK"; status=1; }
python -m pytest "$@" || status=$?
exit $status
