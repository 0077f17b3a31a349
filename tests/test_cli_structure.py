"""How the command line is put together: no module of it imports one that imports it back, and a command
loads the server extension only where its settings are shown or named."""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import ROOT

CLI = ROOT / "jupyter_promote" / "cli"


def imports_within_cli() -> dict[str, set[str]]:
    """Each module of the CLI package and the modules of the same package it imports (``from .x import``)."""
    graph: dict[str, set[str]] = {}
    for path in CLI.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        graph[path.stem] = found
    return graph


def test_no_module_of_the_cli_imports_one_that_imports_it_back():
    graph = imports_within_cli()
    cycles = []

    def walk(module: str, path: list[str]) -> None:
        for other in sorted(graph.get(module, ())):
            if other in path:
                cycles.append([*path[path.index(other) :], other])
            elif other in graph:
                walk(other, [*path, other])

    for module in graph:
        walk(module, [module])
    assert cycles == []
    assert "main" not in graph["detached"] and "main" in graph["detached_sweep"]


def test_a_command_loads_the_server_extension_only_where_its_settings_are_shown_or_named(tmp_path):
    probe = (
        "import sys; from jupyter_promote.cli.main import main; code = main(sys.argv[1:]); "
        "print('server' if 'jupyter_promote.server.app' in sys.modules else 'no server', code)"
    )
    env = {"JUPYTER_PROMOTE_RUNS_DIR": str(tmp_path / "runs"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}

    def loaded(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env)
        return done.stdout.strip().splitlines()[-1]

    assert loaded("status") == "no server 0"
    assert loaded("status", "--PromoteExtension.store_path=x") == "server 0"
    assert loaded("--help-all") == "server 0"
