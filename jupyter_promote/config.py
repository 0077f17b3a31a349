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

    secrets = Dict(
        value_trait=Unicode(),
        help='Secrets every job gets, by reference: variable -> source, e.g. {"HF_TOKEN": "env:HF_TOKEN", '
        '"DB_PASSWORD": "file:/home/me/.db-password", "WANDB_API_KEY": "kubernetes:wandb/api-key"}; a request\'s '
        "own (--secret) override them. Values are read when a job is submitted and never stored.",
    ).tag(config=True)

    artifacts_url = Unicode(
        "",
        help="Storage the cluster reads and writes (s3://bucket/prefix) where a job whose target shares no "
        "filesystem with this machine (Ray, Kubernetes) puts its outputs and checkpoints (URL/JOB_ID/work, "
        "/checkpoints): brought back into the run directory when it ends, and its checkpoints back to a later "
        "attempt. Empty: only what the target's channel carries comes back.",
    ).tag(config=True)
    storage_options = Dict(
        help='fsspec\'s options for that storage and for --data inputs, e.g. {"client_kwargs": {"endpoint_url": '
        '"http://minio.internal:9000"}}; never credentials: give those as secrets (AWS_ACCESS_KEY_ID, ...).'
    ).tag(config=True)

    retry_backoff_s = Float(
        5.0,
        min=0.0,
        help="Seconds before a job asking for --retries is started again after an infrastructure failure "
        "(preempted, evicted, its node or its target lost); doubled for each attempt after the second, at most 300.",
    ).tag(config=True)

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


#: Classes whose settings live in the same file but which the CLI does not use, by import path: loaded only
#: where every setting is shown or named (``--help-all``, ``--generate-config``, a ``--PromoteExtension.x=`` on
#: the command line, the reference); importing the server extension costs jupyter_server, two seconds or more.
SERVER_SETTINGS = ("jupyter_promote.server.app:PromoteExtension",)


def server_settings_classes() -> list[type[Configurable]]:
    """The classes of :data:`SERVER_SETTINGS`, imported now."""
    from importlib import import_module

    found: list[type[Configurable]] = []
    for path in SERVER_SETTINGS:
        module, _, name = path.partition(":")
        found.append(getattr(import_module(module), name))
    return found


def server_settings_names() -> frozenset[str]:
    """The names of the server's settings classes and of their parent ``ExtensionApp`` (as ``--help-all`` lists
    them), without importing them: the names a command line sets one of them with."""
    return frozenset({"ExtensionApp", *(path.rpartition(":")[2] for path in SERVER_SETTINGS)})


class PromoteConfigApp(JupyterApp):
    """Loads configuration only: the CLI's own arguments are parsed by its argparse grammar, which takes every
    ``--Class.trait=value`` of :meth:`config_classes` and hands them back here (``load_config``)."""

    name = "jupyter-promote"
    description = "Promote a notebook to a cluster job"

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
        # plugins are loaded only when a CLI runs
        from .image import ImageBuilder
        from .notify import Notifications
        from .tracking import MlflowExport

        self.classes = [PromoteSettings, ImageBuilder, Notifications, MlflowExport, *load_target_classes().values()]

    def with_server_settings(self) -> PromoteConfigApp:
        """Add the server extension's settings (for --help-all, --generate-config and the reference)."""
        self.classes = [self.classes[0], *server_settings_classes(), *self.classes[1:]]
        return self

    def load(self, overrides: list[str]) -> None:
        """:meth:`initialize`: the configuration files, then ``overrides`` (``--Class.trait=value``); a value a
        setting refuses is one line (a :class:`UsageError`), where traitlets would log it and exit 1."""
        import inspect

        from traitlets import TraitError
        from traitlets.config.loader import ArgumentError

        try:
            inspect.unwrap(JupyterApp.initialize)(self, overrides)
        except (TraitError, ArgumentError, ValueError) as exc:
            raise UsageError(" ".join(f"configuration: {exc}".split()), subject="configuration") from None

    def parse_command_line(self, argv: Any = None) -> None:
        """traitlets' own, without its guard that logs a refused value and exits 1: :meth:`load` says it."""
        import inspect

        inspect.unwrap(JupyterApp.parse_command_line)(self, argv)

    def config_classes(self) -> list[type[Configurable]]:
        """Every class whose settings the command line takes: the CLI's, their parents, the application's own
        (``Application``, ``JupyterApp``) and, once added, the server extension's."""
        return list(self._classes_with_config_traits([JupyterApp, *self.classes]))


def load_config(overrides: list[str], server_settings: bool = False) -> PromoteConfigApp:
    """Config files from the Jupyter config path, then ``--Class.trait=value`` overrides (read by traitlets)."""
    app = PromoteConfigApp()
    if server_settings:
        app.with_server_settings()
    app.load(overrides)
    return app
