#!/usr/bin/env bash
# A real S3-compatible server on 127.0.0.1 for the data layer's tests and benchmark (jupyter_promote/data):
# moto's server mode (as s3fs's own tests use), installed into its own venv ($S3_HOME/venv) so that its
# pins (botocore, python-dateutil) never meet the project's. Nothing listens on another address.
#
# Authentication is enforced, as on a real store: the server starts open, this script creates two IAM users
# through it, then switches authentication on (moto's /moto-api/reset-auth) and writes their keys to
# $S3_HOME/credentials.json (test credentials, readable by everyone on the machine):
#   promote         may do anything on S3 (the tests' and the benchmark's user)
#   promote-denied  may do nothing (the "access denied" cases)
# {"endpoint_url", "region", "users": {name: {"key", "secret"}}}
#
# Idempotent: a server that answers with the keys of credentials.json is left alone; one that answers
# without them (started elsewhere, or restarted and so forgotten) is replaced. Needs root for /opt only:
# PROMOTE_S3_HOME=/some/dir runs it as anyone. Port: PROMOTE_S3_PORT (9000).
#
# Usage: scripts/s3-up.sh [stop]
set -euo pipefail
S3_HOME=${PROMOTE_S3_HOME:-/opt/promote-s3}
PORT=${PROMOTE_S3_PORT:-9000}
VENV=$S3_HOME/venv
MOTO_VERSION=5.2.6
ENDPOINT=http://127.0.0.1:$PORT
mkdir -p "$S3_HOME"
# one start or stop at a time (two test sessions starting together)
exec 9>"$S3_HOME/up.lock"
flock 9

stop() {
  if [ -f "$S3_HOME/server.pid" ]; then
    pid=$(cat "$S3_HOME/server.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$S3_HOME/server.pid"
  fi
  rm -f "$S3_HOME/credentials.json"
  pkill -f "ns_reverse_bridge.py promote-ray $PORT" 2>/dev/null || true
}
if [ "${1:-}" = stop ]; then stop; echo "s3-up: stopped"; exit 0; fi

if [ ! -f "$VENV/.complete" ] || ! "$VENV/bin/python" -c "import moto.server, boto3" 2>/dev/null; then
  echo "s3-up: installing moto[server]==$MOTO_VERSION into $VENV"
  /usr/bin/python3 -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet "moto[server]==$MOTO_VERSION" 2> >(grep -v "is ignored: it is neither" >&2)
  touch "$VENV/.complete"
fi

# the keys of credentials.json list the buckets: the server answers, and it is the one this script set up
answers() {
  [ -f "$S3_HOME/credentials.json" ] && "$VENV/bin/python" - "$S3_HOME/credentials.json" <<'EOF' >/dev/null 2>&1
import json, sys
import boto3
from botocore.config import Config
info = json.load(open(sys.argv[1]))
user = info["users"]["promote"]
boto3.client("s3", endpoint_url=info["endpoint_url"], region_name=info["region"],
             aws_access_key_id=user["key"], aws_secret_access_key=user["secret"],
             config=Config(connect_timeout=2, read_timeout=5, retries={"max_attempts": 1})).list_buckets()
EOF
}
# the clusters' own network namespaces (scripts/ray-up.sh): their 127.0.0.1:PORT forwarded to the host's, so
# that a job on the cluster reaches the store at the same endpoint (loopback to loopback, nothing else)
bridge_clusters() {
  local root
  root=$(cd "$(dirname "$0")/.." && pwd)
  for ns in promote-ray; do
    ip netns list 2>/dev/null | grep -qw "$ns" || continue
    pgrep -f "ns_reverse_bridge.py $ns $PORT" >/dev/null && continue
    nohup /usr/bin/python3 "$root/scripts/ns_reverse_bridge.py" "$ns" "$PORT" >"$S3_HOME/bridge-$ns.log" 2>&1 9>&- &
    echo "s3-up: $ENDPOINT reachable inside network namespace $ns"
  done
}
if answers; then
  bridge_clusters
  echo "s3-up: S3 answers at $ENDPOINT (keys: $S3_HOME/credentials.json)"
  exit 0
fi

stop
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "s3-up: port $PORT is taken by another program: set PROMOTE_S3_PORT" >&2
  exit 1
fi
echo "s3-up: starting moto's server on 127.0.0.1:$PORT (log: $S3_HOME/server.log)"
# 9>&-: the server must not hold this script's lock
nohup "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$S3_HOME/server.log" 2>&1 9>&- &
echo $! >"$S3_HOME/server.pid"
for _ in $(seq 100); do
  curl -sf --max-time 2 "$ENDPOINT/moto-api/data.json" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf --max-time 2 "$ENDPOINT/moto-api/data.json" >/dev/null || { tail -20 "$S3_HOME/server.log"; exit 1; }

# the two users, then authentication on; the keys written last, so that their file means "set up"
"$VENV/bin/python" - "$ENDPOINT" "$S3_HOME/credentials.json" <<'EOF'
import json, os, sys, urllib.request
import boto3
endpoint, target = sys.argv[1], sys.argv[2]
iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
users = {}
for name in ("promote", "promote-denied"):
    iam.create_user(UserName=name)
    if name == "promote":
        iam.put_user_policy(UserName=name, PolicyName="s3-all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    users[name] = {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
# text/plain: a form body would be parsed by Flask and reach moto empty
urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                              headers={"Content-Type": "text/plain"}))
tmp = target + ".tmp"
with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "w") as f:
    json.dump({"endpoint_url": endpoint, "region": "us-east-1", "users": users}, f)
os.replace(tmp, target)
EOF
answers || { echo "s3-up: the server does not accept the keys it was given" >&2; tail -20 "$S3_HOME/server.log"; exit 1; }
bridge_clusters
echo "s3-up: S3 answers at $ENDPOINT (keys: $S3_HOME/credentials.json)"
