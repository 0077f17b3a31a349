#!/usr/bin/env bash
# A real Kubernetes cluster for the Kubernetes target's tests, as a small site runs one: etcd (Debian's
# etcd-server), kube-apiserver, kube-controller-manager and kube-scheduler (built from Debian's source
# package by scripts/k8s-build.sh: the Job controller runs the Jobs, the garbage collector removes what they
# own, the scheduler places the pods), RBAC on, users authenticated by token; one node, a real kubelet over
# a containerd of its own that pulls the jobs' images by digest from the cluster's registry
# (scripts/k8s-node-up.sh).
#
# Everything listens in a network namespace of its own (`promote-kube`: `lo` and the pods' bridge) or on
# loopback; scripts/ns_bridge.py forwards the host's 127.0.0.1:6443 to the API server. Users get a
# kubeconfig with a token that may edit the namespace `promote` (the `edit` cluster role):
# /etc/promote-kube/user.kubeconfig, installed as ~/.kube/config of whoever runs this script when they have
# none (so that `jupyter promote run NB --target kubernetes` needs no settings), and by scripts/rig.sh for the
# rig's user; the registry's HOST:PORT is in /etc/promote-kube/registry. Idempotent: a cluster whose API
# server answers and whose node is Ready is kept.
#
# Usage: scripts/k8s-up.sh [stop]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NS=promote-kube
BIN=/opt/promote-kube/bin
ETC=/etc/promote-kube
VAR=/var/lib/promote-kube
PORT=6443
NODE_IP=10.244.0.1 # the kubelet's, on the pods' bridge (scripts/k8s-node-up.sh)
PY=$root/.venv/bin/python

