"""Settings as traitlets, read from ``jupyter_promote_config.{py,json}`` and the command line."""

from __future__ import annotations

import os
from typing import Any

from jupyter_core.application import JupyterApp
from jupyter_core.paths import jupyter_data_dir
from traitlets import Dict, Float, List, Unicode, default, validate
from traitlets.config import Configurable

from .errors import UsageError
from .freeze import DEFAULT_ENV_ALLOWLIST
from .models import MonitorSettings, Resources
from .targets import load_target_classes


class PromoteSettings(Configurable):
    """Settings shared by the CLI and the server extension."""

    runs_dir = Unicode(help="Where run directories are created when --out is not given.").tag(config=True)
    default_target = Unicode("local", help="The target used when none is named.").tag(config=True)
    retention = Unicode(
        "",
        help="Finished jobs that ended longer ago than this (e.g. '90d', '12w') are removed with their run "
        "directories: by the server, at its start and every hour, and by `jupyter promote prune` as its default "
        "age. Running jobs never. Empty: kept until pruned.",
    ).tag(config=True)
    env_allowlist = List(
        Unicode(),
        default_value=list(DEFAULT_ENV_ALLOWLIST),
        help="Environment variables a freeze may record and a job carries, added to the defaults (thread counts, "
        "CUDA and PyTorch settings, PYTHONHASHSEED, locale).",
    ).tag(config=True)

    @validate("env_allowlist")
    def _extend_env_allowlist(self, proposal: Any) -> list[str]:
        """Names given (config file or command line) extend the defaults: naming one never drops the others."""
        return list(dict.fromkeys([*DEFAULT_ENV_ALLOWLIST, *proposal["value"]]))

    poll_interval = Float(0.1, help="Seconds between polls of a target while following a job.").tag(config=True)
    enabled_targets = List(Unicode(), help="Targets offered to users (by name); empty: every installed target.").tag(
        config=True
    )
    default_resources = Dict(
        help='Resources a job gets when its request names none, e.g. {"cpus": 2, "memory": "4G", "time": "2h"}.'
    ).tag(config=True)
    monitor_defaults = Dict(
        help='Monitor settings a job gets when its request names none, e.g. {"stall_timeout_s": 300, "nan_action": "alert"}.'
    ).tag(config=True)

    parity_tolerance = Dict(
        help='Tolerance per metric where the notebook declares none: a number (absolute) or {"abs": A, "rel": R}, '
        'e.g. {"accuracy": 0.01, "loss": {"rel": 0.05}}. Undeclared metrics must match exactly.'
    ).tag(config=True)

    def resources(self, given: dict[str, Any]) -> Resources:
        """``given`` resources (cpus, memory, gpus, time; None = not given) over ``default_resources``."""
        merged = {**self.default_resources, **{k: v for k, v in given.items() if v is not None}}
        unknown = sorted(set(merged) - {"cpus", "memory", "gpus", "time"})
        if unknown:
            raise UsageError(f"{unknown[0]}: unknown resource (cpus, memory, gpus, time)", subject="resources")
        return Resources.parse(**merged)

    def monitor(self, given: dict[str, Any]) -> MonitorSettings:
        """``given`` monitor settings over ``monitor_defaults``."""
        merged = {**self.monitor_defaults, **given}
        unknown = sorted(set(merged) - set(MonitorSettings.__dataclass_fields__))
        if unknown:
            raise UsageError(f"{unknown[0]}: unknown monitor setting", subject="monitor")
        return MonitorSettings(**merged).checked()

    def target_names(self) -> list[str]:
        """The targets offered: the enabled ones that are installed, or every installed one."""
        installed = load_target_classes()
        return [n for n in self.enabled_targets if n in installed] if self.enabled_targets else list(installed)

    @default("runs_dir")
    def _default_runs_dir(self) -> str:
        return os.environ.get("JUPYTER_PROMOTE_RUNS_DIR") or os.path.join(jupyter_data_dir(), "promote", "runs")


class PromoteConfigApp(JupyterApp):
    """Loads configuration only: the CLI's own arguments are parsed by argparse."""

    name = "jupyter-promote"
    description = "Promote a notebook to a cluster job"
    settings: PromoteSettings  # read from the loaded config by the CLI

    @property
    def config_file_name(self) -> str:  # type: ignore[override]
        return "jupyter_promote_config"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # what --help-all offers is what the command line takes: --generate-config [-y] and --Class.trait=value
        # (JupyterApp's --debug, --log-level, --config and --show-config are not the CLI's: argparse refuses them)
        self.flags = {name: flag for name, flag in self.flags.items() if name in ("generate-config", "y")}
        self.aliases = {}
        # Application.classes is a plain class attribute, not a trait: set per instance, so that the target
        # plugins are loaded only when a CLI runs. The server extension's class is added only where its
        # settings are shown (--help-all, --generate-config): importing jupyter_server costs a second or more.
        from .image import ImageBuilder
        from .notify import Notifications
        from .tracking import MlflowExport

        self.classes = [PromoteSettings, ImageBuilder, Notifications, MlflowExport, *load_target_classes().values()]

    def with_server_settings(self) -> PromoteConfigApp:
        """Add the server extension's settings (for --help-all, --generate-config and the reference)."""
        from .server.app import PromoteExtension

        self.classes = [self.classes[0], PromoteExtension, *self.classes[1:]]
        return self


def load_config(overrides: list[str]) -> PromoteConfigApp:
    """Config files from the Jupyter config path, then ``--Class.trait=value`` overrides."""
    app = PromoteConfigApp()
    app.initialize(overrides)
    return app
