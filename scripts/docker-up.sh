#!/usr/bin/env bash
# Install and start a real Docker engine (and Debian's docker-registry) for the Docker tests and the demo.
# Idempotent: an engine that already answers is left alone. Needs root (apt, dockerd).
set -euo pipefail
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v docker-registry >/dev/null || need+=(docker-registry)
if [ ${#need[@]} -gt 0 ]; then
  echo "docker-up: apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/tmp/jupyter-promote-apt.log 2>&1 \
    || { tail -20 /tmp/jupyter-promote-apt.log; exit 1; }
fi
if ! docker info >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log: /tmp/dockerd.log)"
  nohup dockerd >/tmp/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    [ -S /var/run/docker.sock ] && docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { tail -20 /tmp/dockerd.log; echo "docker-up: dockerd did not start"; exit 1; }
fi
echo "docker-up: engine $(docker version --format '{{.Server.Version}}') ready"
