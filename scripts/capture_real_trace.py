"""Capture the real PyTorch profiler trace shipped in course_lib/data (NOT used by the course).

Needs PyTorch, which the course does not depend on. Run it in a throwaway venv outside the repo:

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0
    /tmp/torchvenv/bin/python scripts/capture_real_trace.py course_lib/data/real_cpu_mlp.json.gz

It trains a tiny 2-layer MLP on random data with SGD for a few steps under torch.profiler
(activities=[CPU], record_shapes=True, schedule wait=1, warmup=1, active=2), exports the Chrome
trace unchanged and gzips it (mtime 0). Timings are real, so every capture differs.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile, schedule

IN_FEATURES = 32
HIDDEN = 64
OUT_FEATURES = 8
BATCH = 16
WAIT, WARMUP, ACTIVE = 1, 1, 2


def main(out_path: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, OUT_FEATURES),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    inputs = torch.randn(WAIT + WARMUP + ACTIVE, BATCH, IN_FEATURES)
    targets = torch.randn(WAIT + WARMUP + ACTIVE, BATCH, OUT_FEATURES)

    tmp_dir = tempfile.mkdtemp()
    raw_path = os.path.join(tmp_dir, "trace.json")

    def on_trace_ready(prof: torch.profiler.profile) -> None:
        prof.export_chrome_trace(raw_path)

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=on_trace_ready,
    ) as prof:
        for step in range(WAIT + WARMUP + ACTIVE):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(inputs[step]), targets[step])
            loss.backward()
            optimizer.step()
            prof.step()

    with open(raw_path, "rb") as src, open(out_path, "wb") as raw_out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw_out, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp_dir)
    print(f"torch {torch.__version__}: wrote {out_path} ({os.path.getsize(out_path)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "real_cpu_mlp.json.gz")
