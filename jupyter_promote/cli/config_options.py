"""``--Class.trait=value`` in the command line's grammar: one argparse option per setting ``--help-all`` lists.

The grammar knows every setting by name (from the traitlets classes themselves), so argparse splits them from
the command's own options, in either spelling (``--C.t=v`` or ``--C.t v``) and before or after the command;
what they mean is left to traitlets: :func:`config_argv` gives them back as ``--C.t=v`` for
:func:`jupyter_promote.config.load_config`, which reads them with traitlets' own loader.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from traitlets import Container, Dict
from traitlets.config import Configurable

#: Where the settings given before the command and after it are kept apart: argparse replaces the namespace
#: attributes a subcommand's parser sets, so one list would lose those given before the command.
_BEFORE, _AFTER = "config_before_command", "config_after_command"


class _ConfigOption(argparse.Action):
    """One ``--Class.trait``: each value is kept, in order, as ``--Class.trait=value`` for traitlets."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        given.append(f"{self.option_strings[0]}={values}")
        setattr(namespace, self.dest, given)


def add_config_options(
    parser: argparse.ArgumentParser, classes: Iterable[type[Configurable]], before_command: bool = False
) -> None:
    """One option per configurable trait of ``classes`` (hidden from the command's own help: ``--help-all``
    lists them); a container trait (list, dict) may be given several times, one item each, as traitlets takes it."""
    dest = _BEFORE if before_command else _AFTER
    for cls in classes:
        for name, trait in sorted(cls.class_traits(config=True).items()):
            container = isinstance(trait, (Container, Dict))
            parser.add_argument(
                f"--{cls.__name__}.{name}",
                action=_ConfigOption,
                dest=dest,
                default=argparse.SUPPRESS,
                metavar="VALUE" if not container else "ITEM",
                help=argparse.SUPPRESS,
            )


def config_argv(args: argparse.Namespace) -> list[str]:
    """The settings the command line gave, as ``--Class.trait=value``, in order (before the command first)."""
    return [*getattr(args, _BEFORE, []), *getattr(args, _AFTER, [])]
