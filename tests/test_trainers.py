"""The monitor under the common trainers, end to end through the CLI: Lightning, the Hugging Face Trainer, a
torch.compile'd step, AMP's GradScaler. Each counts its optimizer steps, fails fast on a NaN, and a healthy
run succeeds without an alert. The runs of one test go concurrently: the file stays within two minutes."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import NOTEBOOKS, events, job


def run_all(cli, notebook: str, *variants: dict[str, str]) -> list[Path]:
    """Run ``notebook`` once per variant (its -p parameters) at the same time; their run directories, in order."""
    procs = []
    for variant in variants:
        params = [arg for name, value in variant.items() for arg in ("-p", name, value)]
        procs.append(cli.popen("run", str(NOTEBOOKS / notebook), *params))
    runs = []
    for proc in procs:
        _, stderr = proc.communicate(timeout=240)
        assert proc.returncode in (0, 1), stderr
        runs.append(Path(re.search(r"output: (\S+)", stderr)[1]).parent)
    return runs


def steps_counted(run: Path) -> int:
    return max([e.get("steps") or 0 for e in events(run) if e["type"] in ("step", "heartbeat")], default=0)


def assert_healthy(run: Path, steps: int) -> None:
    record = job(run)
    assert (record["state"], record["reason"]) == ("succeeded", None), record
    # a throughput drop is contention on a busy test machine, not the trainer
    assert [e for e in events(run) if e["type"] == "alert" and e["kind"] != "throughput_drop"] == []
    assert steps_counted(run) == steps  # once per optimizer step: not per backward(), not per closure call


def assert_failed_fast_on_nan(run: Path, within: int = 50) -> dict:
    record = job(run)
    assert (record["state"], record["reason"]) == ("failed", "nan"), record
    alert = next(e for e in events(run) if e["type"] == "alert" and e["kind"] == "nan")
    assert alert["action"] == "fail" and "the loss" in alert["message"] and alert["step"] <= within, alert
    assert '"finished training\\n"' not in (run / "output.ipynb").read_text()  # the cell after never ran
    return alert


def test_lightning_counts_its_closure_steps_once_and_fails_fast_on_nan(cli):
    # Given a LightningModule trained by L.Trainer (optimizer.step with a closure that runs backward())
    healthy, diverged, anomaly = run_all(
        cli,
        "lightning_trainer.ipynb",
        {"steps": "60"},
        {"lr": "1e4", "steps": "3000"},
        # Lightning's own NaN check: torch's anomaly detection raises from backward() first
        {"lr": "1e4", "steps": "3000", "detect_anomaly": "True"},
    )
    assert_healthy(healthy, 60)
    assert_failed_fast_on_nan(diverged)
    alert = assert_failed_fast_on_nan(anomaly)
    assert "anomaly detection" in alert["message"] and "returned nan values" in alert["message"]


def test_hugging_face_trainer_with_gradient_accumulation_is_counted_and_fails_fast_on_nan(cli):
    # Given a tiny BERT built in code (no download) and the HF Trainer on CPU, through accelerate
    healthy, diverged = run_all(
        cli,
        "hf_trainer.ipynb",
        {"steps": "20", "accumulate": "2"},  # two backward() per optimizer step: still one step each
        # AdamW's normalised updates keep the loss finite at lr 1e4; this rate overflows float32
        {"lr": "1e20", "steps": "400"},
    )
    assert_healthy(healthy, 20)
    assert_failed_fast_on_nan(diverged)


def test_a_compiled_training_step_is_counted_and_fails_fast_on_nan(cli):
    # Given torch.compile (inductor) over the whole step, optimizer included, or over the model alone
    healthy, diverged = run_all(
        cli,
        "compiled_step.ipynb",
        {"compile": "step"},
        {"compile": "model", "lr": "1e4", "steps": "3000"},
    )
    assert_healthy(healthy, 60)
    assert_failed_fast_on_nan(diverged)


def test_steps_a_grad_scaler_skips_are_progress_but_a_collapsed_scale_fails_fast(cli):
    # Given AMP on CPU with a GradScaler: an overflowing batch now and then makes it skip optimizer.step
    healthy, diverged = run_all(
        cli,
        "grad_scaler.ipynb",
        {"bad_every": "5"},
        {"lr": "1e4", "steps": "3000"},
    )
    assert job(healthy)["metrics"] == {"optimizer_steps": 48, "skipped": 12}
    assert_healthy(healthy, 60)  # the skipped steps count: no NaN alert for their Inf loss, no stall, no drop
    # a loss that diverged: Inf/NaN gradients at every scale, the scale collapses
    alert = assert_failed_fast_on_nan(diverged)
    assert "GradScaler" in alert["message"] and "scale fell to" in alert["message"]
