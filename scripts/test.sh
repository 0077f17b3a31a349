#!/usr/bin/env bash
# Install everything, then run every test: Python (pytest, real kernels and papermill) and the
# frontend (Jest, browser_check, galata in chromium), against real kernels, a real Docker engine, a real registry, a real Slurm cluster, a real Ray head, a real Kubernetes control plane and a real PostgreSQL server. Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# the Kubernetes binaries take minutes to build from source: their toolchain and source first (apt-get, before
# the other installs), then the build in the background while everything else installs; k8s-up waits for it
bash scripts/k8s-build.sh fetch
bash scripts/k8s-build.sh >/tmp/promote-k8s-build.out 2>&1 &
kube_build=$!
bash scripts/setup.sh
# a real Docker engine (and docker-registry) and the offline base image for the Docker tests
bash scripts/docker-up.sh
bash scripts/base-image.sh
# a real one-node Slurm cluster (munged, slurmctld, slurmd) for the Slurm target's tests
bash scripts/slurm-up.sh
# a real one-node Ray cluster (its own user, a loopback-only network namespace) for the Ray target's tests
bash scripts/ray-up.sh
# a real Kubernetes cluster (kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet built from
# Debian's source, etcd, containerd, the cluster's registry) in a network namespace of its own
wait "$kube_build" || cat /tmp/promote-k8s-build.out  # k8s-up builds again, and says why, if it failed
bash scripts/k8s-up.sh
# a real PostgreSQL server on 127.0.0.1 for the job store's hub configuration (c.PromoteExtension.db_url)
bash scripts/postgres-up.sh
# a real S3-compatible server (moto's) on 127.0.0.1, reachable inside the Ray cluster's namespace, for --data
# and artifacts_url (after ray-up: it bridges into that namespace)
bash scripts/s3-up.sh
# the realistic rig: an unprivileged user with the built wheel in their own venv and their own kernel venv
bash scripts/rig.sh
export PATH="$(pwd)/.venv/bin:$PATH"
status=0
# the prebuilt labextension is shipped and enabled
labext=$(jupyter labextension list 2>&1)
echo "$labext" | grep "jupyter-promote" || true
grep -q "jupyter-promote .*enabled.*OK" <<<"$labext" || { echo "FAIL: the labextension is not enabled and OK"; status=1; }
serverext=$(jupyter server extension list 2>&1)
grep -q "jupyter_promote .*OK" <<<"$serverext" || { echo "FAIL: the server extension is not OK"; echo "$serverext"; status=1; }
# hygiene, as anyone can run it (settings in pyproject.toml and package.json)
lint() { echo "lint: $*"; "$@" || { echo "FAIL: $*"; status=1; }; }
lint ruff check jupyter_promote tests benchmarks ui-tests scripts
lint ruff format --check jupyter_promote tests benchmarks ui-tests scripts
lint mypy jupyter_promote
# the process boundary (kernel, job, submitter: the table in scripts/import_contract.py), and mypy as a regular install sees it
lint python scripts/import_contract.py
lint bash scripts/mypy-installed.sh
lint jlpm lint:check
python -m pytest --durations=30 "$@" || status=$?
# the frontend: Jest, jupyterlab.browser_check and the galata tests in a real browser
bash scripts/ui-tests.sh || status=1
exit $status
