"""Where notifications go: named destinations in the user's and the server's traitlets config.

A job names the destinations it notifies (``--notify NAME``, the dialog's choice); its record keeps the
names only. URLs and addresses live in the config, and the SMTP password in the environment or a file,
so no secret is ever written into job.json.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from traitlets import Dict, Enum, Float, Int, List, Unicode, default
from traitlets.config import Configurable

from ..errors import UsageError

#: What a destination can be told about: a job's end, by how it ended, and its alerts.
NOTIFY_ON = ("succeeded", "failed", "parity_failed", "cancelled", "alert")
DEFAULT_ON = ("succeeded", "failed", "parity_failed", "alert")
KINDS = ("webhook", "slack", "teams", "email")


@dataclass(frozen=True)
class Destination:
    """One named place: a webhook (JSON, Slack- or Teams-shaped) or email addresses."""

    name: str
    kind: str
    url: str | None = None
    to: tuple[str, ...] = ()
    on: tuple[str, ...] = DEFAULT_ON

    @classmethod
    def parse(cls, name: str, spec: Any) -> Destination:
        where = f"Notifications.destinations[{name!r}]"
        if not isinstance(spec, dict):
            raise UsageError(f"{where}: must be a dict like {{'kind': 'slack', 'url': 'https://...'}}", subject=name)
        kind = spec.get("kind", "webhook")
        if kind not in KINDS:
            raise UsageError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}", subject=name)
        on = tuple(spec.get("on", DEFAULT_ON))
        unknown = [o for o in on if o not in NOTIFY_ON]
        if unknown:
            raise UsageError(f"{where}: on {unknown[0]!r} is not one of {', '.join(NOTIFY_ON)}", subject=name)
        if kind == "email":
            to = spec.get("to")
            to = (to,) if isinstance(to, str) else tuple(to or ())
            if not to or not all(isinstance(a, str) and "@" in a for a in to):
                raise UsageError(f"{where}: email needs 'to', one address or a list of them", subject=name)
            return cls(name, kind, to=to, on=on)
        url = spec.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UsageError(f"{where}: {kind} needs an http(s) 'url'", subject=name)
        return cls(name, kind, url=url, on=on)


class Notifications(Configurable):
    """Where a job's end and its alerts are sent, in ``jupyter_promote_config.py`` (the user's, for the CLI
    and their own server; the server's, for everyone on it).

    Example::

        c.Notifications.destinations = {
            "team": {"kind": "slack", "url": "https://hooks.slack.com/services/..."},
            "me": {"kind": "email", "to": "me@example.org", "on": ["failed", "parity_failed", "alert"]},
        }
        c.Notifications.defaults = ["me"]
        c.Notifications.smtp_host = "smtp.example.org"
    """

    destinations = Dict(
        help="Named destinations: name -> {'kind': webhook|slack|teams|email, 'url' (webhooks) or 'to' (email), "
        "'on': what to send, of succeeded, failed, parity_failed, cancelled, alert (default: all but cancelled)}."
    ).tag(config=True)
    defaults = List(Unicode(), help="The destinations a job notifies when it names none.").tag(config=True)
    smtp_host = Unicode("localhost", help="The SMTP server for email destinations.").tag(config=True)
    smtp_port = Int(0, help="Its port; 0: 465 with smtp_security='ssl', else 25.").tag(config=True)
    smtp_security = Enum(
        ["starttls", "ssl", "none"], "starttls", help="STARTTLS (default), implicit TLS, or none (a local relay only)."
    ).tag(config=True)
    smtp_ca_file = Unicode("", help="CA bundle to verify the SMTP server's certificate with; empty: the system's.").tag(
        config=True
    )
    smtp_user = Unicode("", help="SMTP login; empty: no login.").tag(config=True)
    smtp_password_env = Unicode(
        "JUPYTER_PROMOTE_SMTP_PASSWORD", help="The environment variable holding the SMTP password."
    ).tag(config=True)
    smtp_password_file = Unicode("", help="A file holding the SMTP password (read when the variable is unset).").tag(
        config=True
    )
    email_from = Unicode(help="The From address of notification email.").tag(config=True)
    retries = Int(3, help="Attempts after the first when a destination fails.").tag(config=True)
    retry_delay_s = Float(2.0, help="Seconds before the first retry; doubled each time.").tag(config=True)
    timeout_s = Float(10.0, help="Seconds one delivery may take.").tag(config=True)

    @default("email_from")
    def _default_from(self) -> str:
        return f"jupyter-promote@{socket.getfqdn()}"

    def parsed(self) -> dict[str, Destination]:
        return {name: Destination.parse(name, spec) for name, spec in self.destinations.items()}

    def choose(self, names: list[str] | None) -> list[str]:
        """The destinations a job notifies: ``names`` as asked (``[]``: none), or the defaults; each known."""
        chosen = list(self.defaults) if names is None else [n for n in names if n != "none"]
        known = self.parsed()
        for name in chosen:
            if name not in known:
                offered = ", ".join(sorted(known)) or "none are configured (c.Notifications.destinations)"
                raise UsageError(
                    f"notify: {name!r} is not a destination; known: {offered}", subject=name, field="notify"
                )
        return chosen

    def smtp_password(self) -> str | None:
        password = os.environ.get(self.smtp_password_env) if self.smtp_password_env else None
        if password is None and self.smtp_password_file:
            with open(os.path.expanduser(self.smtp_password_file)) as f:
                password = f.read().strip()
        return password
