"""REST handlers under ``/jupyter-promote/``: a thin layer that parses, calls and serializes."""

from __future__ import annotations

import json
from typing import Any

import tornado
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from .targets import load_target_classes

AUTH_RESOURCE = "jupyter_promote"


class PromoteHandler(APIHandler):
    auth_resource = AUTH_RESOURCE


class TargetsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    def get(self) -> None:
        targets: list[dict[str, Any]] = []
        for name, cls in load_target_classes().items():
            target = cls(config=self.config)
            ok, why = target.available()
            targets.append(
                {
                    "name": name,
                    "display_name": cls.display_name,
                    "available": ok,
                    "reason": why,
                    "options_schema": target.options_schema(),
                }
            )
        self.finish(json.dumps({"targets": targets}))


def setup_route_handlers(web_app: Any) -> None:
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base_url, "jupyter-promote", "targets"), TargetsHandler)])
