"""What a notification says: one subject line and a few lines of facts, shaped for each kind of destination."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

#: Slack's control characters in message text (``<!channel>``, ``<http://evil|click>``): escaped as Slack asks.
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
#: Markdown that makes links in an Adaptive Card (``[click](http://evil)``, ``<http://evil>``): backslash-escaped.
_CARD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\[]<>"})


def slack_text(text: str) -> str:
    """``text`` as Slack shows it literally: no mention, no channel ping, no link in disguise."""
    return text.translate(_SLACK_ESCAPES)


def card_text(text: str) -> str:
    """``text`` as an Adaptive Card (Teams) shows it literally: no link in disguise."""
    return text.translate(_CARD_ESCAPES)


COLOURS = {
    "succeeded": "good",
    "failed": "attention",
    "parity_failed": "warning",
    "cancelled": "default",
    "alert": "warning",
}


@dataclass
class Notice:
    """One thing to tell: ``what`` is a key of NOTIFY_ON; ``job`` the job's record as job.json has it."""

    what: str
    job: dict[str, Any]
    alert: dict[str, Any] | None = None
    run_dir: str | None = None
    at: float = field(default_factory=time.time)

    @property
    def subject(self) -> str:
        job = self.job
        name = f"{Path(job.get('notebook', '?')).name} ({job.get('id', '?')}) on {job.get('target', '?')}"
        if self.what == "alert":
            assert self.alert is not None
            return f"jupyter-promote: {self.alert.get('kind')} alert in {name}"
        if self.what == "parity_failed":
            return f"jupyter-promote: {name} succeeded but its parity check failed"
        how = f" ({job['reason']})" if self.what == "failed" and job.get("reason") else ""
        return f"jupyter-promote: {name} {self.what}{how}"

    def facts(self) -> list[tuple[str, str]]:
        job, facts = self.job, []
        if self.alert is not None:
            facts.append(("alert", str(self.alert.get("message", ""))))
        elif job.get("message"):
            facts.append(("message", str(job["message"])))
        facts.append(("state", str(job.get("state"))))
        if job.get("started_at") and job.get("finished_at"):
            facts.append(("ran", f"{job['finished_at'] - job['started_at']:.0f} s"))
        parity = job.get("parity") or {}
        if parity.get("verdict"):
            failed = f" ({', '.join(parity.get('failed') or [])})" if parity.get("failed") else ""
            facts.append(("parity", f"{parity['verdict']}{failed}"))
        metrics = job.get("metrics") or {}
        if metrics:
            facts.append(("metrics", ", ".join(f"{k}={v}" for k, v in list(metrics.items())[:8])))
        if self.run_dir:
            facts.append(("run directory", self.run_dir))
            report = Path(self.run_dir) / "report.html"  # written as the job ended, before anyone is told
            if self.alert is None and report.is_file():
                facts.append(("report", str(report)))
        return facts

    @property
    def text(self) -> str:
        return "\n".join([self.subject, *(f"{k}: {v}" for k, v in self.facts())])

    def payload(self, kind: str) -> dict[str, Any]:
        """The JSON body for a webhook of ``kind``: our own, Slack's incoming webhook, a Teams workflow."""
        if kind == "slack":
            subject = slack_text(self.subject)
            lines = "\n".join(f"*{slack_text(k)}*: {slack_text(v)}" for k, v in self.facts())
            return {
                "text": subject,
                "blocks": [
                    {"type": "section", "text": {"type": "mrkdwn", "text": f"*{subject}*"}},
                    {"type": "section", "text": {"type": "mrkdwn", "text": lines}},
                ],
            }
        if (
            kind == "teams"
        ):  # an Adaptive Card, as Teams' workflows ("Post to a channel when a webhook request is received") take it
            card = {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {
                        "type": "TextBlock",
                        "text": card_text(self.subject),
                        "weight": "Bolder",
                        "wrap": True,
                        "color": COLOURS.get(self.what, "default"),
                    },
                    {
                        "type": "FactSet",
                        "facts": [{"title": card_text(k), "value": card_text(v)} for k, v in self.facts()],
                    },
                ],
            }
            return {
                "type": "message",
                "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
            }
        return {
            "event": self.what,
            "subject": self.subject,
            "text": self.text,
            "job": self.job,
            "alert": self.alert,
            "run_dir": self.run_dir,
            "at": round(self.at, 3),
        }

    def email(self, sender: str, to: tuple[str, ...]) -> EmailMessage:
        message = EmailMessage()
        message["Subject"], message["From"], message["To"] = self.subject, sender, ", ".join(to)
        message.set_content(self.text + "\n")
        return message
