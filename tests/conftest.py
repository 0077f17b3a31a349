"""Shared fixtures: the real ``jupyter promote`` CLI in a subprocess, with its own runs directory."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = Path(__file__).parent / "notebooks"


def _corpus() -> Path:
    """papermill's test notebooks, in the shared folder beside the project (or PROMOTE_CORPUS)."""
    candidates = [os.environ.get("PROMOTE_CORPUS"), ROOT.parent / "shared", Path("/work/shared")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "corpus" / "papermill-notebooks").is_dir():
            return Path(candidate) / "corpus" / "papermill-notebooks"
    return ROOT.parent / "shared" / "corpus" / "papermill-notebooks"


CORPUS = _corpus()
BIN = Path(sys.executable).parent

pytest_plugins = ["pytest_jupyter.jupyter_server"]

#: The PostgreSQL server scripts/postgres-up.sh starts (role promote may create databases).
PG_URL = os.environ.get("PROMOTE_TEST_PG_URL", "postgresql+psycopg://promote:promote@127.0.0.1:5432/promote")


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A database of its own on the real PostgreSQL server, dropped afterwards: its URL."""
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    name = "promote_test_" + uuid.uuid4().hex[:10]
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The job store's database: an SQLite file (the default), and a PostgreSQL database (a hub's)."""
    if request.param == "sqlite":
        yield str(tmp_path / "store" / "jobs.sqlite")
    else:
        with postgres_database() as url:
            yield url


class CLI:
    """Runs ``jupyter promote ...`` for real, as a user would."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runs = tmp / "runs"
        self.env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(self.runs), "PYTHONUNBUFFERED": "1"}

    def command(self, *args: str) -> list[str]:
        return [str(BIN / "jupyter"), "promote", *args]

    def __call__(
        self, *args: str, timeout: float = 240, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.env, **(env or {})},
            cwd=self.tmp,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.tmp
        )

    def only_run(self) -> Path:
        runs = sorted(self.runs.iterdir())
        assert len(runs) == 1, runs
        return runs[0]


def wait_for(predicate, timeout: float, what: str):
    """Poll ``predicate`` until it returns something truthy (returned), or fail naming ``what``."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]


def job(run: Path) -> dict:
    return json.loads((run / "job.json").read_text())


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


# ---- Docker: the engine, the offline base image, a small kernel environment, a registry ------------
BASE_IMAGE = os.environ.get("PROMOTE_TEST_BASE_IMAGE", "jupyter-promote/base:bookworm")
SMALL_KERNEL = "promote-small"
TORCH_KERNEL = "promote-torch"


def docker_ready() -> None:
    """The Docker tests need the engine and base image that scripts/test.sh starts and builds; never skipped."""
    probe = subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(
            f"Docker engine or base image {BASE_IMAGE} missing: run scripts/docker-up.sh and scripts/base-image.sh"
        )


