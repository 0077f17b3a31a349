"""Notifications delivered for real: a local HTTP listener for webhooks and a local SMTP server (aiosmtpd) with
STARTTLS and a login, both started by the tests on loopback; failures are retried and recorded, never raised."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jupyter_promote.errors import UsageError
from jupyter_promote.notify import Notifications, Notifier

JOB = {
    "id": "abc123def456",
    "notebook": "/home/u/train.ipynb",
    "target": "slurm",
    "state": "failed",
    "reason": "nan",
    "message": "NaN in the loss at optimizer step 40",
    "started_at": 100.0,
    "finished_at": 142.0,
    "metrics": {"loss": "nan"},
    "notify": ["hook", "slack", "teams", "mail"],
}


class Listener:
    """A real HTTP server on loopback that answers ``fail_first`` requests with 503, then 200, and keeps the bodies."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[tuple[str, dict]] = []
        self.fail_first = fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.fail_first > 0:
                    outer.fail_first -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                outer.bodies.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def listener():
    server = Listener(fail_first=1)  # the first delivery fails: it is retried
    yield server
    server.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp(tmp_path: Path):
    """aiosmtpd on loopback: STARTTLS required, with a self-signed certificate, and a login required."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    received: list = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            received.append((envelope.rcpt_tos, message_from_bytes(envelope.content), session.authenticated))
            return "250 OK"

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == b"promote" and auth_data.password == b"s3cret"
        return AuthResult(success=ok, handled=False)  # not handled: the server answers 535

    port = free_port()
    controller = Controller(
        Handler(),
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        authenticator=authenticator,
        auth_require_tls=True,
    )
    controller.start()
    yield port, cert, received
    controller.stop()


def settings(listener: Listener, smtp_port: int, cert: Path, **extra) -> Notifications:
    return Notifications(
        destinations={
            "hook": {"kind": "webhook", "url": listener.url + "/hook"},
            "slack": {"kind": "slack", "url": listener.url + "/slack", "on": ["failed"]},
            "teams": {"kind": "teams", "url": listener.url + "/teams"},
            "mail": {"kind": "email", "to": ["ml-team@example.org"]},
            "quiet": {"kind": "webhook", "url": listener.url + "/quiet", "on": ["succeeded"]},
        },
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_security="starttls",
        smtp_ca_file=str(cert),
        smtp_user="promote",
        smtp_password_env="PROMOTE_TEST_SMTP_PASSWORD",
        retry_delay_s=0.2,
        **extra,
    )


def wait_for(predicate, timeout: float = 20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_failed_job_notifies_every_chosen_destination_in_its_own_shape(listener, smtp, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMOTE_TEST_SMTP_PASSWORD", "s3cret")
    port, cert, received = smtp
    notifier = Notifier(settings(listener, port, cert))
    notifier.finished(JOB, str(tmp_path))
    notifier.close()
    bodies = dict(listener.bodies)
    assert set(bodies) == {"/hook", "/slack", "/teams"}  # "quiet" was not chosen
    hook = bodies["/hook"]
    assert hook["event"] == "failed" and hook["job"]["id"] == JOB["id"] and "NaN in the loss" in hook["text"]
    assert bodies["/slack"]["text"] == "jupyter-promote: train.ipynb (abc123def456) on slurm failed (nan)"
    assert bodies["/slack"]["blocks"][0]["text"]["type"] == "mrkdwn"
    card = bodies["/teams"]["attachments"][0]
    assert (
        card["contentType"] == "application/vnd.microsoft.card.adaptive" and card["content"]["type"] == "AdaptiveCard"
    )
    [(to, mail, authenticated)] = received
    assert to == ["ml-team@example.org"] and authenticated
    assert mail["Subject"] == "jupyter-promote: train.ipynb (abc123def456) on slurm failed (nan)"
    assert "reason" not in mail.get_payload() or "NaN in the loss" in mail.get_payload()
    # every attempt is on record in the run directory: the webhook's first try failed (503) and was retried
    attempts = [json.loads(line) for line in (tmp_path / "notifications.jsonl").read_text().splitlines()]
    failed = [a for a in attempts if not a["ok"]]
    assert len(failed) == 1 and "503" in failed[0]["error"], attempts
    assert {a["destination"] for a in attempts if a["ok"]} == {"hook", "slack", "teams", "mail"}


def test_an_alert_goes_only_where_alerts_are_wanted(listener, smtp, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMOTE_TEST_SMTP_PASSWORD", "s3cret")
    port, cert, received = smtp
    listener.fail_first = 0
    notifier = Notifier(settings(listener, port, cert))
    alert = {"kind": "throughput_drop", "message": "throughput dropped to 16 steps/s"}
    notifier.alert({**JOB, "state": "running"}, alert, str(tmp_path))
    notifier.close()
    assert {path for path, _ in listener.bodies} == {"/hook", "/teams"}  # slack only wants failures
    assert "throughput_drop alert" in received[0][1]["Subject"]


def test_an_unreachable_destination_is_retried_then_given_up_without_raising(tmp_path, caplog):
    dead = f"http://127.0.0.1:{free_port()}/hook"
    notifier = Notifier(Notifications(destinations={"hook": {"url": dead}}, retries=2, retry_delay_s=0.1))
    notifier.finished({**JOB, "notify": ["hook"], "state": "succeeded"}, str(tmp_path))
    notifier.close()
    attempts = [json.loads(line) for line in (tmp_path / "notifications.jsonl").read_text().splitlines()]
    assert [a["attempt"] for a in attempts] == [1, 2, 3] and not any(a["ok"] for a in attempts)
    assert "giving up" in caplog.text


def test_a_wrong_smtp_password_is_a_recorded_failure(listener, smtp, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMOTE_TEST_SMTP_PASSWORD", "wrong")
    port, cert, received = smtp
    notifier = Notifier(settings(listener, port, cert, retries=0))
    notifier.finished({**JOB, "notify": ["mail"]}, str(tmp_path))
    notifier.close()
    [attempt] = [json.loads(line) for line in (tmp_path / "notifications.jsonl").read_text().splitlines()]
    assert not attempt["ok"] and "Authentication" in attempt["error"] and received == []


def test_bad_destinations_and_unknown_names_are_one_line_errors():
    with pytest.raises(UsageError, match=r"destinations\['x'\]: kind 'pager' is not one of"):
        Notifications(destinations={"x": {"kind": "pager"}}).parsed()
    with pytest.raises(UsageError, match="email needs 'to'"):
        Notifications(destinations={"x": {"kind": "email"}}).parsed()
    with pytest.raises(UsageError, match="notify: 'nope' is not a destination; known: x"):
        Notifications(destinations={"x": {"url": "http://127.0.0.1:1/"}}).choose(["nope"])
    assert Notifications(destinations={"x": {"url": "http://127.0.0.1:1/"}}, defaults=["x"]).choose(None) == ["x"]
    assert Notifications(defaults=["x"]).choose(["none"]) == []


# ---- from the command line, with the destinations in the user's jupyter_promote_config.py --------------------
def user_config(tmp_path: Path, listener: Listener) -> dict[str, str]:
    config = tmp_path / "jupyter-config"
    config.mkdir()
    (config / "jupyter_promote_config.py").write_text(
        f'c.Notifications.destinations = {{"hook": {{"kind": "webhook", "url": "{listener.url}/hook"}},\n'
        f'    "team": {{"kind": "slack", "url": "{listener.url}/team", "on": ["failed"]}}}}\n'
        'c.Notifications.defaults = ["team"]\nc.Notifications.retry_delay_s = 0.2\n'
    )
    return {"JUPYTER_CONFIG_DIR": str(config)}


def test_a_diverging_job_run_from_the_cli_notifies_its_alert_and_its_end(cli, listener, tmp_path):
    from conftest import NOTEBOOKS, job

    env = user_config(tmp_path, listener)
    result = cli("run", str(NOTEBOOKS / "diverge.ipynb"), "--notify", "hook", "--notify", "team", env=env)
    assert result.returncode == 1, result.stderr
    record = job(cli.only_run())
    assert record["notify"] == ["hook", "team"]  # the names, never the URLs
    events = [(path, body.get("event") or body.get("text")) for path, body in listener.bodies]
    assert ("/hook", "alert") in events and ("/hook", "failed") in events, events
    assert [p for p, _ in events].count("/team") == 1  # the team wants failures only
    alert = next(body for path, body in listener.bodies if body.get("event") == "alert")
    assert alert["alert"]["kind"] == "nan" and alert["job"]["id"] == record["id"]


def test_an_unknown_destination_is_refused_before_anything_runs(cli, listener, tmp_path):
    from conftest import NOTEBOOKS

    result = cli("run", str(NOTEBOOKS / "success.ipynb"), "--notify", "pager", env=user_config(tmp_path, listener))
    assert result.returncode == 2
    assert result.stderr.strip() == "jupyter promote: error: notify: 'pager' is not a destination; known: hook, team"
    assert not cli.runs.exists() or not list(cli.runs.iterdir())
