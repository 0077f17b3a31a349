#!/usr/bin/env bash
# JupyterLab as the rig's user starts it (scripts/rig.sh made the account): in a project folder below their
# home directory, from their own virtualenv, without root_dir and without --allow-root. The folder is made
# afresh with the UI tests' notebooks on the user's own kernel. Used by ui-tests/playwright.rig.config.js.
#
# Usage: scripts/rig-lab.sh PORT
set -euo pipefail
cd "$(dirname "$0")/.."
RIG_USER=${PROMOTE_RIG_USER:-promote-user}
port=${1:-8899}
project='rig lab ñ é'
RIG_DIR=${PROMOTE_RIG_DIR:-/opt/promote-rig}
home=$(getent passwd "$RIG_USER" | cut -d: -f6)
# the project's files and the server's settings, handed over by root: the checkout may be unreadable to the user
rm -rf "$home/$project" && mkdir -p "$home/$project" && cp -r tests/notebooks/project/. "$home/$project/"
sed -i 's/"name": "python3"/"name": "project-kernel"/' "$home/$project/files.ipynb"
chown -R "$RIG_USER:" "$home/$project"
install -m 0644 ui-tests/jupyter_server_rig_config.py "$RIG_DIR/jupyter_server_rig_config.py"
# runuser -l starts a session of its own, out of reach of whoever stops this script: stop the server here
stop() { pkill -TERM -u "$RIG_USER" -f "jupyter_server_rig_config.py --ServerApp.port=$port" || true; }
trap stop EXIT
trap 'exit 0' TERM INT
runuser -l "$RIG_USER" -c "source ~/.venvs/jupyter/bin/activate && cd ~/'$project' \
  && exec jupyter lab --config='$RIG_DIR/jupyter_server_rig_config.py' --ServerApp.port=$port" &
wait $!
