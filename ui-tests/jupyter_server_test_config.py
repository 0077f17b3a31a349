"""The JupyterLab server of the UI tests: galata's settings, plus a job store and runs directory of its own."""

import os
from tempfile import mkdtemp

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)

c.ServerApp.allow_root = True
_state = mkdtemp(prefix="promote-ui-tests-")
c.PromoteExtension.store_path = os.path.join(_state, "jobs.sqlite")
c.PromoteSettings.runs_dir = os.path.join(_state, "runs")
# one notification destination, ticked by default in the dialog: nothing listens on port 9, and a delivery
# that fails is only logged and retried, never a reason for a job to fail
c.Notifications.destinations = {"hook": {"kind": "webhook", "url": "http://127.0.0.1:9/hook"}}
c.Notifications.defaults = ["hook"]
