"""Every flag the help lists is one the command line takes: each setting of ``jupyter promote --help-all`` (in
both spellings, before or after the command) and each option of each command's ``--help``."""

from __future__ import annotations

import argparse
import io
import re

import pytest
from conftest import CLI

from jupyter_promote.cli.main import main
from jupyter_promote.cli.parser import build_parser
from jupyter_promote.config import PromoteConfigApp

#: A value each kind of setting takes, by the type --help-all names; Enum: its first choice.
SAMPLES = {"Unicode": "x", "Bool": "False", "Int": "1", "Float": "1.5", "list-item-1": "a", "key-1": "k=v"}
#: Settings whose value must mean something to be taken
SAMPLES_BY_NAME = {"log_format": "%(message)s", "log_datefmt": "%H:%M"}


def help_all_settings(text: str) -> list[tuple[str, str]]:
    """``(--Class.trait, value)`` for each class option --help-all lists, a value of its type."""
    found = []
    for block in re.split(r"\n(?=--)", text.partition("Class options")[2]):
        head = re.match(r"--(\w+)\.(\w+)=<([\w-]+)>", block)
        if not head:
            continue
        cls, name, kind = head.groups()
        if kind == "Enum":
            value = re.search(r"Choices: any of \[([^\]]+)\]", block).group(1).split(",")[0].strip().strip("'")
        else:
            value = SAMPLES_BY_NAME.get(name, SAMPLES[kind])
        found.append((f"--{cls}.{name}", value))
    return found


@pytest.fixture
def quiet_home(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path


def test_every_setting_help_all_lists_is_taken_in_both_spellings(quiet_home, capsys):
    # Given every setting --help-all lists (the server extension's included)
    done = CLI(quiet_home)("--help-all")
    assert done.returncode == 0, done.stderr
    settings = help_all_settings(done.stdout)
    assert len(settings) > 100 and ("--PromoteExtension.store_path", "x") in settings
    assert {"--ImageBuilder.base_image", "--SlurmTarget.partition", "--JupyterApp.log_level"} <= dict(settings).keys()
    # Then each is taken, as --C.t=v before the command and as --C.t v after it, never refused with exit 2
    refused = []
    for option, value in settings:
        for argv in ([f"{option}={value}", "status"], ["status", option, value]):
            code = main(argv)
            if code != 0:
                refused.append((argv, code, capsys.readouterr().err))
    assert refused == []


def test_a_setting_given_on_the_command_line_reaches_the_command(quiet_home, capsys):
    elsewhere = quiet_home / "elsewhere"
    assert main(["status", "--PromoteSettings.runs_dir", str(elsewhere)]) == 0
    assert f"no jobs yet in {elsewhere}" in capsys.readouterr().out
    # a list setting given twice is both items; a typo in a setting's name is refused, one line, exit 2
    assert main(["--PromoteSettings.enabled_targets=local", "run", "x.ipynb", "--target", "docker"]) == 2
    assert "no such target here (available: local)" in capsys.readouterr().err
    assert main(["status", "--PromoteSettings.runs_directory=x"]) == 2
    assert "unrecognized arguments: --PromoteSettings.runs_directory=x" in capsys.readouterr().err
    # a value the setting refuses: one line, exit 2 (not traitlets' log line and exit 1, nor a traceback)
    for bad in (
        "--PromoteSettings.poll_interval=often",
        "--Application.log_format=%(nothing",
        "--Application.log_level=LOUD",
    ):
        assert main(["status", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("jupyter promote: error: configuration: ") and len(err.splitlines()) == 1, err


def test_generate_config_and_y_as_help_all_lists_them(quiet_home, capsys, monkeypatch):
    assert main(["--generate-config"]) == 0
    written = quiet_home / "config" / "jupyter_promote_config.py"
    assert "c.PromoteExtension.store_path" in written.read_text()
    written.write_text("# mine\n")
    # without -y and nobody to ask (no terminal): one line, exit 2, the file as it was
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["--generate-config"]) == 2
    assert "exists; give -y to overwrite it" in capsys.readouterr().err and written.read_text() == "# mine\n"
    assert main(["--generate-config", "-y"]) == 0 and "c.PromoteSettings.runs_dir" in written.read_text()
    assert main(["--JupyterApp.show_config_json=True", "--PromoteSettings.retention=3d", "status"]) == 0
    assert '"retention": "3d"' in capsys.readouterr().out


def _sample_argv(action: argparse.Action, option: str) -> list[str]:
    """``option`` with as many values as it takes (a choice where it has choices)."""
    if action.nargs == 0:
        return [option]
    value = str(next(iter(action.choices))) if action.choices else "1"
    count = action.nargs if isinstance(action.nargs, int) else 1
    return [option, *[value] * count]


def test_every_option_each_commands_help_lists_is_taken():
    parser = build_parser(PromoteConfigApp().config_classes())
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    positionals = {"notebook": "nb.ipynb", "runs": "run-dir", "job": "abc"}
    checked = 0
    for name, command in commands.items():
        text = command.format_help()
        needed = [positionals[a.dest] for a in command._actions if not a.option_strings and a.dest in positionals]
        listed = text.partition("options:")[2].partition("Any setting of")[0]  # the epilog names --help-all
        starts = [line.split("  ")[1] for line in listed.splitlines() if re.match(r"^  -", line)]
        options = {o for start in starts for o in re.findall(r"(?:^|, )(--?[a-zA-Z][\w-]*)", start)}
        for option in sorted(options):
            if option in ("-h", "--help"):
                continue
            action = command._option_string_actions[option]
            argv = [name, *needed, *_sample_argv(action, option)]
            if name == "convert" and option not in ("-o", "--out"):
                argv += ["-o", "out.ipynb"]
            parser.parse_args(argv)  # a UsageError (exit 2) fails the test, naming the option
            checked += 1
    assert checked > 60
    assert "--help-all" in parser.format_help() and "--Class.trait=value" in commands["run"].format_help()
