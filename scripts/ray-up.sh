#!/usr/bin/env bash
# A real one-node Ray cluster for the Ray target's tests, as a site runs one: its own Python environment
# (/opt/promote-ray/venv: ray[default] and what the job runner needs: papermill, jupyter_client, nbformat;
# jupyter-promote itself travels with each job), run by its own unprivileged user `promote-ray`, who cannot
# read the submitters' run directories (no shared filesystem: events and outputs come back through Ray).
#
# Ray advertises the machine's external address even when told 127.0.0.1, so the head runs in a network
# namespace of its own (`promote-ray`, only `lo`), and scripts/ns_bridge.py forwards the host's
# 127.0.0.1:8265 to the head's dashboard there: `jupyter promote run NB --target ray` needs no settings.
# Idempotent: a head that already answers is left alone.
#
# Usage: scripts/ray-up.sh [stop]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NS=promote-ray
USER_NAME=promote-ray
HOME_DIR=/var/lib/promote-ray
VENV=/opt/promote-ray/venv
PORT=8265
RAY_VERSION=2.60.0
# one start or stop at a time: two heads started in the same second fight over one GCS (a session-name assert)
exec 9>/run/lock/promote-ray-up.lock
flock 9

in_ns() { ip netns exec "$NS" "$@"; }
# from the cluster user's home: Ray's processes (forkserver children included) start in the caller's working
# directory, which that user may not be allowed to enter (a checkout under /root)
as_ray() { (cd "$HOME_DIR" && in_ns runuser -u "$USER_NAME" -- env HOME="$HOME_DIR" PATH="$VENV/bin:/usr/bin:/bin" "$@"); }

stop() {
  if ip netns list | grep -qw "$NS"; then as_ray ray stop --force >/dev/null 2>&1 || true; fi
  pkill -f "ns_bridge.py $NS" 2>/dev/null || true
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "ray-up: needs root (a network namespace, a user)" >&2; exit 1; fi

answers() { curl -sf --max-time 3 "http://127.0.0.1:$PORT/api/version" >/dev/null 2>&1; }
if answers; then echo "ray-up: the head answers at http://127.0.0.1:$PORT"; exit 0; fi

# the cluster's user and its Python environment (from the index, in the host's namespace)
id "$USER_NAME" >/dev/null 2>&1 || useradd --system --create-home --home-dir "$HOME_DIR" --shell /bin/bash "$USER_NAME"
if [ ! -f "$VENV/.complete" ] || ! runuser -u "$USER_NAME" -- "$VENV/bin/python" -c "import ray, s3fs" 2>/dev/null; then
  echo "ray-up: installing ray[default]==$RAY_VERSION and the runner's dependencies into $VENV"
  /usr/bin/python3 -m venv --clear "$VENV"  # the system's Python: the cluster's user can run it
  # the runner's dependencies, and the data extra's (a job's --data inputs are fetched on its node)
  deps=$(python3 -c "import tomllib,sys; p=tomllib.load(open(sys.argv[1],'rb'))['project']; print(' '.join(repr(d) for d in p['dependencies'] + p['optional-dependencies']['data']))" "$root/pyproject.toml")
  eval "$VENV/bin/pip install --quiet 'ray[default]==$RAY_VERSION' $deps" 2> >(grep -v "is ignored: it is neither" >&2)
  touch "$VENV/.complete"
fi
# pip on the nodes: no index is reachable from the cluster's namespace; jobs bring their wheels
install -d -o "$USER_NAME" -m 0755 "$HOME_DIR/.config/pip"
printf '[global]\nno-index = true\n' >"$HOME_DIR/.config/pip/pip.conf"
chown "$USER_NAME" "$HOME_DIR/.config/pip/pip.conf"

# the namespace: loopback only
ip netns list | grep -qw "$NS" || ip netns add "$NS"
ip -n "$NS" link set lo up

start_head() {
  echo "ray-up: starting the head (2 CPUs) in network namespace $NS as $USER_NAME"
  as_ray ray start --head --num-cpus=2 --node-ip-address=127.0.0.1 --port=6379 --dashboard-host=127.0.0.1 \
    --dashboard-port=$PORT --object-store-memory=200000000 --temp-dir="$HOME_DIR/tmp" --disable-usage-stats \
    >"$HOME_DIR/ray-start.log" 2>&1 9>&- || { tail -20 "$HOME_DIR/ray-start.log"; return 1; }
  pkill -f "ns_bridge.py $NS" 2>/dev/null || true
  # 9>&-: what runs on must not hold this script's lock (a later ray-up would wait for it forever)
  nohup "$VENV/bin/python" "$root/scripts/ns_bridge.py" "$NS" "$PORT" >"$HOME_DIR/bridge.log" 2>&1 9>&- &
  for _ in $(seq 60); do answers && return 0; sleep 0.5; done
  return 1
}
# a head started right after another one stopped may come up without its dashboard (a dashboard module
# that fails to start, seen after `ray stop --force`): stopped and started once more
for attempt in 1 2; do
  if start_head; then
    echo "ray-up: the head answers at http://127.0.0.1:$PORT"
    exit 0
  fi
  echo "ray-up: the dashboard does not answer on 127.0.0.1:$PORT (attempt $attempt)" >&2
  tail -3 "$HOME_DIR/tmp/session_latest/logs/dashboard.err" 2>/dev/null >&2 || true
  stop
  sleep 5
done
exit 1
