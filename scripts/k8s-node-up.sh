#!/usr/bin/env bash
# The test cluster's one node, as a small site runs one: the kubelet (1.20.2, built by scripts/k8s-build.sh
# from Debian's source package) over a containerd of its own (Debian's containerd 1.6 and runc: its own
# config, root, state and socket, never the system's), pods on a bridge in the cluster's network namespace
# (Debian's CNI plugins bridge and host-local), a pause image compiled from the same source tree; and the
# cluster's registry (Debian's docker-registry on the host's 127.0.0.1:5000, also 127.0.0.1:5000 in the
# namespace through scripts/ns_reverse_bridge.py), which the nodes pull the jobs' images from by digest.
# scripts/k8s-up.sh runs it once the API server answers; scripts/k8s-node.sh is the node as it runs.
#
# What this machine kind needs: root lacks CAP_SYS_RESOURCE, so no process may lower its oom_score_adj
# (the kubelet asks -998 for every sandbox): containerd clamps it (restrict_oom_score_adj). The kubelet has
# a cgroup root of its own (it removes what it takes for orphaned pod cgroups below it), image garbage
# collection that never runs (the tests' images stay), eviction thresholds a shared disk does not reach.
# Everything listens in the namespace (the kubelet on the bridge's address, 10.244.0.1: it refuses a
# loopback node IP) or on loopback.
#
# Usage: scripts/k8s-node-up.sh [stop]   (as root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NS=promote-kube
BIN=/opt/promote-kube/bin
ETC=/etc/promote-kube
VAR=/var/lib/promote-kube
NODE=$VAR/node
RUN=/run/promote-kube/node
CGROUP=promote-kube
BRIDGE=promote0
NODE_IP=10.244.0.1
REGISTRY_PORT=5000
PY=$root/.venv/bin/python

cgroups() { find /sys/fs/cgroup/*/"$CGROUP" -depth -type d 2>/dev/null || true; }
stop() {
  pkill -f "^$BIN/kubelet " 2>/dev/null || true
  # the pods' processes (each in a mount namespace of its own): every task below the node's cgroup root
  for _ in 1 2 3; do
    [ -n "$(cgroups | while read -r d; do cat "$d/cgroup.procs"; done)" ] || break
    cgroups | while read -r d; do xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null || true; done
    sleep 0.2
  done
  # containerd, its shims and scripts/k8s-node.sh: every process in the node's mount namespace
  # (never the host's own mount namespace: a node started without its private one would name it)
  if [ -f "$RUN.mntns" ] && [ "$(cat "$RUN.mntns")" != "$(readlink /proc/1/ns/mnt)" ] \
    && [ "$(cat "$RUN.mntns")" != "$(readlink /proc/self/ns/mnt)" ]; then
    mnt=$(cat "$RUN.mntns")
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$mnt" ] && kill -9 "${p#/proc/}" 2>/dev/null
    done
    sleep 0.5
  fi
  cgroups | while read -r d; do rmdir "$d" 2>/dev/null || true; done
  rm -rf "$RUN" "$RUN.mntns"
}
if [ "${1:-}" = stop ]; then
  stop
  pkill -f "ns_reverse_bridge.py $NS $REGISTRY_PORT" 2>/dev/null || true
  pkill -f "registry.sh $REGISTRY_PORT $VAR/registry" 2>/dev/null || true
  pkill -f "docker-registry serve $VAR/registry/config.yml" 2>/dev/null || true
  exit 0
fi
if [ "$(id -u)" != 0 ]; then echo "k8s-node-up: needs root (namespaces, cgroups, containerd)" >&2; exit 1; fi
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v docker-registry >/dev/null || need+=(docker-registry)
if [ ${#need[@]} -gt 0 ]; then
  echo "k8s-node-up: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
stop

# the cluster's registry, on the host's loopback and the namespace's
if ! curl -sf --max-time 2 "http://127.0.0.1:$REGISTRY_PORT/v2/" >/dev/null; then
  nohup bash "$root/scripts/registry.sh" "$REGISTRY_PORT" "$VAR/registry" >"$VAR/registry.log" 2>&1 &
fi
if ! pgrep -f "ns_reverse_bridge.py $NS $REGISTRY_PORT" >/dev/null; then
  nohup "$PY" "$root/scripts/ns_reverse_bridge.py" "$NS" "$REGISTRY_PORT" >"$VAR/registry-bridge.log" 2>&1 &
fi
echo "127.0.0.1:$REGISTRY_PORT" >"$ETC/registry"

# the pods' network: a bridge in the namespace, whose address is the node's
if ! ip -n "$NS" link show "$BRIDGE" >/dev/null 2>&1; then
  ip -n "$NS" link add "$BRIDGE" type bridge
  ip -n "$NS" addr add "$NODE_IP/24" dev "$BRIDGE"
fi
ip -n "$NS" link set "$BRIDGE" up

# the kubelet's cgroup root, in every hierarchy (cpuset's needs its CPUs and memory nodes before it has tasks)
for h in /sys/fs/cgroup/*/; do
  [ -f "$h/cgroup.procs" ] && [ "$(basename "$h")" != unified ] && mkdir -p "$h$CGROUP"
done
for f in cpuset.cpus cpuset.mems; do cat "/sys/fs/cgroup/cpuset/$f" >"/sys/fs/cgroup/cpuset/$CGROUP/$f"; done

# the node's own folders: what it keeps (images) stays; the kubelet's and CNI's state of a previous run goes
mkdir -p "$NODE/var/lib" "$NODE/var/log" "$NODE/sysctl" "$RUN"
: >"$VAR/containerd.log"
: >"$VAR/kubelet.log"
rm -rf "$NODE/var/lib/kubelet" "$NODE/var/lib/cni" "$NODE/var/log/pods" "$NODE/var/log/containers"
for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys \
  kernel/keys/root_maxbytes; do
  cat "/proc/sys/$f" >"$NODE/sysctl/${f//\//.}"
done
bash "$root/scripts/k8s-node-config.sh" "$NODE_IP" "$BRIDGE" "$CGROUP" "$RUN/pause.tar"

echo "k8s-up: starting the node (containerd and the kubelet, promote-node at $NODE_IP in $NS)"
nohup nsenter --net="/run/netns/$NS" unshare --mount --propagation slave \
  bash "$root/scripts/k8s-node.sh" "$NODE_IP" >"$VAR/node.log" 2>&1 &
for _ in $(seq 100); do curl -sf --max-time 2 "http://127.0.0.1:$REGISTRY_PORT/v2/" >/dev/null && break; sleep 0.1; done
