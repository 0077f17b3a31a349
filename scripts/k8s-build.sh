#!/usr/bin/env bash
# Kubernetes from Debian's own source package, for the Kubernetes target's tests: no registry this
# machine reaches ships kube-apiserver, a kubelet, k3s or kind, but bookworm's source package `kubernetes`
# (1.20.2) builds kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet (8-15 min on two
# cores), and its build/pause/linux/pause.c the pod sandbox's pause binary (static, under a second).
# The binaries are cached outside the repository, in /opt/promote-kube/bin; a cached build is kept.
#
# The source vendors github.com/modern-go/reflect2 1.0.1, which crashes the API server (SIGSEGV in
# mapiterinit while encoding JSON) when built with Go 1.18 or later, as bookworm's Go 1.19 is; Debian
# builds the package against its own reflect2 1.0.2, and so does this script.
#
# Usage: scripts/k8s-build.sh [fetch]   (fetch: only the toolchain and the source, through apt-get)
set -euo pipefail
BIN=/opt/promote-kube/bin
SRC=/opt/promote-kube/src
BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet"
BUILD="kubernetes 1.20.2, reflect2 1.0.2: $BINARIES, pause"  # what a cached build must have been made from
cached() {
  for b in $BINARIES pause; do [ -x "$BIN/$b" ] || return 1; done
  [ "$(cat "$BIN/BUILD" 2>/dev/null)" = "$BUILD" ]
}
if cached; then
  echo "k8s-build: cached in $BIN"; exit 0
fi
if [ "$(id -u)" != 0 ]; then echo "k8s-build: needs root (apt-get)" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
fetch() { # the toolchain and the source package, unless there (apt-get: call it before other installs run)
  mkdir -p "$SRC" "$BIN"
  if command -v go >/dev/null && command -v etcd >/dev/null && [ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] &&
    ls -d "$SRC"/kubernetes-*/ >/dev/null 2>&1; then
    return 0
  fi
  # deb-src next to the machine's deb lines, in a file of our own
  if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/promote-src.sources; then
    sed -n '/^Types: deb$/,/^$/p' /etc/apt/sources.list.d/debian.sources | sed 's/^Types: deb$/Types: deb-src/' \
      >/etc/apt/sources.list.d/promote-src.sources
  fi
  apt-get update -qq
  apt-get install -y -qq golang-go dpkg-dev rsync etcd-server etcd-client golang-github-modern-go-reflect2-dev gcc libc6-dev >/dev/null
  if ! ls -d "$SRC"/kubernetes-*/ >/dev/null 2>&1; then (cd "$SRC" && apt-get source -qq kubernetes >/dev/null); fi
}
if [ "${1:-}" = fetch ]; then fetch; exit 0; fi
# one build at a time (scripts/test.sh starts one in the background; scripts/k8s-up.sh waits for it here)
exec 9>/run/lock/promote-k8s-build.lock
flock 9
if cached; then
  echo "k8s-build: cached in $BIN"; exit 0
fi
fetch
cd "$SRC/$(cd "$SRC" && ls -d kubernetes-*/ | head -1)"
rsync -a --delete --exclude go.mod /usr/share/gocode/src/github.com/modern-go/reflect2/ vendor/github.com/modern-go/reflect2/
echo "k8s-build: building $BINARIES from $(pwd) (minutes)"
export GOFLAGS=-mod=vendor GO111MODULE=on GOCACHE="$SRC/.gocache" GOPATH="$SRC/.gopath"
make WHAT="$(printf 'cmd/%s ' $BINARIES)" >"$SRC/build.log" 2>&1 || { tail -30 "$SRC/build.log"; exit 1; }
gcc -Os -static -Wall -DVERSION=v3.4.1-promote -o "$BIN/.pause.new" build/pause/linux/pause.c
mv -f "$BIN/.pause.new" "$BIN/pause"
for b in $BINARIES; do  # a rename, so that a running binary is replaced, not overwritten
  install -m 0755 "$(find _output -type f -name "$b" | head -1)" "$BIN/.$b.new"
  mv -f "$BIN/.$b.new" "$BIN/$b"
done
echo "$BUILD" >"$BIN/BUILD"
"$BIN/kube-apiserver" --version
