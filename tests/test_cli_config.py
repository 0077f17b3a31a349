"""One configuration file for both doors: ``jupyter_promote_config.py`` is read by the CLI and by the server
extension; ``--version``, ``--generate-config`` and ``--help-all``."""

from __future__ import annotations

import pytest
from conftest import CLI
from test_server import api


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch, jp_config_dir):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    # Given the admin's settings in the CLI's file, in the server's config directory
    (jp_config_dir / "jupyter_promote_config.py").write_text('c.PromoteSettings.enabled_targets = ["local"]\n')
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "jobs.sqlite")},
    }


async def test_the_server_reads_the_same_file_as_the_cli(jp_fetch, jp_config_dir, tmp_path):
    # Then the server offers only what the file enables
    _, body = await api(jp_fetch, "targets")
    assert [t["name"] for t in body["targets"]] == ["local"]
    # And so does the CLI, from the same file
    cli = CLI(tmp_path)
    cli.env["JUPYTER_CONFIG_DIR"] = str(jp_config_dir)
    done = cli("run", "nothing.ipynb", "--target", "docker")
    assert done.returncode == 2


def test_version_generate_config_and_help_all(tmp_path):
    cli = CLI(tmp_path)
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("jupyter-promote ")
    cli.env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "config")
    done = cli("--generate-config")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "config" / "jupyter_promote_config.py").read_text()
    assert "c.PromoteSettings.default_target" in text and "c.SlurmTarget.partition" in text
    done = cli("--help-all")
    assert done.returncode == 0 and "--ImageBuilder.base_image" in done.stdout


def test_help_all_lists_only_options_the_command_line_accepts(tmp_path):
    import re

    # Given the options --help-all lists before the class options
    cli = CLI(tmp_path)
    cli.env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "config")
    listed = cli("--help-all").stdout.partition("Class options")[0]
    options = re.findall(r"^(-{1,2}[\w-]+)", listed, re.MULTILINE)
    # Then each is one the command line takes (a second --generate-config overwrites with -y), and the options
    # argparse refuses with exit 2 (--debug, --log-level, --config, --show-config) are not offered
    assert sorted(options) == ["--generate-config", "-y"], options
    assert [cli("--generate-config", "-y").returncode for _ in range(2)] == [0, 0]
    assert all(cli(option, "status").returncode == 2 for option in ("--debug", "--log-level=10", "--show-config"))
