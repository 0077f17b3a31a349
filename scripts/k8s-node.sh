#!/usr/bin/env bash
# The test cluster's node as it runs: its own containerd and the kubelet, in the cluster's network namespace
# and one private mount namespace of their own (volume mounts such as secrets are tmpfs mounts both must
# see). scripts/k8s-node-up.sh starts it, in the foreground of
#   nsenter --net=/run/netns/promote-kube unshare --mount --propagation slave bash scripts/k8s-node.sh
# Inside, the node's own folders replace the host's paths that containerd and a 1.20 kubelet write whatever
# their settings say (/run, /var/lib, /var/log and the sysctls the kubelet sets at start), so that both run
# with their default paths and nothing of theirs reaches the host: /run is /run/promote-kube/node there,
# /var/lib and /var/log are below /var/lib/promote-kube/node. The host's Docker engine is out of sight.
set -euo pipefail
ETC=/etc/promote-kube
VAR=/var/lib/promote-kube
NODE=$VAR/node
RUN=/run/promote-kube/node
BIN=/opt/promote-kube/bin
NODE_IP=${1:?node IP}

if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
  echo "k8s-node: must run in a mount namespace of its own (see scripts/k8s-node-up.sh)" >&2
  exit 1
fi
readlink /proc/self/ns/mnt >"$RUN.mntns" # how k8s-node-up.sh stop finds every process of the node
exec 3>>"$VAR/containerd.log" 4>>"$VAR/kubelet.log"
for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys \
  kernel/keys/root_maxbytes; do
  mount --bind "$NODE/sysctl/${f//\//.}" "/proc/sys/$f"
done
mount --bind "$NODE/var/log" /var/log
mount --bind "$NODE/var/lib" /var/lib # last: it hides $NODE
mount --bind "$RUN" /run

containerd --config "$ETC/containerd.toml" >&3 2>&3 &
for _ in $(seq 100); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
ctr -n k8s.io images import /run/pause.tar >&3 2>&3 # the pod sandbox's image: containerd's sandbox_image
"$BIN/kubelet" --config="$ETC/kubelet.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" --container-runtime=remote \
  --container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip="$NODE_IP" \
  --hostname-override=promote-node --v=1 >&4 2>&4 &
wait -n # when one ends, the node is down: end the other too
kill $(jobs -p) 2>/dev/null || true
exit 1
