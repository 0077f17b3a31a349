"""Schedules: a stored job request with a cron expression and a time zone, fired by the server (see
:mod:`jupyter_promote.schedule`); a job fired by one names it in the new ``schedule`` column of its row.

Due times are whole seconds since the epoch (``last_fired`` is compared and set in one statement: of two
servers on one store, exactly one claims a due time); a schedule's name is unique per server user. A schedule's
``freeze`` is the column ``freeze_mode`` (FREEZE is a reserved word of PostgreSQL).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("server_user", sa.Text, nullable=False, server_default=""),
        sa.Column("owner", sa.Text, nullable=False, server_default=""),
        sa.Column("notebook", sa.Text, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("cron", sa.Text, nullable=False),
        sa.Column("timezone", sa.Text, nullable=False),
        sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("missed", sa.Text, nullable=False, server_default="latest"),
        sa.Column("overlap", sa.Text, nullable=False, server_default="skip"),
        sa.Column("freeze_mode", sa.Text, nullable=False, server_default="once"),
        sa.Column("frozen", sa.Text, nullable=False, server_default="{}"),
        sa.Column("frozen_notebook", sa.Text),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("next_due", sa.BigInteger),
        sa.Column("last_fired", sa.BigInteger, nullable=False),
        sa.Column("queued", sa.BigInteger),
        sa.Column("run_now", sa.BigInteger),
        sa.Column("skipped", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_job", sa.Text),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.UniqueConstraint("server_user", "name", name="schedules_unique_name"),
    )
    op.add_column("jobs", sa.Column("schedule", sa.Text))
    op.create_index("jobs_by_schedule", "jobs", ["schedule", "state"])
