"""From a kernel name (or an interpreter path) to the command that runs the kernel's Python."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

from ..errors import KernelError


@dataclass(frozen=True)
class Interpreter:
    """The command that starts a kernel's Python (``["/env/bin/python"]``, or a wrapper such as ``conda run``)."""

    command: tuple[str, ...]
    kernel: str | None = None

    @property
    def display(self) -> str:
        return f"kernel {self.kernel!r} ({' '.join(self.command)})" if self.kernel else " ".join(self.command)


def kernel_interpreter(kernel: str) -> Interpreter:
    """The interpreter of the kernelspec named ``kernel``, as the kernel's own ``argv`` says."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    try:
        spec = manager.get_kernel_spec(kernel)
    except NoSuchKernel:
        available = ", ".join(sorted(manager.find_kernel_specs())) or "none"
        raise KernelError(f"kernel {kernel!r}: no such kernelspec (available: {available})", subject=kernel) from None
    if (spec.language or "").lower() != "python":
        raise KernelError(
            f"kernel {kernel!r}: a {spec.language or 'unknown'} kernel; jupyter-promote freezes Python kernels only",
            subject=kernel,
        )
    argv = list(spec.argv)
    head = argv[: argv.index("-m")] if "-m" in argv else argv[:1]
    if not head:
        raise KernelError(f"kernel {kernel!r}: its kernelspec has an empty argv", subject=kernel)
    # jupyter_client runs a bare "python" kernelspec with the server's own interpreter
    if head[0] in {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}:
        head[0] = sys.executable
    elif not os.path.isabs(head[0]):
        found = shutil.which(head[0])
        if found is None:
            raise KernelError(f"kernel {kernel!r}: {head[0]!r} from its argv is not on PATH", subject=kernel)
        head[0] = found
    if not os.path.exists(head[0]):
        raise KernelError(f"kernel {kernel!r}: its interpreter {head[0]} does not exist", subject=kernel)
    return Interpreter(tuple(head), kernel)


def python_interpreter(path: str) -> Interpreter:
    """An interpreter given by path (``freeze --python PATH``)."""
    resolved = path if os.path.sep in path else (shutil.which(path) or path)
    if not (os.path.isfile(resolved) and os.access(resolved, os.X_OK)):
        raise KernelError(f"--python {path}: not an executable file", subject=path)
    return Interpreter((os.path.abspath(resolved),))
