#!/usr/bin/env bash
# The settings of the test cluster's node (scripts/k8s-node-up.sh runs this): containerd's, the CNI
# network's, the kubelet's and its kubeconfig, in /etc/promote-kube; and the pause image as an image archive
# (a static build of the source tree's build/pause/linux/pause.c, by scripts/k8s-build.sh). The paths are
# those the node sees in its own mount namespace (scripts/k8s-node.sh): /run and /var/lib are its own there.
#
# Usage: scripts/k8s-node-config.sh NODE_IP BRIDGE CGROUP_ROOT PAUSE_ARCHIVE
set -euo pipefail
NODE_IP=${1:?node IP}; BRIDGE=${2:?bridge}; CGROUP=${3:?cgroup root}; PAUSE_TAR=${4:?pause archive}
ETC=/etc/promote-kube
BIN=/opt/promote-kube/bin
PORT=6443
PAUSE=promote.local/pause:3.4.1

cat >"$ETC/containerd.toml" <<CFG
# containerd of the test cluster's node only (scripts/k8s-node-config.sh): its own root, state and socket
# in the node's mount namespace, where /var/lib and /run are the node's folders
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  restrict_oom_score_adj = true  # root here may not lower an oom_score_adj: the kubelet's -998 is clamped
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$ETC/cni"
CFG

mkdir -p "$ETC/cni"
cat >"$ETC/cni/10-promote.conflist" <<CFG
{
  "cniVersion": "0.4.0",
  "name": "promote",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${NODE_IP%.*}.0/24", "gateway": "$NODE_IP"}]]
      }
    }
  ]
}
CFG

cat >"$ETC/kubelet.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $ETC/kubelet.crt
tlsPrivateKeyFile: $ETC/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $ETC/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP
volumePluginDir: /var/lib/kubelet-plugins/volume/exec
nodeStatusUpdateFrequency: 2s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
failSwapOn: false
makeIPTablesUtilChains: false
resolvConf: ""
serializeImagePulls: false
CFG

cat >"$ETC/kubelet.kubeconfig" <<CFG
apiVersion: v1
kind: Config
clusters:
- name: promote-kube
  cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: $ETC/ca.crt}
users:
- name: promote-node
  user: {client-certificate: $ETC/kubelet-client.crt, client-key: $ETC/kubelet-client.key}
contexts:
- name: promote-kube
  context: {cluster: promote-kube, user: promote-node}
current-context: promote-kube
CFG
chmod 0600 "$ETC/kubelet.kubeconfig"

# the pause image: one layer with /pause, as a docker-archive that \`ctr images import\` reads
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/rootfs"
install -m 0755 "$BIN/pause" "$dir/rootfs/pause"
tar -C "$dir/rootfs" --owner=0 --group=0 --mtime=@0 -cf "$dir/layer.tar" pause
layer=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$layer" >"$dir/config.json"
config=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
mv "$dir/config.json" "$dir/$config.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$config" "$PAUSE" >"$dir/manifest.json"
tar -C "$dir" -cf "$PAUSE_TAR" manifest.json "$config.json" layer.tar
