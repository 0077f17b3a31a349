"""Secrets by reference: where a job's credentials come from, never what they are.

A job asks for secrets as ``NAME -> SOURCE`` (``--secret NAME[=SOURCE]``, ``secrets`` in a request body,
``c.PromoteSettings.secrets``); NAME is the environment variable the job reads. The sources:

- ``env:VAR``: a variable of the submitter's environment (the default: ``--secret HF_TOKEN`` is
  ``env:HF_TOKEN``); read when the job is submitted;
- ``file:PATH``: a file of the submitter's (its content, one trailing newline dropped); read when submitted;
- ``kubernetes:SECRET/KEY``: a key of a Kubernetes Secret in the job's namespace; never read by
  jupyter-promote: the pod gets it through ``secretKeyRef`` (the kubernetes target only);
- ``node-file:PATH``: a file where the job runs (a Slurm node's, readable only by its owner); read by the
  job's batch script when it starts (the slurm and local targets).

The references are what job.json, the request and events keep; values live only in the submitting process
and reach the job at run time, as each target delivers them (see the targets). No error names a value.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .runtime.masking import MIN_MASKED, NAMES_ENV

#: The kinds of source, and the targets that deliver each (None: every target).
KINDS: dict[str, tuple[str, ...] | None] = {
    "env": None,
    "file": None,
    "kubernetes": ("kubernetes",),
    "node-file": ("slurm", "local"),
}
#: The most secrets one job may ask for, the largest value (bytes) and all of them together: what an
#: environment holds (Linux refuses one variable over 128 KiB, and all of them over a quarter of the stack).
MAX_SECRETS = 64
MAX_VALUE_BYTES = 32 << 10
MAX_TOTAL_BYTES = 128 << 10
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KUBE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[-._a-zA-Z0-9]+")
#: Names the runner, the interpreter and the targets set or read themselves: a secret may not take them over.
_RESERVED_PREFIXES = ("PROMOTE_", "JUPYTER", "PYTHON", "LD_", "SLURM_", "CUDA_", "OMP_")
_RESERVED = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "PWD"})


@dataclass(frozen=True)
class SecretRef:
    """One secret: the variable ``name`` the job reads, from ``kind`` at ``where``."""

    name: str
    kind: str
    where: str

    @property
    def source(self) -> str:
        return f"{self.kind}:{self.where}"

    @property
    def by_value(self) -> bool:
        """Whether the submitter reads it and hands the value to the target (else the target refers to it)."""
        return self.kind in ("env", "file")


def _refused(name: str, reason: str, field: str = "secrets") -> UsageError:
    return UsageError(
        f"secret {name}: {reason}", subject=name, field=f"{field}.{name}" if _NAME.fullmatch(name) else field
    )


def parse_ref(name: str, source: object) -> SecretRef:
    """``name -> source`` as a :class:`SecretRef`; a one-line error naming the secret when either is wrong."""
    if not _NAME.fullmatch(name):
        raise _refused(name, "not an environment variable's name (letters, digits and '_')")
    if name.upper().startswith(_RESERVED_PREFIXES) or name.upper() in _RESERVED:
        raise _refused(name, "the job's runner, interpreter or target sets this variable; name the secret otherwise")
    kinds = ", ".join(f"{k}:" for k in KINDS)
    if not isinstance(source, str) or not source:
        raise _refused(name, f"give its source as KIND:WHERE, KIND one of {kinds}")
    kind, sep, where = source.partition(":")
    if not sep or kind not in KINDS:  # never echoed: a value typed where its source belongs is still a value
        raise _refused(name, f"its source is not KIND:WHERE with KIND one of {kinds} (secrets are given by reference)")
    if not where:
        raise _refused(name, f"{kind}: names nothing")
    if kind == "env" and not _NAME.fullmatch(where):
        raise _refused(name, f"env:{where} is not an environment variable's name")
    if kind == "kubernetes" and not _KUBE_NAME.fullmatch(where):
        raise _refused(name, f"kubernetes:{where} is not SECRET/KEY (a Secret's name and one of its keys)")
    if kind in ("file", "node-file") and not os.path.isabs(os.path.expanduser(where)):
        raise _refused(name, f"{kind}:{where} is not an absolute path")
    return SecretRef(name, kind, where)


def parse_option(text: str) -> tuple[str, str]:
    """``--secret NAME[=SOURCE]`` as (name, source); the source defaults to ``env:NAME``."""
    name, sep, source = text.partition("=")
    return name.strip(), source.strip() if sep else f"env:{name.strip()}"


def refs_of(asked: Mapping[str, object], defaults: Mapping[str, object] = {}) -> dict[str, SecretRef]:
    """The secrets a job asks for: ``defaults`` (the site's ``c.PromoteSettings.secrets``) under ``asked``."""
    merged = {**defaults, **asked}
    if len(merged) > MAX_SECRETS:
        raise UsageError(f"secrets: {len(merged)} asked for, at most {MAX_SECRETS}", subject="secrets", field="secrets")
    return {name: parse_ref(name, source) for name, source in merged.items()}


def check_target(refs: Mapping[str, SecretRef], target: str) -> None:
    """Refuses a source ``target`` cannot deliver."""
    for ref in refs.values():
        allowed = KINDS[ref.kind]
        if allowed is not None and target not in allowed:
            raise _refused(ref.name, f"{ref.kind}: sources reach jobs on {' and '.join(allowed)} only, not on {target}")


def _read_file(ref: SecretRef) -> str:
    """A file's value: a regular file's text (a device or a pipe is never opened), trailing newlines dropped
    (as the shell's ``$(cat FILE)`` drops them on a Slurm node)."""
    path = Path(os.path.expanduser(ref.where))
    kind = ref.kind
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise _refused(ref.name, f"{kind}:{ref.where} is not a regular file")
        with open(path, "rb") as f:
            data = f.read(MAX_VALUE_BYTES + 1)
    except FileNotFoundError:
        raise _refused(ref.name, f"{kind}:{ref.where} does not exist") from None
    except OSError as exc:
        raise _refused(ref.name, f"{kind}:{ref.where} cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(ref.name, f"{kind}:{ref.where} is not UTF-8 text") from None
    return text.rstrip("\r\n")


def resolve(refs: Mapping[str, SecretRef], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of the secrets the submitter reads (``env:`` and ``file:``), name -> value. Refused when a
    source is not there, when a value is too short to be masked in what the job prints, or when they are
    more than an environment holds."""
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for ref in refs.values():
        if ref.kind == "env":
            if ref.where not in env:
                raise _refused(ref.name, f"env:{ref.where} is not set in the environment jupyter-promote runs in")
            values[ref.name] = _checked(ref, env[ref.where])
        elif ref.kind == "file":
            values[ref.name] = _checked(ref, _read_file(ref))
    total = sum(len(v.encode()) for v in values.values())
    if total > MAX_TOTAL_BYTES:
        message = (
            f"secrets: {total >> 10} KiB in all, more than a job's environment holds ({MAX_TOTAL_BYTES >> 10} KiB)"
        )
        raise UsageError(message, subject="secrets", field="secrets")
    return values


def _checked(ref: SecretRef, value: str) -> str:
    if len(value.strip()) < MIN_MASKED:
        raise _refused(ref.name, f"{ref.source} holds a value shorter than {MIN_MASKED} characters")
    if "\0" in value:
        raise _refused(ref.name, f"{ref.source} holds a NUL character, which no environment variable can")
    if len(value.encode()) > MAX_VALUE_BYTES:
        raise _refused(ref.name, f"{ref.source} is larger than {MAX_VALUE_BYTES >> 10} KiB")
    return value


def deliverable_defaults(
    defaults: Mapping[str, object], target: str, environ: Mapping[str, str] | None = None
) -> dict[str, object]:
    """The site's default secrets (``c.PromoteSettings.secrets``) a job on ``target`` gets: those ``target``
    delivers and whose source is there (an unset variable, a missing file: left out, never an error; a
    request's own secrets must be there)."""
    refs = {name: parse_ref(name, source) for name, source in defaults.items()}
    there = availability(refs, target, environ)
    return {name: defaults[name] for name, problem in there.items() if problem is None}


def job_environment(names: Iterable[str], values: Mapping[str, str]) -> dict[str, str]:
    """What a job's process gets for its secrets ``names``: the ``values`` delivered by value, and the
    variable that tells the job which of its variables are secrets (to mask); empty without any."""
    listed = sorted(names)
    return {**values, NAMES_ENV: ",".join(listed)} if listed else {}


def read_node_files(sources: Mapping[str, str]) -> dict[str, str]:
    """The values of the ``node-file:`` secrets among ``sources`` (a record's), read where the job runs: by
    a target whose jobs run on this machine (local)."""
    refs = {name: parse_ref(name, source) for name, source in sources.items()}
    return {ref.name: _checked(ref, _read_file(ref)) for ref in refs.values() if ref.kind == "node-file"}


def stored(refs: Mapping[str, SecretRef]) -> dict[str, str]:
    """The references as job.json keeps them: name -> source."""
    return {name: ref.source for name, ref in sorted(refs.items())}


def availability(
    refs: Mapping[str, SecretRef], target: str, environ: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    """For the pre-flight check: each secret -> why it will not be there on ``target`` (None: it will, as
    far as can be told here; a Kubernetes Secret is looked up when the job is submitted, a node's file read
    when the job starts)."""
    env = os.environ if environ is None else environ
    found: dict[str, str | None] = {}
    for name, ref in refs.items():
        allowed = KINDS[ref.kind]
        problem: str | None = None
        if allowed is not None and target not in allowed:
            problem = f"{ref.kind}: sources reach jobs on {' and '.join(allowed)} only, not on {target}"
        elif ref.kind == "env" and ref.where not in env:
            problem = f"env:{ref.where} is not set here"
        elif ref.kind == "file":
            try:
                _read_file(ref)
            except UsageError as exc:
                problem = exc.message.removeprefix(f"secret {name}: ")
        found[name] = problem
    return found
