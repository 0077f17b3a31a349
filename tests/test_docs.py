"""The docs that are generated from the code stay in step with it."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_the_configuration_reference_lists_every_setting_as_the_code_has_it():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "config_reference.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    text = (ROOT / "docs" / "configuration.md").read_text()
    for setting in ("PromoteSettings.runs_dir", "Notifications.destinations", "SlurmTarget.", "KubernetesTarget."):
        assert f"`{setting}" in text
