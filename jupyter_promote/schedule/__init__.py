"""Schedules: a stored job request fired by the server at each due time of a cron expression in a time zone
(:mod:`.model` what one is, :mod:`.create` a request made into one, :mod:`.store` its rows, :mod:`.scheduler`
the server's ticks)."""

from .model import FREEZE_MODES, MISSED_POLICIES, OVERLAP_POLICIES, Schedule, ScheduleExists, ScheduleNotFound

__all__ = ["FREEZE_MODES", "MISSED_POLICIES", "OVERLAP_POLICIES", "Schedule", "ScheduleExists", "ScheduleNotFound"]
