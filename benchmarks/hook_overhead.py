"""In-process A/B of the monitor's per-step cost: the same torch MLP loop, alternately with and without
the jupyter-promote monitor (optimizer step hook, backward wrapper, finiteness check every 10 steps),
in one process, timed in CPU time of the training thread (the monitor's own thread is not counted:
it sleeps), so machine noise does not hide a 1-2 % effect.

Usage: python benchmarks/hook_overhead.py [--rounds N] [--steps N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from torch import nn

from jupyter_promote.runtime.events import EventLog
from jupyter_promote.runtime.monitor import Monitor


def loop(steps: int) -> float:
    torch.manual_seed(0)
    X, y = torch.randn(2048, 16), torch.randint(0, 2, (2048, 1)).float()
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()
    start = time.thread_time()  # CPU time of this thread: steady on a shared, noisy machine
    for _ in range(steps):
        idx = torch.randint(0, 2048, (64,))
        loss = loss_fn(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return steps / (time.thread_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--check-every", type=int, default=None, help="override MonitorSettings.check_every")
    args = parser.parse_args()
    torch.set_num_threads(1)
    loop(200)  # warm up
    plain, monitored = [], []
    settings = {} if args.check_every is None else {"check_every": args.check_every}
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            # ABBA order: alternate which variant goes first, so drift of the machine cancels out
            for variant in ("plain", "monitored") if round_no % 2 == 0 else ("monitored", "plain"):
                if variant == "plain":
                    plain.append(loop(args.steps))
                    continue
                monitor = Monitor(EventLog(f"{tmp}/events.jsonl", "bench"), settings, tmp)
                monitor.start()
                monitored.append(loop(args.steps))
                monitor.stop()
    ratios = [m / p for m, p in zip(monitored, plain, strict=False)]
    print(
        f"monitor hook overhead (in-process A/B, {args.rounds} rounds x {args.steps} steps): "
        f"plain {statistics.median(plain):.0f} steps/s, monitored {statistics.median(monitored):.0f} steps/s, "
        f"ratio of medians {statistics.median(monitored) / statistics.median(plain):.3f}, "
        f"median paired ratio {statistics.median(ratios):.3f} (target >= 0.98)"
    )


if __name__ == "__main__":
    main()
