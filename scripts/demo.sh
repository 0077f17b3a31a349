#!/usr/bin/env bash
# Install everything, then promote the example training notebook on the default target (local)
# and show its live status in the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/jupyter promote run examples/train_mlp.ipynb -p lr 0.1 -p steps 3000 "$@"
