"""The rig's JupyterLab for galata: galata's settings, except the root directory, which stays the folder
the user started it in (scripts/rig-lab.sh), as for anyone who runs ``jupyter lab`` in a project folder."""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)
c.ServerApp.pop("root_dir", None)
c.ServerApp.pop("port", None)