def kernel_venv(name: str, requirements: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernelspec ``name`` over a venv (kept in .envs/NAME) of ``requirements`` (pip arguments), and the
    environment variables that make it visible (JUPYTER_PATH)."""
    venv = ROOT / ".envs" / name
    if not (venv / "bin" / "python").exists() or not (venv / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *requirements], check=True)
        (venv / ".complete").write_text("ok\n")
    path = tmp_path_factory.mktemp("jupyter-path")
    spec = path / "kernels" / name
    spec.mkdir(parents=True)
    argv = [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name, "language": "python"}))
    return {"JUPYTER_PATH": str(path), "PROMOTE_SMALL_PYTHON": str(venv / "bin" / "python")}


@pytest.fixture(scope="session")
def small_kernel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernelspec ``promote-small`` over a venv of tests/envs/small-kernel.txt (~30 packages), and the
    environment variables that make it visible (JUPYTER_PATH) with Docker-friendly image settings.
    """
    docker_ready()
    return kernel_venv(SMALL_KERNEL, ["-r", str(ROOT / "tests" / "envs" / "small-kernel.txt")], tmp_path_factory)


@pytest.fixture(scope="session")
def torch_kernel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernelspec ``promote-torch``: the small kernel's packages and torch (CPU), for monitor tests on
    targets whose nodes make the kernel's environment from its lock."""
    requirements = ["-r", str(ROOT / "tests" / "envs" / "small-kernel.txt"), "torch==2.13.0"]
    return kernel_venv(TORCH_KERNEL, requirements, tmp_path_factory)


def on_kernel(notebook: Path, kernel: str, directory: Path, extra_cells: list[str] = ()) -> Path:
    """A copy of ``notebook`` in ``directory`` that names ``kernel`` (plus extra code cells)."""
    nb = json.loads(notebook.read_text())
    nb["metadata"]["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    for i, source in enumerate(extra_cells):
        nb["cells"].append(
            {
                "cell_type": "code",
                "id": f"extra-{i}",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": source,
            }
        )
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / notebook.name
    out.write_text(json.dumps(nb))
    return out


@pytest.fixture
def docker_cli(cli: CLI, small_kernel: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> CLI:
    """The CLI with the small kernel visible and the offline base image as the default base."""
    cli.env.update(small_kernel)
    cli.base = ["--ImageBuilder.base_image=" + BASE_IMAGE]
    return cli


def volumes() -> set[str]:
    return set(
        subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True, check=True).stdout.split()
    )


def containers_of_tests() -> list[str]:
    """Containers jupyter-promote made (jobs, verification, probes) that are still there, each as
    "ID STATUS LABELS" so that a failure says what was left."""
    out: list[str] = []
    for label in ("io.jupyter-promote.job", "io.jupyter-promote.role"):
        out += subprocess.run(
            ["docker", "ps", "-a", "--filter", f"label={label}", "--format", "{{.ID}} {{.Status}} {{.Labels}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    return out


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real registry (Debian's docker-registry) on 127.0.0.1, for the session: HOST:PORT."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    storage = tmp_path_factory.mktemp("registry")
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "registry.sh"), str(port), str(storage)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("docker-registry did not start")
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


# ---- Ray: the one-node cluster scripts/ray-up.sh starts ---------------------------------------------------
@pytest.fixture(scope="session")
def ray_cluster() -> str:
    """The Ray tests need the head that scripts/test.sh starts (scripts/ray-up.sh); never skipped."""
    import urllib.request

    address = "http://127.0.0.1:8265"
    try:
        urllib.request.urlopen(f"{address}/api/version", timeout=5)
    except OSError as exc:
        pytest.fail(f"no Ray head answers at {address} ({exc}): run scripts/ray-up.sh (as root)")
    return address


# ---- Kubernetes: the cluster scripts/k8s-up.sh starts (control plane, a kubelet, the cluster's registry) ----
KUBECONFIG = "/etc/promote-kube/user.kubeconfig"  # a user's credentials: may edit the namespace promote
KUBE_REGISTRY = "/etc/promote-kube/registry"  # HOST:PORT of the registry the node pulls from


@pytest.fixture(scope="session")
def kube_cluster() -> str:
    """The Kubernetes tests need the cluster that scripts/test.sh starts (scripts/k8s-up.sh) with its node
    Ready; never skipped. Returns the users' kubeconfig."""
    try:
        from kubernetes import client, config

        client.VersionApi(config.new_client_from_config(KUBECONFIG)).get_code(_request_timeout=5)
        admin = config.new_client_from_config(KUBECONFIG.replace("user", "admin"))  # nodes: the cluster's admin
        nodes = [n for n in client.CoreV1Api(admin).list_node().items if n.metadata.name == "promote-node"]
    except Exception as exc:
        pytest.fail(f"no Kubernetes API server answers with {KUBECONFIG} ({exc}): run scripts/k8s-up.sh (as root)")
    ready = [c for n in nodes for c in n.status.conditions or [] if c.type == "Ready" and c.status == "True"]
    if not ready:
        pytest.fail("the Kubernetes cluster has no Ready node: run scripts/k8s-up.sh (as root)")
    return KUBECONFIG


def _uses_kubernetes(item: pytest.Item) -> bool:
    return "kube_cluster" in getattr(item, "fixturenames", ()) or "kubernetes" in item.name


@pytest.fixture(autouse=True)
def _kube_node_well(request: pytest.FixtureRequest) -> None:
    """Before each Kubernetes test, the test cluster's node is looked at (tests/kube_health.py)."""
    if _uses_kubernetes(request.node) and Path(KUBECONFIG).exists():
        import kube_health

        kube_health.ensure_well(request.node.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A Kubernetes test that failed reports what the node, its pods and the machine looked like."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and _uses_kubernetes(item) and Path(KUBECONFIG).exists():
        import kube_health

        report.sections.append(("the Kubernetes test cluster", kube_health.picture()))


@pytest.fixture(scope="session")
def kube_registry(kube_cluster: str) -> str:
    """The repository in the cluster's registry that the tests push the jobs' images to and the node pulls
    them from by digest: HOST:PORT/promote."""
    import urllib.request

    try:
        address = Path(KUBE_REGISTRY).read_text().strip()
        urllib.request.urlopen(f"http://{address}/v2/", timeout=5)
    except OSError as exc:
        pytest.fail(f"the Kubernetes cluster's registry does not answer ({exc}): run scripts/k8s-up.sh (as root)")
    return f"{address}/promote"


# ---- Slurm: the one-node cluster scripts/slurm-up.sh starts ------------------------------------------
@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """The Slurm tests need the cluster that scripts/test.sh starts (scripts/slurm-up.sh); never skipped."""
    probe = (
        subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, check=False)
        if _which("sinfo")
        else None
    )
    if probe is None or probe.returncode != 0 or not probe.stdout.strip():
        pytest.fail("no Slurm cluster answers: run scripts/slurm-up.sh (as root)")
    if not any(s.startswith(("idle", "mix", "alloc")) for s in probe.stdout.split()):
        subprocess.run(["scontrol", "update", "nodename=localhost", "state=resume"], capture_output=True, check=False)


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The fault suite's figures (tests/fault_ledger.py) and the differential suite's agreement with papermill
    (tests/differential.py), as this run saw them."""
    import differential
    import fault_ledger
    import kube_health

    for title, lines in (
        ("the Kubernetes node started again", kube_health.restarts),
        ("fault suite figures", fault_ledger.summary()),
        ("papermill agreement", differential.summary()),
    ):
        if lines:
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.write_line(line)


# ---- S3: moto's server, which scripts/s3-up.sh starts --------------------------------------------------
S3_HOME = Path(os.environ.get("PROMOTE_S3_HOME", "/opt/promote-s3"))


@dataclass(frozen=True)
class S3:
    """The server: its endpoint and its users' keys."""

    endpoint: str
    users: dict[str, dict[str, str]]

    def options(self, user: str = "promote") -> dict[str, Any]:
        keys = self.users[user]
        return {"key": keys["key"], "secret": keys["secret"], "endpoint_url": self.endpoint}

    def fs(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(**self.options(), skip_instance_cache=True)


@pytest.fixture(scope="session")
def s3() -> S3:
    """The server scripts/s3-up.sh starts (idempotent: one that answers is kept); never skipped."""
    try:
        import s3fs  # noqa: F401
    except ImportError:
        pytest.fail("s3fs is not installed: pip install 'jupyter_promote[data]'")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "s3-up.sh")], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"scripts/s3-up.sh failed (run it as root): {(done.stderr or done.stdout).strip()[-500:]}")
    info = json.loads((S3_HOME / "credentials.json").read_text())
    return S3(info["endpoint_url"], info["users"])


def new_bucket(s3: S3, objects: dict[str, bytes]) -> Iterator[str]:
    """A bucket of its own holding ``objects`` (key -> content), removed afterwards."""
    name, fs = f"t-{uuid.uuid4().hex[:12]}", s3.fs()
    fs.call_s3("create_bucket", Bucket=name)
    fs.pipe({f"{name}/{key}": data for key, data in objects.items()})
    yield name
    fs.rm(name, recursive=True)
