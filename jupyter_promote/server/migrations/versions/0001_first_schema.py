"""The first schema: jobs, their events by seq, their state transitions, and which server follows each.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("run_dir", sa.Text),
        sa.Column("notebook", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("record", sa.Text, nullable=False),
    )
    op.create_index("jobs_by_state", "jobs", ["state"])
    op.create_index("jobs_by_created", "jobs", ["created_at"])
    op.create_table(
        "events",
        sa.Column("job", sa.Text, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_table("owners", sa.Column("job", sa.Text, primary_key=True), sa.Column("server", sa.Text, nullable=False))
    op.create_table(
        "transitions",
        sa.Column("job", sa.Text, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("ts", sa.Float),
    )
