"""Jobs get their owner (who promoted them), their sweep, and the user whose server keeps them (a store a
hub's servers share shows each server its own user's jobs) as columns, filled from the stored records and,
for the server's user, with the user of the server that migrates (a store before this one was that user's
alone); the table of which server follows a job is named for what it holds.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from jupyter_promote.rundir import server_user

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("owner", sa.Text, nullable=False, server_default=""))
    op.add_column("jobs", sa.Column("sweep", sa.Text))
    op.add_column("jobs", sa.Column("server_user", sa.Text, nullable=False, server_default=""))
    op.create_index("jobs_by_sweep", "jobs", ["sweep"])
    op.create_index("jobs_by_server_user", "jobs", ["server_user", "created_at"])
    op.create_index("jobs_by_owner", "jobs", ["owner"])
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE jobs SET server_user = :user"), {"user": server_user()})
    rows = connection.execute(sa.text("SELECT id, record FROM jobs")).fetchall()
    for job_id, text in rows:
        record = json.loads(text)
        sweep = (record.get("sweep") or {}).get("id")
        connection.execute(
            sa.text("UPDATE jobs SET owner = :owner, sweep = :sweep WHERE id = :id"),
            {"owner": record.get("owner") or "", "sweep": sweep, "id": job_id},
        )
    op.rename_table("owners", "followers")
