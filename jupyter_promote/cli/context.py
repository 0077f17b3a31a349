"""What every command is given besides its arguments: the settings, the configuration and the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from traitlets.config import Config

from ..config import PromoteSettings


class GroupAnnouncer(Protocol):
    """Told by a detached sweep's own process what its starter waits for (see :mod:`.detached`)."""

    group_id: str

    def running(self, folder: Path) -> None:
        """The sweep's tasks are prepared in ``folder``; its starter may return."""


@dataclass
class CommandContext:
    """A command's world: read once by ``main`` from the configuration files and ``--Class.trait=value``.

    ``argv`` is the command line as given (a detached sweep runs the same command again); ``detached`` is set
    only in a detached sweep's own process, which announces its group through it.
    """

    settings: PromoteSettings
    config: Config
    argv: list[str] = field(default_factory=list)
    detached: GroupAnnouncer | None = None

    @property
    def runs_dir(self) -> str:
        """This user's runs directory."""
        return str(self.settings.runs_dir)


#: A command: its parsed arguments and its context in, its exit code out.
Command = Callable[[argparse.Namespace, CommandContext], int]
