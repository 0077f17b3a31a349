"""The dialog's preview of a promote: the kernel's lock, the kernels to choose from, the pre-flight
findings and, for image targets, the image tag and whether it exists. Builds nothing, submits nothing.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from ..errors import PromoteError

#: Seconds the dialog's preview waits for a kernel's interpreter to describe its environment (a promote
#: itself waits longer): a kernel that hangs answers the dialog with one line soon, never holds a thread long.
PREVIEW_TIMEOUT_S = 45.0


def preview(
    notebook: str,
    env_allowlist: tuple[str, ...],
    config: Any = None,
    kernel: str | None = None,
    gpus: int | None = None,
    target: str = "local",
) -> dict[str, Any]:
    """What a promote of ``notebook`` would use: its kernel's lock, the kernels to choose from, the
    pre-flight findings as a job on ``target`` would meet them (as ``check --target`` judges) and, for image
    targets, the image tag and whether that image exists already. Builds nothing.
    """
    import tempfile

    from jupyter_client.kernelspec import KernelSpecManager

    from ..freeze import environment_card, freeze, kernel_interpreter
    from ..job.notebook import kernel_of, read_notebook
    from ..job.parameters import notebook_parameters
    from ..preflight import WHOLE_ENVIRONMENT_TARGETS, check_notebook

    nb = read_notebook(notebook)
    own = kernel_of(nb, notebook)
    interpreter = kernel_interpreter(kernel or own)
    specs = KernelSpecManager().get_all_specs()
    kernels = [
        {"name": name, "display_name": spec["spec"].get("display_name", name)}
        for name, spec in sorted(specs.items())
        if spec["spec"].get("language", "").lower() == "python"
    ]
    whole = target in WHOLE_ENVIRONMENT_TARGETS
    findings = check_notebook(nb, gpus=gpus, env_allowlist=env_allowlist, whole_environment=whole)
    with tempfile.TemporaryDirectory(prefix="promote-preview-") as tmp:
        env = freeze(interpreter, os.path.join(tmp, "env"), env_allowlist=env_allowlist, timeout=PREVIEW_TIMEOUT_S)
        result: dict[str, Any] = {
            "kernel": own,
            "kernels": kernels,
            "check": {"findings": [f.to_json() for f in findings]},
            "summary": env.summary(),
            "environment": environment_card(env.lock),
            "parameters": notebook_parameters(notebook),
            "lock": env.lock,
            "image": None,
        }
        try:
            from ..image import ImageBuilder

            builder = ImageBuilder(config=config) if config is not None else ImageBuilder()
            plan = builder.plan(env, pull=False)  # a preview pulls nothing
            shutil.rmtree(plan.context, ignore_errors=True)  # the tag is all a preview needs
            result["image"] = {
                "tag": plan.tag,
                "base_image": plan.base_image,
                "exists": builder.find(plan.tag) is not None,
            }
        except PromoteError as exc:  # no engine here: the preview still shows the lock
            result["image_error"] = str(exc)
    return result