in_ns() { ip netns exec "$NS" "$@"; }
stop() {
  bash "$root/scripts/k8s-node-up.sh" stop
  pkill -f "k8s_node.py" 2>/dev/null || true # the stand-in node agent of earlier versions, and its pods
  if command -v docker >/dev/null; then
    docker ps -aq --filter label=io.kubernetes.pod.uid | xargs -r docker rm -f >/dev/null 2>&1 || true
  fi
  pkill -f "$BIN/kube-scheduler" 2>/dev/null || true
  pkill -f "$BIN/kube-controller-manager" 2>/dev/null || true
  pkill -f "$BIN/kube-apiserver" 2>/dev/null || true
  pkill -f "etcd --name promote-kube" 2>/dev/null || true
  pkill -f "ns_bridge.py $NS" 2>/dev/null || true
  # gone before a new one takes their ports (the API server drains its requests first)
  for _ in $(seq 40); do pgrep -f "^$BIN/kube-|^etcd --name promote-kube" >/dev/null || break; sleep 0.5; done
  pkill -9 -f "^$BIN/kube-|^etcd --name promote-kube" 2>/dev/null || true
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "k8s-up: needs root (namespaces, cgroups, containerd)" >&2; exit 1; fi

ready() { curl -sf --max-time 3 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token" 2>/dev/null)" \
  "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; }
node_ready() { curl -sf --max-time 3 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token")" \
  "https://127.0.0.1:$PORT/api/v1/nodes/promote-node" 2>/dev/null | python3 -c 'import json, sys
sys.exit(not [c for c in json.load(sys.stdin)["status"]["conditions"] if c["type"] == "Ready" and c["status"] == "True"])' 2>/dev/null; }
registry_up() { # on the host, and inside the namespace (the node pulls through scripts/ns_reverse_bridge.py)
  local url="http://127.0.0.1:$(cut -d: -f2 "$ETC/registry" 2>/dev/null)/v2/"
  curl -sf --max-time 2 "$url" >/dev/null 2>&1 && in_ns curl -sf --max-time 2 "$url" >/dev/null 2>&1
}
if ready && node_ready && registry_up && pgrep -f "^$BIN/kubelet " >/dev/null && pgrep -f "^$BIN/kube-scheduler " >/dev/null; then
  echo "k8s-up: the API server answers at https://127.0.0.1:$PORT"; exit 0
fi
stop

bash "$root/scripts/k8s-build.sh"
command -v etcd >/dev/null || apt-get install -y -qq etcd-server >/dev/null
"$PY" -c "import kubernetes" 2>/dev/null || { echo "k8s-up: needs the kubernetes client in $root/.venv (scripts/setup.sh)" >&2; exit 1; }

# certificates: one CA for the API server's serving certificate, the kubelet's (serving, and its client
# certificate as the node), the API server's client certificate for the kubelets, and the service accounts' keys
mkdir -p "$ETC" "$VAR"
chmod 0755 "$ETC"
if [ ! -f "$ETC/ca.crt" ]; then
  (
    cd "$ETC"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=promote-kube-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >admin.token
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >user.token
    printf '%s,promote-admin,promote-admin,system:masters\n%s,promote-user,promote-user,promote-users\n' \
      "$(cat admin.token)" "$(cat user.token)" >tokens.csv
    chmod 0600 ./*.key ./*.token tokens.csv
  )
fi
cert() { # NAME SUBJECT [SUBJECT-ALT-NAMES]: a key and a certificate the cluster's CA signs, unless there
  [ -f "$ETC/$1.crt" ] && return 0
  openssl req -newkey rsa:2048 -nodes -keyout "$ETC/$1.key" -out "$ETC/$1.csr" -subj "$2" 2>/dev/null
  printf 'subjectAltName=%s\n' "${3:-DNS:$1}" >"$ETC/$1.ext"
  openssl x509 -req -in "$ETC/$1.csr" -CA "$ETC/ca.crt" -CAkey "$ETC/ca.key" -CAcreateserial -out "$ETC/$1.crt" \
    -days 3650 -extfile "$ETC/$1.ext" 2>/dev/null
  rm -f "$ETC/$1.csr" "$ETC/$1.ext"
  chmod 0600 "$ETC/$1.key"
}
cert apiserver "/CN=promote-apiserver" "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
cert kubelet "/CN=promote-node" "IP:$NODE_IP,DNS:promote-node"
cert kubelet-client "/O=system:nodes/CN=system:node:promote-node"
cert apiserver-kubelet-client "/O=system:masters/CN=promote-apiserver-kubelet-client" # as kubeadm makes it
kubeconfig() { # NAME TOKEN NAMESPACE
  cat >"$ETC/$1.kubeconfig" <<CFG
apiVersion: v1
kind: Config
clusters:
- name: promote-kube
  cluster:
    server: https://127.0.0.1:$PORT
    certificate-authority-data: $(base64 -w0 "$ETC/ca.crt")
users:
- name: $1
  user:
    token: $2
contexts:
- name: promote-kube
  context: {cluster: promote-kube, user: $1, namespace: $3}
current-context: promote-kube
CFG
}
kubeconfig admin "$(cat "$ETC/admin.token")" default
kubeconfig user "$(cat "$ETC/user.token")" promote
chmod 0600 "$ETC/admin.kubeconfig"
chmod 0644 "$ETC/user.kubeconfig"  # the users' own credentials: copied to ~/.kube/config

ip netns list | grep -qw "$NS" || ip netns add "$NS"
ip -n "$NS" link set lo up

echo "k8s-up: starting etcd, kube-apiserver, kube-controller-manager and kube-scheduler in network namespace $NS"
rm -rf "$VAR/etcd"
nohup ip netns exec "$NS" etcd --name promote-kube --data-dir "$VAR/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 >"$VAR/etcd.log" 2>&1 &
nohup ip netns exec "$NS" "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$PORT \
  --tls-cert-file="$ETC/apiserver.crt" --tls-private-key-file="$ETC/apiserver.key" --client-ca-file="$ETC/ca.crt" \
  --token-auth-file="$ETC/tokens.csv" --authorization-mode=Node,RBAC \
  --service-account-key-file="$ETC/sa.pub" --service-account-signing-key-file="$ETC/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.96.0.0/24 \
  --endpoint-reconciler-type=none --kubelet-certificate-authority="$ETC/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --kubelet-client-certificate="$ETC/apiserver-kubelet-client.crt" --kubelet-client-key="$ETC/apiserver-kubelet-client.key" \
  --allow-privileged=false --cert-dir="$VAR/apiserver" >"$VAR/apiserver.log" 2>&1 &
for _ in $(seq 120); do in_ns curl -sf --max-time 2 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token")" \
  "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
nohup ip netns exec "$NS" "$BIN/kube-controller-manager" --kubeconfig="$ETC/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --port=0 --leader-elect=false \
  --service-account-private-key-file="$ETC/sa.key" --root-ca-file="$ETC/ca.crt" --flex-volume-plugin-dir="$VAR/flexvolume" \
  --controllers='*,-nodeipam,-cloud-node-lifecycle,-route,-service' >"$VAR/controller-manager.log" 2>&1 &
nohup ip netns exec "$NS" "$BIN/kube-scheduler" --kubeconfig="$ETC/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10259 --port=0 --leader-elect=false >"$VAR/scheduler.log" 2>&1 &

pkill -f "ns_bridge.py $NS" 2>/dev/null || true
nohup "$PY" "$root/scripts/ns_bridge.py" "$NS" "$PORT" >"$VAR/bridge.log" 2>&1 &
for _ in $(seq 60); do ready && break; sleep 0.5; done
ready || { echo "k8s-up: the API server does not answer on 127.0.0.1:$PORT" >&2; tail -20 "$VAR/apiserver.log"; exit 1; }

# the users' namespace and their rights in it
"$PY" - "$ETC/admin.kubeconfig" <<'PY'
import sys
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
api = config.new_client_from_config(sys.argv[1])
def make(call, *args):
    try:
        call(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise
make(client.CoreV1Api(api).create_namespace, {"metadata": {"name": "promote"}})
make(client.RbacAuthorizationV1Api(api).create_namespaced_role_binding, "promote", {
    "metadata": {"name": "promote-users-edit"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "promote-users"}],
})
PY

started=$(date +%s.%N)
bash "$root/scripts/k8s-node-up.sh"
for _ in $(seq 240); do node_ready && break; sleep 0.5; done
node_ready || { echo "k8s-up: the node is not Ready" >&2; tail -20 "$VAR/kubelet.log"; exit 1; }
echo "k8s-up: node promote-node Ready $(python3 -c "import time; print(round(time.time() - $started, 1))") s after its start"
# the kubeconfig where the client looks by default, unless one of the user's own is there
mine="$HOME/.kube/config"
if [ ! -f "$mine" ] || grep -q "name: promote-kube" "$mine"; then
  install -d -m 0700 "$HOME/.kube"
  install -m 0600 "$ETC/user.kubeconfig" "$mine"
fi
echo "k8s-up: the API server answers at https://127.0.0.1:$PORT (kubeconfig: $ETC/user.kubeconfig, namespace promote)"
