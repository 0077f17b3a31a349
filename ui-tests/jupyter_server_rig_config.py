"""The rig's JupyterLab for galata: galata's settings, except the root directory, which stays the folder
the user started it in (scripts/rig-lab.sh), as for anyone who runs ``jupyter lab`` in a project folder."""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (c is the config object jupyter passes in)
c.ServerApp.pop("root_dir", None)  # noqa: F821
c.ServerApp.pop("port", None)  # noqa: F821 (given on the command line)
