"""Option groups several commands share: parameters (papermill's), pre-flight, resources, image, monitor, secrets,
notify."""

from __future__ import annotations

import argparse


def parameter_options(run: argparse.ArgumentParser) -> None:
    """papermill's: -p typed, -r raw, -y YAML, -f a YAML file."""
    for flags, what in (
        (("-p", "--parameters"), "a parameter, typed as papermill types it (-p lr 0.1 is a float, -p n 3 an int)"),
        (("-r", "--parameters-raw"), "a parameter as a string, untyped"),
    ):
        run.add_argument(*flags, nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=what)
    run.add_argument(
        "-y",
        "--parameters-yaml",
        action="append",
        default=[],
        metavar="YAML",
        help="parameters as a YAML mapping, for lists and dicts",
    )
    run.add_argument(
        "-f",
        "--parameters-file",
        action="append",
        default=[],
        metavar="PARAMS.yaml",
        help="parameters from a YAML file",
    )


def interpreter_options(parser: argparse.ArgumentParser, python_help: str) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--kernel", help="kernelspec name (default: python3)")
    which.add_argument("--python", help=python_help)


def preflight_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", help="kernelspec to run with (default: the notebook's own)")
    parser.add_argument(
        "--strict", action="store_true", help="refuse to submit when the pre-flight check reports anything"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="first a quick local top-to-bottom run with the parameters of the cell tagged 'smoke'; "
        "nothing is submitted when it fails",
    )


def resource_options(parser: argparse.ArgumentParser, time_help: str) -> None:
    parser.add_argument("--cpus", help="CPUs for the job, e.g. 4")
    parser.add_argument("--memory", help="memory for the job, e.g. 8G or 512M")
    parser.add_argument("--gpus", help="GPUs for the job, e.g. 1")
    parser.add_argument("--time", help=time_help)


def image_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("image (container targets)")
    group.add_argument("--base-image", help="base image (default: python:X.Y.Z-slim of the kernel's Python)")
    group.add_argument(
        "--ca-bundle", help="CA bundle for pip in the build (default: $PIP_CERT, $REQUESTS_CA_BUNDLE or $SSL_CERT_FILE)"
    )
    group.add_argument(
        "--wheelhouse", action="store_true", default=None, help="hermetic build: wheels fetched on the host, --no-index"
    )
    group.add_argument("--push", action="store_true", help="push the image to the registry")
    group.add_argument("--registry", help="HOST:PORT/REPO to find images in and push to")
    group.add_argument("--rebuild", action="store_true", help="build even when an image of this environment exists")


def monitor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stall-timeout", type=float, default=None, metavar="S", help="seconds without progress (default 600)"
    )
    parser.add_argument("--deterministic", action="store_true", help="seed and pin deterministic algorithms")
    parser.add_argument(
        "--monitor",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="monitor setting, e.g. nan_action=alert, stall_action=alert, throughput_action=fail, check_every=10",
    )


def data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        action="append",
        default=None,
        metavar="NAME=URL",
        help="an input on storage the cluster reads (s3://bucket/prefix): fetched on the node, cached by content, "
        "found by the notebook at promote.data(NAME); repeat for several; credentials as --secret",
    )


def retry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retries",
        type=int,
        default=None,
        metavar="N",
        help="start the job again, up to N times, when the infrastructure fails it (preempted, evicted, its node "
        "or its target lost); never for the notebook's own errors, NaN or OOM (default 0)",
    )


def secret_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--secret",
        action="append",
        default=None,
        metavar="NAME[=SOURCE]",
        help="give the job the environment variable NAME from SOURCE, by reference: env:VAR (default env:NAME), "
        "file:PATH, kubernetes:SECRET/KEY, node-file:PATH; repeat for several; never stored by value",
    )


def notify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--notify",
        action="append",
        default=None,
        metavar="NAME",
        help="tell this destination (c.Notifications.destinations) when the job ends or raises an alert; "
        "repeat for several; 'none' for none (default: c.Notifications.defaults)",
    )
