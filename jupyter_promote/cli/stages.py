"""The stages one at a time: ``freeze`` a kernel's environment, ``convert`` a notebook, ``build`` the image."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from .context import CommandContext
from .request import image_request, monitor_settings
from .signals import say


def cmd_freeze(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..freeze import freeze, kernel_interpreter, python_interpreter

    interpreter = python_interpreter(args.python) if args.python else kernel_interpreter(args.kernel or "python3")
    env = freeze(interpreter, args.out, env_allowlist=tuple(ctx.settings.env_allowlist))
    for warning in env.lock["warnings"]:
        say(f"warning: {warning}")
    say(f"froze {interpreter.display}: {env.summary()} -> {env.lock_path}")
    if args.json:
        print(json.dumps(env.lock, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_convert(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..job.convert import convert, write_notebook
    from ..job.notebook import kernel_of, read_notebook

    nb = read_notebook(args.notebook)
    kernel_of(nb, args.notebook)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"-o {args.out}: directory {out.parent} does not exist", subject=args.out)
    result = convert(nb, monitor_settings(args), deterministic=args.deterministic)
    if not result.has_parameters_cell:
        say(f"note: {args.notebook} has no cell tagged 'parameters'; papermill will inject parameters at the top")
    write_notebook(result.notebook, str(out))
    injected = 3 if result.has_parameters_cell else 2  # setup, (seed,) finish
    say(f"wrote {out} ({result.code_cells} code cells, {injected} of them injected)")
    return EXIT_OK


def cmd_build(args: argparse.Namespace, ctx: CommandContext) -> int:
    import tempfile

    from ..freeze import freeze, kernel_interpreter, python_interpreter
    from ..image import ImageBuilder

    interpreter = python_interpreter(args.python) if args.python else kernel_interpreter(args.kernel or "python3")
    builder = ImageBuilder(config=ctx.config)
    with tempfile.TemporaryDirectory(prefix="promote-build-") as tmp:
        env = freeze(interpreter, os.path.join(tmp, "env"), env_allowlist=tuple(ctx.settings.env_allowlist))
        say(f"froze {interpreter.display}: {env.summary()}")
        if args.dry_run:
            plan = builder.plan(env, base_image=args.base_image, registry=args.registry)
            print(f"tag: {plan.tag}\nbase image: {plan.base_image}\nbuild context ({plan.context}):")
            for name in plan.files:
                print(f"  {name}")
            print("Dockerfile:\n" + plan.dockerfile, end="")
            return EXIT_OK
        ref = builder.ensure(env, interpreter, **dataclasses.asdict(image_request(args)), on_line=say)
    say(f"image {ref.ref}" + (f" ({ref.digest})" if ref.digest else ""))
    if args.json:
        print(json.dumps(ref.to_json(), indent=2, sort_keys=True))
    return EXIT_OK
