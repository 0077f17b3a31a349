#!/usr/bin/env bash
# The realistic rig: jupyter-promote as a user has it. Run as root (it creates the account); idempotent.
#
#   - an unprivileged account (promote-user), a member of the docker group, with a project folder below
#     its home directory whose name has a space and non-ASCII characters;
#   - the package installed from the built wheel with pip into that user's own virtualenv
#     (~/.venvs/jupyter: jupyter-promote[docker] + JupyterLab), not editable, no test extras;
#   - the notebook's kernel in a separate virtualenv (~/.venvs/project-kernel, Debian's Python 3.11),
#     registered as the user's own kernelspec "project-kernel";
#   - the user's jupyter_promote_config.py naming the offline base image (no image can be pulled here);
#   - the user's ~/.kube/config for the cluster scripts/k8s-up.sh starts (namespace promote), and in their
#     settings that cluster's registry (its node pulls the images pushed there with --push, by digest).
#
# Needs scripts/setup.sh (the build tools), scripts/docker-up.sh, scripts/base-image.sh and
# scripts/slurm-up.sh first (and scripts/ray-up.sh, scripts/k8s-up.sh for those targets). Prints the wheel it installed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
RIG_USER=${PROMOTE_RIG_USER:-promote-user}
RIG_DIR=${PROMOTE_RIG_DIR:-/opt/promote-rig}
BASE_IMAGE=${PROMOTE_TEST_BASE_IMAGE:-jupyter-promote/base:bookworm}
if [ "$(id -u)" != 0 ]; then echo "rig: needs root (it creates the account $RIG_USER)" >&2; exit 1; fi

# the account
if ! id "$RIG_USER" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash "$RIG_USER"
fi
getent group docker >/dev/null && usermod -aG docker "$RIG_USER"
home=$(getent passwd "$RIG_USER" | cut -d: -f6)
as_user() { runuser -l "$RIG_USER" -c "$1"; }

# the wheel, built as a release builds it (the frontend with jlpm build:prod, then pip wheel)
export PATH="$root/.venv/bin:$PATH"
echo "rig: building the wheel"
jlpm build:prod >"$RIG_DIR.build.log" 2>&1 || { tail -30 "$RIG_DIR.build.log"; exit 1; }
rm -rf "$RIG_DIR/dist" && mkdir -p "$RIG_DIR/dist"
python -m pip wheel "$root" --no-deps --quiet -w "$RIG_DIR/dist" >>"$RIG_DIR.build.log" 2>&1 || { tail -30 "$RIG_DIR.build.log"; exit 1; }
chmod -R a+rX "$RIG_DIR"
wheel=$(ls "$RIG_DIR"/dist/jupyter_promote-*.whl)

# the user's Jupyter environment: pip install from the wheel (its dependencies from the index, as for anyone)
echo "rig: installing $(basename "$wheel") into ~$RIG_USER/.venvs/jupyter"
as_user "test -x ~/.venvs/jupyter/bin/python || python3 -m venv ~/.venvs/jupyter"
# (the Ray client at the version of the cluster scripts/ray-up.sh starts, as a site tells its users)
as_user "~/.venvs/jupyter/bin/pip install --quiet '$wheel[docker,ray,kubernetes]' 'ray[default]==2.60.0' 'jupyterlab>=4,<5'"
as_user "~/.venvs/jupyter/bin/pip install --quiet --force-reinstall --no-deps '$wheel'"

# the kernel's own environment and kernelspec (the server's environment is not the kernel's)
if ! as_user "test -f ~/.venvs/project-kernel/.complete"; then
  echo "rig: the kernel's environment ~$RIG_USER/.venvs/project-kernel"
  as_user "python3 -m venv --clear ~/.venvs/project-kernel && ~/.venvs/project-kernel/bin/pip install --quiet ipykernel && touch ~/.venvs/project-kernel/.complete"
fi
as_user "~/.venvs/project-kernel/bin/python -m ipykernel install --user --name project-kernel --display-name 'Project (venv)' >/dev/null"

# the user's settings: one file for the CLI and the server
as_user "mkdir -p ~/.jupyter && cat > ~/.jupyter/jupyter_promote_config.py" <<EOF
# written by jupyter-promote's scripts/rig.sh: no image can be pulled on this machine
c.ImageBuilder.base_image = "$BASE_IMAGE"
EOF
# the Kubernetes cluster's registry, as a site names it to its users (scripts/k8s-up.sh)
if [ -f /etc/promote-kube/registry ]; then
  as_user "cat >> ~/.jupyter/jupyter_promote_config.py" <<EOF
c.ImageBuilder.registry = "$(cat /etc/promote-kube/registry)/promote"
EOF
fi
# the user's Kubernetes credentials, as a cluster's admin hands them out (scripts/k8s-up.sh)
if [ -f /etc/promote-kube/user.kubeconfig ]; then
  install -d -o "$RIG_USER" -g "$(id -gn "$RIG_USER")" -m 0700 "$home/.kube"
  install -o "$RIG_USER" -g "$(id -gn "$RIG_USER")" -m 0600 /etc/promote-kube/user.kubeconfig "$home/.kube/config"
fi
echo "rig: ready: $RIG_USER ($home) with $(basename "$wheel")"
