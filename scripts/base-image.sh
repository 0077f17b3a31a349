#!/usr/bin/env bash
# Build the offline base image the Docker tests, benchmarks and demo use (no registry can be reached here):
# Debian bookworm minbase with python3, venv and pip, imported into the engine. Cached: an existing image
# is reused. Usage: scripts/base-image.sh [NAME]   (default jupyter-promote/base:bookworm)
set -euo pipefail
NAME=${1:-jupyter-promote/base:bookworm}
if docker image inspect "$NAME" >/dev/null 2>&1; then
  echo "base-image: $NAME (cached)"
  exit 0
fi
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DIR=$(mktemp -d /tmp/promote-rootfs.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
echo "base-image: debootstrap bookworm into $DIR (log: /tmp/debootstrap.log)"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates bookworm "$DIR" "$MIRROR" \
  >/tmp/debootstrap.log 2>&1 || { tail -20 /tmp/debootstrap.log; exit 1; }
rm -rf "$DIR"/var/cache/apt/archives/*.deb "$DIR"/var/lib/apt/lists/*
tar -C "$DIR" -c . | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$NAME" >/dev/null
echo "base-image: $NAME built ($(docker run --rm "$NAME" python3 --version))"
