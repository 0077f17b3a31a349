#!/usr/bin/env bash
# A real Kubernetes control plane for the Kubernetes target's tests, as a small site runs one: etcd
# (Debian's etcd-server), kube-apiserver and kube-controller-manager (built from Debian's source package by
# scripts/k8s-build.sh: its Job controller runs the Jobs, its garbage collector removes what they own),
# RBAC on, users authenticated by token. The one node is scripts/k8s_node.py, a small node agent in place
# of a kubelet (a kubelet 1.20 needs dockershim, a pause image and cgroup settings this machine does not
# offer): it schedules pods onto itself, runs each pod's container in the local Docker engine, reports
# its state and exit code (OOMKilled included) and serves its log to the API server as a kubelet does.
#
# Everything listens on 127.0.0.1 of a network namespace of its own (`promote-kube`, only `lo`);
# scripts/ns_bridge.py forwards the host's 127.0.0.1:6443 to the API server. Users get a kubeconfig with a
# token that may edit the namespace `promote` (the `edit` cluster role): /etc/promote-kube/user.kubeconfig,
# installed as ~/.kube/config of whoever runs this script when they have none (so that `jupyter promote run
# NB --target kubernetes` needs no settings), and by scripts/rig.sh for the rig's user. Idempotent: an API
# server that answers is kept.
#
# Usage: scripts/k8s-up.sh [stop]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NS=promote-kube
BIN=/opt/promote-kube/bin
ETC=/etc/promote-kube
VAR=/var/lib/promote-kube
PORT=6443
PY=$root/.venv/bin/python

in_ns() { ip netns exec "$NS" "$@"; }
stop() {
  pkill -f "k8s_node.py" 2>/dev/null || true
  pkill -f "$BIN/kube-controller-manager" 2>/dev/null || true
  pkill -f "$BIN/kube-apiserver" 2>/dev/null || true
  pkill -f "etcd --name promote-kube" 2>/dev/null || true
  pkill -f "ns_bridge.py $NS" 2>/dev/null || true
  if command -v docker >/dev/null; then
    docker ps -aq --filter label=io.kubernetes.pod.uid | xargs -r docker rm -f >/dev/null 2>&1 || true
  fi
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "k8s-up: needs root (a network namespace, the Docker engine)" >&2; exit 1; fi

ready() { curl -sf --max-time 3 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token" 2>/dev/null)" \
  "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; }
node_ready() { curl -sf --max-time 3 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token")" \
  "https://127.0.0.1:$PORT/api/v1/nodes/promote-node" 2>/dev/null | grep -q '"type": "Ready"'; }
if ready && node_ready && pgrep -f k8s_node.py >/dev/null; then echo "k8s-up: the API server answers at https://127.0.0.1:$PORT"; exit 0; fi
stop

bash "$root/scripts/k8s-build.sh"
command -v etcd >/dev/null || apt-get install -y -qq etcd-server >/dev/null
"$PY" -c "import kubernetes, docker" 2>/dev/null || { echo "k8s-up: the node agent needs the kubernetes and docker clients in $root/.venv (scripts/setup.sh)" >&2; exit 1; }

# certificates: one CA for the API server's serving certificate, the node's, and the service accounts' keys
mkdir -p "$ETC" "$VAR"
chmod 0755 "$ETC"
if [ ! -f "$ETC/ca.crt" ]; then
  (
    cd "$ETC"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=promote-kube-ca" 2>/dev/null
    for who in apiserver node; do
      openssl req -newkey rsa:2048 -nodes -keyout "$who.key" -out "$who.csr" -subj "/CN=promote-$who" 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:promote-node\n' >"$who.ext"
      openssl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$who.crt" -days 3650 \
        -extfile "$who.ext" 2>/dev/null
      rm -f "$who.csr" "$who.ext"
    done
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >admin.token
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >user.token
    printf '%s,promote-admin,promote-admin,system:masters\n%s,promote-user,promote-user,promote-users\n' \
      "$(cat admin.token)" "$(cat user.token)" >tokens.csv
    chmod 0600 ./*.key ./*.token tokens.csv
  )
fi
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

echo "k8s-up: starting etcd, kube-apiserver and kube-controller-manager in network namespace $NS"
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
  --allow-privileged=false --cert-dir="$VAR/apiserver" >"$VAR/apiserver.log" 2>&1 &
for _ in $(seq 120); do in_ns curl -sf --max-time 2 --cacert "$ETC/ca.crt" -H "Authorization: Bearer $(cat "$ETC/admin.token")" \
  "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
nohup ip netns exec "$NS" "$BIN/kube-controller-manager" --kubeconfig="$ETC/admin.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
  --service-account-private-key-file="$ETC/sa.key" --root-ca-file="$ETC/ca.crt" \
  --controllers='*,-nodeipam,-cloud-node-lifecycle,-route,-service' >"$VAR/controller-manager.log" 2>&1 &

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

echo "k8s-up: starting the node agent (promote-node, pods in the local Docker engine)"
nohup ip netns exec "$NS" "$PY" "$root/scripts/k8s_node.py" --kubeconfig "$ETC/admin.kubeconfig" \
  --cert "$ETC/node.crt" --key "$ETC/node.key" --state "$VAR/pods" >"$VAR/node.log" 2>&1 &
for _ in $(seq 60); do node_ready && break; sleep 0.5; done
node_ready || { echo "k8s-up: the node did not register" >&2; tail -20 "$VAR/node.log"; exit 1; }
# the kubeconfig where the client looks by default, unless one of the user's own is there
mine="$HOME/.kube/config"
if [ ! -f "$mine" ] || grep -q "name: promote-kube" "$mine"; then
  install -d -m 0700 "$HOME/.kube"
  install -m 0600 "$ETC/user.kubeconfig" "$mine"
fi
echo "k8s-up: the API server answers at https://127.0.0.1:$PORT (kubeconfig: $ETC/user.kubeconfig, namespace promote)"
