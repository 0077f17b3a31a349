"""Notifications: a job's end and its alerts sent where people are (webhooks, Slack, Teams, email)."""

from .notifier import Notifier
from .settings import Notifications

__all__ = ["Notifications", "Notifier"]
