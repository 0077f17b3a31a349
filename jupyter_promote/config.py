"""Settings as traitlets, read from ``jupyter_promote_config.{py,json}`` and the command line."""

from __future__ import annotations

import os

from jupyter_core.application import JupyterApp
from jupyter_core.paths import jupyter_data_dir
from traitlets import Float, List, Unicode, default
from traitlets.config import Configurable

from .freeze import DEFAULT_ENV_ALLOWLIST
from .targets import load_target_classes


class PromoteSettings(Configurable):
    """Settings shared by the CLI and the server extension."""

    runs_dir = Unicode(help="Where run directories are created when --out is not given.").tag(config=True)
    default_target = Unicode("local", help="The target used when none is named.").tag(config=True)
    env_allowlist = List(
        Unicode(), default_value=list(DEFAULT_ENV_ALLOWLIST), help="Environment variables a freeze may record."
    ).tag(config=True)
    poll_interval = Float(0.1, help="Seconds between polls of a target while following a job.").tag(config=True)

    @default("runs_dir")
    def _default_runs_dir(self) -> str:
        return os.environ.get("JUPYTER_PROMOTE_RUNS_DIR") or os.path.join(jupyter_data_dir(), "promote", "runs")


class PromoteConfigApp(JupyterApp):
    """Loads configuration only: the CLI's own arguments are parsed by argparse."""

    name = "jupyter-promote"
    description = "Promote a notebook to a cluster job"

    @property
    def config_file_name(self) -> str:  # type: ignore[override]
        return "jupyter_promote_config"

    @default("classes")
    def _default_classes(self) -> list[type[Configurable]]:
        from .image import ImageBuilder

        return [PromoteSettings, ImageBuilder, *load_target_classes().values()]


def load_config(overrides: list[str]) -> PromoteConfigApp:
    """Config files from the Jupyter config path, then ``--Class.trait=value`` overrides."""
    app = PromoteConfigApp()
    app.initialize(overrides)
    return app
