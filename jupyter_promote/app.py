"""The jupyter_server extension: settings and the REST routes under ``/jupyter-promote/``."""

from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp

from .config import PromoteSettings
from .routes import setup_route_handlers


class PromoteExtension(ExtensionApp):
    name = "jupyter_promote"
    classes = [PromoteSettings]  # noqa: RUF012

    def initialize_settings(self) -> None:
        self.settings.update({"jupyter_promote_settings": PromoteSettings(config=self.config)})

    def initialize_handlers(self) -> None:
        setup_route_handlers(self.serverapp.web_app)
