#!/usr/bin/env bash
# Serve a real container registry (Debian's docker-registry) on 127.0.0.1:PORT with storage in DIR.
# Usage: scripts/registry.sh PORT DIR   -- runs in the foreground; the caller stops it.
set -euo pipefail
PORT=${1:?port}; DIR=${2:?storage dir}
mkdir -p "$DIR"
cat >"$DIR/config.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
CONF
exec docker-registry serve "$DIR/config.yml"
