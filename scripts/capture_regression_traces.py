"""Capture the two real PyTorch profiler traces of cost10 (NOT used by the course at run time).

Needs PyTorch, which the course does not depend on. Run it in a throwaway venv outside the repo:

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0
    /tmp/torchvenv/bin/python scripts/capture_regression_traces.py course_lib/data

It trains the same tiny MLP twice under torch.profiler, before and after one code change, and
writes regression_before.json.gz and regression_after.json.gz (the exported Chrome trace, gzipped
unchanged with mtime 0). The change: the output Linear layer is kept in float64 (a "precision fix":
``fc2.double()``, its input cast with ``.double()`` and its output cast back with ``.float()``);
everything else — shapes, data, optimizer, schedule — is identical. Profiler: activities=[CPU],
record_shapes=True, schedule(wait=1, warmup=1, active=6, repeat=1), one thread. Timings are real,
so every capture differs.

The exported trace has no PyTorch version field. The script prints ``torch <version>: wrote
<file>`` for each file; course_lib/data/README.md records that version (2.13.0+cpu) for the
shipped traces, and is the only record of it.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile, schedule

IN_FEATURES = 256
HIDDEN = 1024
OUT_FEATURES = 512
BATCH = 64
WAIT, WARMUP, ACTIVE = 1, 1, 6


class MLP(torch.nn.Module):
    """Linear -> ReLU -> Linear; ``float64_output`` runs the output Linear in float64."""

    def __init__(self, float64_output: bool) -> None:
        super().__init__()
        self.float64_output = float64_output
        self.fc1 = torch.nn.Linear(IN_FEATURES, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, OUT_FEATURES)
        if float64_output:
            self.fc2.double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc1(x))
        if self.float64_output:
            return self.fc2(hidden.double()).float()
        return self.fc2(hidden)


def capture(float64_output: bool, out_path: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = MLP(float64_output)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    steps = WAIT + WARMUP + ACTIVE
    inputs = torch.randn(steps, BATCH, IN_FEATURES)
    targets = torch.randn(steps, BATCH, OUT_FEATURES)
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
        for step in range(steps):
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


def main(out_dir: str) -> None:
    capture(False, os.path.join(out_dir, "regression_before.json.gz"))
    capture(True, os.path.join(out_dir, "regression_after.json.gz"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
