"""The job store's schema, as Alembic migrations: a store written by an older version is upgraded in place at
the server's start, its jobs kept.

``versions/`` holds one revision per schema change. A store from before the migrations (the first schema,
created by ``CREATE TABLE IF NOT EXISTS``) is stamped as revision ``0001`` and upgraded from there. A new
revision: ``alembic -c <config naming this folder as script_location> revision -m "what changes"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
#: The revision of the schema before migrations existed (jupyter-promote 0.1's store).
FIRST = "0001"


def upgrade(engine: Any) -> None:
    """Bring the store's schema to the newest revision (created from nothing when the store is new)."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    config = Config()
    config.set_main_option("script_location", str(HERE))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        tables = set(inspect(connection).get_table_names())
        if "jobs" in tables and "alembic_version" not in tables:  # a store from before the migrations
            command.stamp(config, FIRST)
        command.upgrade(config, "head")


def revision(engine: Any) -> str | None:
    """The store's schema revision now (None: not created yet)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
