# jupyter-promote image for environment sha256:abababababababababababababababababababababababababababababababab (Python 3.11.7)
# rendered by jupyter_promote.image.recipe; no notebook content is ever part of it
# stage 1, built in parallel with the environment: the runner, in a venv of its own
FROM python:3.11.7-slim AS runner
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
COPY runner-requirements.txt /opt/promote/runner-requirements.txt
RUN --mount=type=secret,id=ca --mount=type=secret,id=pipconf --mount=type=cache,id=jupyter-promote-pip,target=/var/cache/promote-pip if python3 -m pip --version >/dev/null 2>&1; then pip='python3 -m pip'; else python3 -m venv /tmp/promote-pip && pip=/tmp/promote-pip/bin/pip; fi && python3 -m venv --without-pip /opt/promote/runner && PIP_CERT=/run/secrets/ca PIP_CONFIG_FILE=/run/secrets/pipconf $pip --python /opt/promote/runner/bin/python install --no-deps --disable-pip-version-check --cache-dir /var/cache/promote-pip -r /opt/promote/runner-requirements.txt && rm -rf /tmp/promote-pip
COPY runner/ /opt/promote/runner-src/
RUN /opt/promote/runner/bin/python -c "import site; open(site.getsitepackages()[0] + '/jupyter_promote.pth', 'w').write('/opt/promote/runner-src\n')" && mkdir -p /opt/promote/runner/share/jupyter/kernels/promote-frozen && cp /opt/promote/runner-src/kernel.json /opt/promote/runner/share/jupyter/kernels/promote-frozen/kernel.json
# stage 2, the image: base, system packages, the frozen environment, then the runner
FROM python:3.11.7-slim
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
# system packages
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
# the frozen environment: a venv that holds the lock's packages and nothing else
COPY requirements.lock.txt /opt/promote/lock/requirements.lock.txt
COPY wheels/ /opt/promote/lock/wheels/
RUN --mount=type=secret,id=ca --mount=type=secret,id=pipconf --mount=type=cache,id=jupyter-promote-pip,target=/var/cache/promote-pip if python3 -m pip --version >/dev/null 2>&1; then pip='python3 -m pip'; else python3 -m venv /tmp/promote-pip && pip=/tmp/promote-pip/bin/pip; fi && python3 -m venv --without-pip /opt/promote/env && PIP_CERT=/run/secrets/ca PIP_CONFIG_FILE=/run/secrets/pipconf $pip --python /opt/promote/env/bin/python install --no-deps --disable-pip-version-check --cache-dir /var/cache/promote-pip -r /opt/promote/lock/requirements.lock.txt && rm -rf /tmp/promote-pip
# the runner, apart from the frozen environment
COPY --from=runner /opt/promote/runner /opt/promote/runner
COPY --from=runner /opt/promote/runner-src /opt/promote/runner-src
ENV JUPYTER_PROMOTE_KERNEL=promote-frozen HOME=/tmp
CMD ["/opt/promote/runner/bin/python", "-m", "jupyter_promote.execute.runner", "--help"]
