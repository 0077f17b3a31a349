"""The JupyterLab server of the UI tests: galata's settings, plus a job store and runs directory of its own."""

import os
from tempfile import mkdtemp

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (c is the config object jupyter passes in)

c.ServerApp.allow_root = True  # noqa: F821 (CI runs as root)
_state = mkdtemp(prefix="promote-ui-tests-")
c.PromoteExtension.store_path = os.path.join(_state, "jobs.sqlite")  # noqa: F821
c.PromoteSettings.runs_dir = os.path.join(_state, "runs")  # noqa: F821
