# jupyter-promote image for environment sha256:abababababababababababababababababababababababababababababababab (Python 3.11.7)
# rendered by jupyter_promote.image.recipe; no notebook content is ever part of it
# stage 1, built in parallel with the environment: the runner, in a venv of its own
FROM jupyter-promote/base:bookworm AS runner
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
RUN python3 -m venv /opt/promote/runner
COPY runner-requirements.txt /opt/promote/runner-requirements.txt
RUN --mount=type=bind,source=wheelhouse,target=/tmp/wheelhouse /opt/promote/runner/bin/pip install --no-deps --no-cache-dir --disable-pip-version-check --no-index --find-links /tmp/wheelhouse -r /opt/promote/runner-requirements.txt
COPY runner/ /opt/promote/runner-src/
RUN /opt/promote/runner/bin/python -c "import site; open(site.getsitepackages()[0] + '/jupyter_promote.pth', 'w').write('/opt/promote/runner-src\n')" && mkdir -p /opt/promote/runner/share/jupyter/kernels/promote-frozen && cp /opt/promote/runner-src/kernel.json /opt/promote/runner/share/jupyter/kernels/promote-frozen/kernel.json
# stage 2, the image: base, system packages, the frozen environment, then the runner
FROM jupyter-promote/base:bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# the frozen environment: a venv that holds the lock's packages and nothing else
RUN python3 -m venv /opt/promote/tools && python3 -m venv --without-pip /opt/promote/env
COPY requirements.lock.txt /opt/promote/lock/requirements.lock.txt
RUN --mount=type=bind,source=wheelhouse,target=/tmp/wheelhouse /opt/promote/tools/bin/pip --python /opt/promote/env/bin/python install --no-deps --no-cache-dir --disable-pip-version-check --no-index --find-links /tmp/wheelhouse -r /opt/promote/lock/requirements.lock.txt
# the runner, apart from the frozen environment
COPY --from=runner /opt/promote/runner /opt/promote/runner
COPY --from=runner /opt/promote/runner-src /opt/promote/runner-src
ENV JUPYTER_PROMOTE_KERNEL=promote-frozen HOME=/tmp
CMD ["/opt/promote/runner/bin/python", "-m", "jupyter_promote.execute.runner", "--help"]
