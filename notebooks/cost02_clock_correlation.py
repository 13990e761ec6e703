# %% [markdown]
# # cost02 · Correlate events before subtracting timestamps from different clocks
#
# **Objective.** Separate CPU enqueue timing, device execution timing, causal identifiers, and
# uncertainty in cross-domain clock alignment.
#
# **Time:** 31 min · **Level:** advanced
#
# You will be able to
# - tell what a host timer around an asynchronous launch measures from what the device did, and
#   compute each kernel's queue delay;
# - join kernels to their launches by correlation id, never by time;
# - bound the offset between two hosts' clocks from their messages, and decide whether an
#   ordering across hosts is certain, impossible or undetermined;
# - correct for clock drift over a long run.
#
# **What you need:** cost01, pandas at the level of a boolean mask and a `merge`, and a picture
# of a data-parallel step (forward, backward, all-reduce, optimizer).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib import clocks, trace
from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_range,
    check_type,
    forbid,
    passed,
)
from course_lib.clocks import (
    fit_drift,
    interval_difference,
    offset_bounds,
    order_certainty,
    simulate_messages,
)
from course_lib.explorers.clock_alignment import clock_alignment_explorer
from course_lib.figures.clocks import (
    drift_fit_plot,
    launch_match_plot,
    launch_timeline,
    offset_bounds_plot,
)
from course_lib.trace import (
    GPU_CATEGORIES,
    LAUNCH_CATEGORIES,
    data_path,
    link_launches,
    load_trace,
    write_trace,
)
from course_lib.tracegen import COMM_STREAM, generate_dp_profile, load_dp_profile, message_pairs

rng = np.random.default_rng(2)  # the course's convention; the data below are fixed files
us, ms = 1e-6, 1e-3  # one microsecond and one millisecond in seconds

profiles = load_dp_profile()  # {rank: DataFrame}: a SYNTHETIC 4-rank data-parallel profile
messages = message_pairs(profiles)  # msg_id, src, dst, send_ts (src's clock), recv_ts (dst's)
sync_1h = pd.read_csv(data_path("clock_sync_1h.csv"))  # Exercise 5: an hour of sync messages


def pairs(src, dst):
    """(send on src's clock, receive on dst's clock) of every message src -> dst, an (N, 2) array."""
    m = messages[(messages["src"] == src) & (messages["dst"] == dst)]
    return m[["send_ts", "recv_ts"]].to_numpy()


def nccl_kernels(rank):
    """The rank's all-reduce kernels on the NCCL stream, in start order (4 per step)."""
    df = profiles[rank]
    return df[(df["tid"] == COMM_STREAM) & (df["cat"] == "kernel")].sort_values("ts")


def events_to_frame(events):
    """Events (dicts, ts and dur in seconds) -> the DataFrame load_trace returns, via a real file."""
    with tempfile.TemporaryDirectory() as tmp:
        return load_trace(write_trace(events, Path(tmp) / "trace.json"))


# %% [markdown]
# ## 1. A launch returns long before its kernel runs
#
# The traces in this lesson are **synthetic**: `course_lib.tracegen` simulates four data-parallel
# ranks training an 8-layer model for three steps and writes one PyTorch profiler (Kineto) file
# per rank. `load_dp_profile()` reads each into a DataFrame, one row per event, times in
# **seconds**: `name`, `cat`, `ts`, `dur`, `pid`, `tid`, `correlation`. GPU events have `pid` =
# device and `tid` = stream: 7 computes, 20 runs NCCL.

# %%
rank0 = profiles[0]
display(rank0.groupby("cat").size().rename("events").to_frame().T)

# %% [markdown]
# `cudaLaunchKernel` does not run a kernel: it appends it to a stream's queue and returns, and the
# device runs the queue in order. A timer on the host around a call, or around a whole forward
# pass, measures the **enqueue**, not the execution. The **queue delay**
#
# $$q = t^{\text{start}}_{\text{kernel}} - t^{\text{end}}_{\text{launch}}$$
#
# is how long a kernel waited between the return of the launch call that enqueued it and its
# start on the device. A large $q$ means the CPU runs ahead and the device is the bottleneck; $q$
# near zero on every kernel means the device waits for the CPU (launch-bound). `link_launches`
# joins each GPU event to its launch (section 2 says how) and computes $q$.

# %%
step1 = rank0[rank0["name"] == "ProfilerStep#1"].iloc[0]
forward = rank0[
    (rank0["name"] == "DistributedDataParallel.forward") & (rank0["ts"] >= step1["ts"])
].iloc[0]
links = link_launches(rank0)
fwd_start, fwd_end = forward["ts"], forward["ts"] + forward["dur"]
in_forward = links[(links["launch_start"] >= fwd_start) & (links["launch_end"] <= fwd_end)]
sync = rank0[(rank0["name"] == "cudaStreamSynchronize") & (rank0["ts"] >= step1["ts"])].iloc[0]
print(f"host: DistributedDataParallel.forward lasts {forward['dur'] / ms:.2f} ms")
print(
    f"device: its {len(in_forward)} kernels run "
    f"{(in_forward['kernel_end'].max() - in_forward['kernel_start'].min()) / ms:.1f} ms; "
    f"queue delay of the first {in_forward['queue_delay'].iloc[0] / us:.0f} µs, "
    f"of the last {in_forward['queue_delay'].iloc[-1] / ms:.1f} ms"
)
print(
    f"{(sync['ts'] - fwd_start) / ms:.1f} ms after the forward began the CPU has launched the "
    f"whole step and waits {sync['dur'] / ms:.1f} ms in cudaStreamSynchronize"
)
launch_timeline(
    rank0,
    fwd_start - 0.3 * ms,
    fwd_start + 13.5 * ms,
    title="Rank 0, the forward pass of ProfilerStep#1: launches (top) and kernels (bottom)",
)
plt.show()

# %% [markdown]
# Each grey line joins a launch to the kernel it enqueued. The forward lasts 0.55 ms on the host;
# its 16 kernels take 12.4 ms on the device. The lines fan out: the CPU launches a kernel every
# 34 µs, a GEMM (1.3 ms on the device) or a GELU (0.24 ms), so each waits longer than the last.
# The CPU then blocks in `cudaStreamSynchronize` (inside `loss.item()`) until the device catches
# up; without that sync the host would call the step done after 5 ms, with 43 ms still queued.
#
# **A negative queue delay is data, not an error.** In real traces a kernel can start before its
# launch call returns (on an idle device), and device timestamps reach the host clock with an
# error of their own. Keep the sign. Holistic Trace Analysis computes the same difference as
# "launch delay" but clips it at zero (`cuda_kernel_launch_stats` in
# `hta/analyzers/cuda_kernel_analysis.py`), which hides exactly these kernels.

# %% [markdown]
# ## 2. Join launches to kernels by correlation id, never by time
#
# CUDA's profiling interface (CUPTI) gives every runtime call a **correlation id** "identical to
# the correlation ID in the memcpy, memset, or kernel activity record that is associated with
# this function" (CUPTI documentation, `CUpti_ActivityAPI::correlationId`); Kineto writes it into
# both events' `args.correlation`. The join is an equality join on that id: GPU events
# (`GPU_CATEGORIES`) against runtime and driver calls (`LAUNCH_CATEGORIES`). "The launch that
# ended last before the kernel started" fails as soon as the CPU runs ahead:

# %%
step_links = links[
    (links["kernel_start"] >= step1["ts"]) & (links["kernel_start"] < step1["ts"] + step1["dur"])
]
calls = rank0[rank0["cat"].isin(LAUNCH_CATEGORIES) & rank0["correlation"].notna()].copy()
calls["end"] = calls["ts"] + calls["dur"]
nearest = pd.merge_asof(  # for each kernel, the call that ended last before it started
    step_links[["kernel_start", "correlation"]],
    calls[["end", "correlation", "name"]].sort_values("end"),
    left_on="kernel_start",
    right_on="end",
    suffixes=("", "_nearest"),
)
wrong = (nearest["correlation_nearest"] != nearest["correlation"]).to_numpy()
print(f"{wrong.sum()} of {len(wrong)} GPU events of the step get the wrong launch by time")
print("the launch they get:", nearest.loc[wrong, "name"].value_counts().to_dict())
launch_match_plot(
    step_links["kernel_start"].to_numpy(),
    step_links["launch_end"].to_numpy(),
    nearest["end"].to_numpy(),
    origin=step1["ts"],
    title="Rank 0, ProfilerStep#1: which launch does each GPU event belong to?",
)
plt.show()

# %% [markdown]
# Blue: the true launches all fall within 1.4 ms while their kernels spread over 45 ms. Orange:
# the time join gives 44 of the 47 GPU events the wrong launch, 43 of them the `cudaMemcpyAsync`
# that copies the loss, only because it was the last launch before the CPU blocked. Every
# "launch → kernel" pair in a report built this way names the wrong op. Correlation ids count
# from 1 in every process: after concatenating ranks, join on (rank, correlation).

# %% [markdown]
# ## 3. Every host has its own clock: a message bounds the offset from both sides
#
# Within one process Kineto stamps CPU and GPU events on the host's clock, and processes on one
# host read the same clock. Different hosts do not: their clocks disagree by an **offset**, often
# milliseconds, far more than the microseconds you want to compare. The generator gives each rank
# its own clock, as if each ran on its own host. Subtract a send time on one rank from the
# matching receive time on another:

# %%
latency = messages["recv_ts"] - messages["send_ts"]  # two different clocks!
print(f"{(latency < 0).sum()} of {len(messages)} messages 'arrive before they were sent'")

# %% [markdown]
# A message cannot arrive before it leaves. Write the offset of clock A relative to clock B as
# $\theta$, so that $t_A = t_B + \theta$. A message A → B leaves at $S_A$ on A's clock, which B
# reads as $S_A - \theta$, and arrives later, at $R_B$; a message B → A leaves at $S_B$ and arrives
# at $R_A$:
#
# $$R_B > S_A - \theta \;\Rightarrow\; \theta > S_A - R_B, \qquad
#   R_A > S_B + \theta \;\Rightarrow\; \theta < R_A - S_B .$$
#
# Every message A → B raises a floor, every message B → A lowers a ceiling:
# $\max_i (S_A - R_B)_i < \theta < \min_j (R_A - S_B)_j$, assuming only that messages take a
# positive time. dPRO aligns machines with the same constraint (Hu et al., MLSys 2022), then picks
# one offset per machine with an optimizer; here you keep the whole interval. Its **width** is the
# sum of the fastest one-way delay in each direction, so more messages can only narrow it. Its
# **midpoint** is NTP's offset estimate (RFC 5905, §8), exact only if both one-way delays are
# equal.
#
# The generator's message events (`cat` `"p2p"`) are its own invention: a real Kineto trace
# records NCCL kernels, not the messages inside them. On a real job you create the pairs, for
# example by exchanging clock readings between ranks (more sources in "Going further"). Rank 3
# as A, rank 0 as B:

# %%
theta_30 = offset_bounds(pairs(3, 0), pairs(0, 3))  # A = rank 3, B = rank 0
print(f"{theta_30.lower / us:.2f} µs < θ < {theta_30.upper / us:.2f} µs")
# The generator knows the truth (it is never written to the files): regenerate to compare.
truth = generate_dp_profile(num_ranks=4, num_layers=8, num_buckets=4, num_steps=3, seed=0)
true_30 = truth[3].attrs["clock_offset"] - truth[0].attrs["clock_offset"]
offset_bounds_plot(
    pairs(3, 0), pairs(0, 3), true_offset=true_30, title="Rank 3 (A) against rank 0 (B)"
)
plt.show()

# %% [markdown]
# Each ▲ is the floor set by one message 3 → 0, each ▼ the ceiling of one message 0 → 3; hollow
# markers lie beyond the axis (messages that waited for their receiver to reach the all-reduce).
# The tightest floor and ceiling leave an 11.4 µs band around the true −732.5 µs.

# %% [markdown]
# ## 4. An order across clocks is certain, impossible or undetermined
#
# Event $a$ is stamped $t_a$ on A's clock, event $b$ is stamped $t_b$ on B's. With
# $d = t_a - t_b$, the true time from $b$ to $a$ is
# $d - \theta \in (d - \theta_{\max},\, d - \theta_{\min})$ (`interval_difference`), and "$a$
# happened before $b$" means $\theta > d$. Over the interval it is
#
# - **certain** if $d \le \theta_{\min}$, true for every admissible offset;
# - **impossible** if $d \ge \theta_{\max}$;
# - **undetermined** otherwise (`order_certainty`).
#
# Comparing raw timestamps, $d < 0$, silently assumes $\theta = 0$. The all-reduce kernels of
# rank 3 (A) and rank 0 (B):

# %%
a, b = nccl_kernels(3), nccl_kernels(0)
for label, t_a, t_b in (
    ("ProfilerStep#0, bucket 0, start", a["ts"].iloc[0], b["ts"].iloc[0]),
    ("ProfilerStep#1, bucket 0, start", a["ts"].iloc[4], b["ts"].iloc[4]),
    ("ProfilerStep#0, bucket 0, end", a["ts"].iloc[0] + a["dur"].iloc[0],
     b["ts"].iloc[0] + b["dur"].iloc[0]),
):  # fmt: skip
    gap = interval_difference(t_a, t_b, theta_30)
    print(
        f"{label:32}  raw d = {(t_a - t_b) / us:+8.1f} µs   true gap in "
        f"({gap.lower / us:+7.1f}, {gap.upper / us:+7.1f}) µs   "
        f"rank 3 first? {order_certainty(t_a, t_b, theta_30)}"
    )

# %% [markdown]
# The raw timestamps say rank 3 started the first all-reduce 192 µs *before* rank 0; in truth it
# started 535 to 546 µs *after*: "impossible". A straggler analysis on raw timestamps blames the
# wrong rank. The second row is certain. The third is undetermined, and rightly so: in this
# generator a collective ends at the same true instant on every rank (in a real ring all-reduce
# the ends differ by the last transfer steps), and no set of messages can order simultaneous
# events. An honest report says "within 11 µs, we cannot tell".

# %% [markdown]
# ## 5. Clocks drift: an offset holds only near the messages that measured it
#
# Clocks also run at slightly different rates:
#
# $$t_A = \theta_0 + (1 + \rho \cdot 10^{-6})\, t_B ,$$
#
# where $\theta_0$ is the offset (s) at $t_B = 0$ and $\rho$ the **drift** in parts per million:
# A gains $\rho$ µs on B every second, so $\theta(t) = \theta_0 + \rho \cdot 10^{-6}\, t$; 10 ppm
# is 36 ms an hour. Over the profile's 0.15 s that is a microsecond, inside the interval. Over a
# long run one interval for all messages is empty. Take one interval per window (a burst of
# messages) and fit the line through their midpoints (`fit_drift`). Ten minutes at 10 ppm:

# %%
windows = [
    simulate_messages(
        20, offset=0.8 * ms, drift_ppm=10.0, min_delay=4 * us, mean_extra_delay=20 * us,
        span=0.01, start=60.0 * k, seed=40 + k,
    )
    for k in range(11)  # a burst of 20 messages each way every minute
]  # fmt: skip
try:
    offset_bounds(np.vstack([w[0] for w in windows]), np.vstack([w[1] for w in windows]))
except ValueError as err:
    print(f"one offset for all ten minutes: ValueError ({str(err).split(':')[0]})")
t_ref = np.array([w[1][:, 0].mean() for w in windows])  # each window's time on B's clock
per_window = [offset_bounds(*w) for w in windows]
fit = fit_drift(t_ref + np.array([iv.midpoint for iv in per_window]), t_ref)
print(f"fitted drift {fit.drift_ppm:.3f} ppm, residual {fit.residual / us:.2f} µs")
left, right = drift_fit_plot(
    t_ref, np.array([iv.lower for iv in per_window]), np.array([iv.upper for iv in per_window]), fit
)
left.set_title("θ climbs 6 ms in ten minutes at 10 ppm", loc="left")
plt.show()

# %% [markdown]
# Left: each window pins $\theta$ to about 9 µs, a dot at this scale, and the dots climb 6 ms;
# an offset measured once (dashed) is 6 ms wrong at the end. Right: every interval holds the
# fitted line, and $\hat\rho$ is within a few thousandths of a ppm of the true 10 ppm. To put an
# event stamped $t_A$ on B's clock, invert the line:
# $t_B = (t_A - \hat\theta_0)/(1 + \hat\rho \cdot 10^{-6})$, `fit.to_reference(t_A)`. Between
# windows the line assumes a constant drift (temperature changes it, NTP slews clocks on purpose):
# keep each window's interval as the error bar.

# %% [markdown]
# ## Explore
#
# Two simulated hosts exchange messages for one second; A's clock starts 1440 µs ahead and may
# drift. Left: each message's bound on $\theta$, the constant-offset interval (grey) and five
# per-window intervals with their drift line (green). Right: seven pairs of events, $a$ on A and
# $b$ on B, with true gaps from −40 to +30 µs; each bar is what the grey interval allows for
# $t(a) - t(b)$, coloured by the verdict on "a before b".
#
# 1. Drag **messages each way** from 1 to 200: the band narrows fast, then stops near twice the
#    delay floor. The −2 and +5 µs pairs stay undetermined.
# 2. Lower the **delay floor** to 1 µs with 200 messages: every pair is decided. Raise the
#    **jitter**: you need more messages for the same width.
# 3. At 10 messages, set the **drift** to 20 ppm: the band stays narrow and two verdicts turn
#    confidently false (red). A non-empty interval does not prove the clock model.

# %%
clock_alignment_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases when graded. Times are floats in seconds
# (`3 * us` is 3 µs). You may use `course_lib` except where an exercise says not to.
#
# ### Exercise 1 — Implement the queue delay by correlation id (2 points)
#
# Write `queue_delays(df)`: for one process's trace `df` (as `load_trace` returns it), a numpy
# array of floats with the queue delay $q$ (s) of every GPU event (a row whose `cat` is in
# `GPU_CATEGORIES`), **in the order they appear in `df`**. Its launch is the row whose `cat` is in
# `LAUNCH_CATEGORIES` with the same `correlation`; assume it is in `df`. Keep negative values.
# While the grade cell runs your function, `trace.link_launches` is disabled: join the two sides
# yourself (a pandas `merge` is fine).


# %% nbgrader={"grade": false, "grade_id": "queue_delays_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def queue_delays(df):
    """Kernel start − launch end (s) of every GPU event of df, in df's row order, joined by correlation id."""
    ### BEGIN SOLUTION
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    launch_end = pd.Series(
        (launches["ts"] + launches["dur"]).to_numpy(), index=launches["correlation"].to_numpy()
    )
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    return gpu["ts"].to_numpy(dtype=float) - launch_end.loc[gpu["correlation"].to_numpy()].to_numpy(
        dtype=float
    )
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "queue_delays_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: queue_delays(df) -> ndarray of kernel start − launch end (s), joined by correlation id."""
_small = events_to_frame(
    [  # stream 7 is busy, so its kernel waits; a sync call carries a correlation id too
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 0.0, "dur": 5 * us, "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10 * us, "dur": 5 * us, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "allreduce_kernel", "pid": 0, "tid": 20,
         "ts": 20 * us, "dur": 30 * us, "args": {"correlation": 2, "stream": 20, "device": 0}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1,
         "ts": 20 * us, "dur": 40 * us, "args": {"correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
         "ts": 50 * us, "dur": 10 * us, "args": {"correlation": 1, "stream": 7, "device": 0}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1,
         "ts": 70 * us, "dur": 8 * us, "args": {"correlation": 4}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
         "ts": 75 * us, "dur": 2 * us, "args": {"correlation": 4, "stream": 7, "device": 0}},
    ]
)  # fmt: skip
with forbid((trace, "link_launches"), exercise="Exercise 1"):
    _q_small = queue_delays(_small)
check_type("queue_delays(...)", _q_small, np.ndarray)
check_array("queue_delays(small trace).shape", np.array(_q_small.shape), [3])
check_float("small trace: queue delay of allreduce_kernel (row 2)", _q_small[0], 5 * us,
            unit="s", known_wrong={-5 * us: "launch end − kernel start: the sign is reversed",
                                   10 * us: "kernel start − launch START: q counts from the "
                                   "launch's end", 5.0: "microseconds: the answer is in seconds"})  # fmt: skip
check_float(
    "small trace: queue delay of gemm_kernel (row 4)",
    _q_small[1],
    45 * us,
    unit="s",
    known_wrong={
        35 * us: "the launch that ended last before the kernel started (correlation 2): a "
        "nearest-in-time join, not the correlation id",
        50 * us: "kernel start − launch START: the queue delay counts from the launch's end",
    },
)
check_float("small trace: queue delay of the memset (row 6), which starts before its launch "
            "returns", _q_small[2], -3 * us, unit="s",
            known_wrong={0.0: "clamped at zero: a negative delay is data"})  # fmt: skip
### BEGIN HIDDEN TESTS
_shuffled = profiles[2].sample(frac=1.0, random_state=7)
_cases = {f"rank {r}": profiles[r] for r in (0, 1, 2, 3)} | {"rank 2, rows shuffled": _shuffled}
with forbid((trace, "link_launches"), exercise="Exercise 1 (hidden cases)"):
    _got = {name: queue_delays(df) for name, df in _cases.items()}
for _name, _df in _cases.items():
    _ref = link_launches(_df).set_index("kernel_index")
    _rows = _df.index[_df["cat"].isin(GPU_CATEGORIES)]
    _expected = _ref.loc[_rows, "queue_delay"].to_numpy()
    _calls = _df[_df["cat"].isin(LAUNCH_CATEGORIES) & _df["correlation"].notna()]
    _ends = np.sort((_calls["ts"] + _calls["dur"]).to_numpy())
    _starts = _df.loc[_rows, "ts"].to_numpy()
    _by_time = _starts - _ends[np.searchsorted(_ends, _starts, side="right") - 1]
    check_type(f"{_name}: queue_delays(df)", _got[_name], np.ndarray)
    check_array(f"{_name}: queue_delays(df).shape", np.array(_got[_name].shape),
                [len(_rows)])  # fmt: skip
    check_float(
        f"{_name}: mean of queue_delays(df)",
        float(np.mean(_got[_name])),
        float(_expected.mean()),
        unit="s",
        known_wrong={
            float(_by_time.mean()): "a nearest-in-time join (the call that ended last before "
            "the kernel started), not the correlation id",
            float((_starts - _ref.loc[_rows, "launch_start"].to_numpy()).mean()): "kernel "
            "start − launch START",
            float(_expected.mean()) * 1e6: "microseconds: the answer is in seconds",
        },
    )
    check_array(f"{_name}: queue_delays(df)", _got[_name], _expected, rtol=0, atol=1e-12)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Device time of a forward pass (2 points)
#
# On **rank 2**, in **`ProfilerStep#2`**, the `DistributedDataParallel.forward` annotation is
# what the host measured. Set `forward_device_time` (a float, seconds) to the time the device
# spent on that forward: from the start of the first to the end of the last GPU event **launched
# inside the annotation** (its launch call lies within the annotation; find its GPU event by
# correlation id, `link_launches` is allowed here).

# %% nbgrader={"grade": false, "grade_id": "forward_device_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_r2 = profiles[2]
_step = _r2[_r2["name"] == "ProfilerStep#2"].iloc[0]
_fwd = _r2[(_r2["name"] == "DistributedDataParallel.forward") & (_r2["ts"] >= _step["ts"])].iloc[0]
_links = link_launches(_r2)
_mine = _links[
    (_links["launch_start"] >= _fwd["ts"]) & (_links["launch_end"] <= _fwd["ts"] + _fwd["dur"])
]
forward_device_time = float(_mine["kernel_end"].max() - _mine["kernel_start"].min())
### END SOLUTION
print(f"device {forward_device_time / ms:.3f} ms")

# %% nbgrader={"grade": true, "grade_id": "forward_device_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: device time (s) of the GPU work launched inside rank 2's forward of ProfilerStep#2."""
check_range("forward_device_time", forward_device_time, 0.0, 0.1, what="seconds, not ms")
### BEGIN HIDDEN TESTS
check_float(  # computed once with link_launches(profiles[2]) as in the exercise
    "forward_device_time",
    forward_device_time,
    0.013031184,
    rtol=0,
    atol=1 * us,
    unit="s",
    known_wrong={
        0.000544593: "the host's enqueue time, the annotation's own duration",
        0.001445868: "the GPU events that started while the annotation was open: a join by "
        "time, not by correlation id",
        0.001482862: "the GPU events that overlap the annotation in time: a join by time",
        0.013064929: "from the annotation's start to the last kernel's end: it includes the "
        "first launch and its queue delay",
        0.012785919: "rank 0's forward: the exercise asks for rank 2",
        0.012658138: "the forward of ProfilerStep#1: the exercise asks for ProfilerStep#2",
        0.012581059: "the forward of ProfilerStep#0 (the first in the trace), not ProfilerStep#2",
    },
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Implement the offset bounds (2 points)
#
# Write `offset_interval(a_to_b, b_to_a)` returning the tuple `(lower, upper)` of two floats, the
# bounds $\max(S_A - R_B) < \theta < \min(R_A - S_B)$ of section 3 with $t_A = t_B + \theta$.
# `a_to_b` has rows `(S_A, R_B)`, `b_to_a` rows `(S_B, R_A)`; each is a list of pairs or an
# (N, 2) array, and either can be empty, which leaves that side unbounded: `-np.inf` or `np.inf`.
# Raise a `ValueError` if both are empty, or if `lower > upper` (mismatched pairs or swapped
# columns). The grade cell disables `clocks.offset_bounds` while your function runs.


# %% nbgrader={"grade": false, "grade_id": "offset_interval_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def offset_interval(a_to_b, b_to_a):
    """(lower, upper) of the clock offset θ (t_A = t_B + θ) allowed by the messages."""
    ### BEGIN SOLUTION
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("no messages: need at least one in either direction")
    lower = float(np.max(ab[:, 0] - ab[:, 1])) if len(ab) else -np.inf
    upper = float(np.min(ba[:, 1] - ba[:, 0])) if len(ba) else np.inf
    if lower > upper:
        raise ValueError(f"inconsistent messages: lower bound {lower} > upper bound {upper}")
    return lower, upper
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "offset_interval_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: offset_interval(a_to_b, b_to_a) -> (lower, upper), without clocks.offset_bounds."""
with forbid((clocks, "offset_bounds"), exercise="Exercise 3"):
    _small = offset_interval([[10.0, 9.5], [20.0, 19.6]], [[5.0, 5.7], [8.0, 8.9]])
check_type("offset_interval(...)", _small, tuple)
check_float(
    "offset_interval(small case)[0], the lower bound",
    _small[0],
    0.5,
    unit="s",
    known_wrong={
        0.4: "the smallest S_A − R_B: the LARGEST floor binds",
        -0.4: "the largest R_B − S_A: receive minus send; the floor is S_A − R_B",
        -0.5: "R_B − S_A: the sign is reversed",
        -0.7: "the offset of B relative to A (−upper): θ is t_A − t_B",
        0.7: "the upper bound: return (lower, upper) in that order",
    },
)
check_float(
    "offset_interval(small case)[1], the upper bound",
    _small[1],
    0.7,
    unit="s",
    known_wrong={0.9: "the largest R_A − S_B: the SMALLEST ceiling binds",
                 -0.5: "the offset of B relative to A (−lower): θ is t_A − t_B",
                 0.5: "the lower bound: return (lower, upper) in that order"},
)  # fmt: skip
### BEGIN HIDDEN TESTS
_msg_cases = [simulate_messages(n, offset=off, drift_ppm=0.0, min_delay=dmin,
                                mean_extra_delay=extra, span=span, start=start, seed=s)
              for n, off, dmin, extra, span, start, s in (
                  (1, 2.5e-3, 4e-6, 20e-6, 1.0, 0.0, 11),
                  (37, -1.7e-3, 2e-6, 50e-6, 5.0, 5.17e6, 12),  # ts as large as in real traces
                  (200, 0.0, 1e-6, 1e-6, 0.1, 100.0, 13),
              )]  # fmt: skip
_msg_cases.append((pairs(1, 0), pairs(0, 1)))  # the 4-rank profile, ranks 1 and 0
_msg_cases.append((pairs(1, 0).tolist(), pairs(0, 1).tolist()))  # lists, not arrays
with forbid((clocks, "offset_bounds"), exercise="Exercise 3 (hidden cases)"):
    _answers = [offset_interval(ab, ba) for ab, ba in _msg_cases]
    _one_way_ab = offset_interval(pairs(3, 0), np.empty((0, 2)))
    _one_way_ba = offset_interval([], pairs(0, 3))
for _k, ((_ab, _ba), _got) in enumerate(zip(_msg_cases, _answers, strict=True)):
    _iv = offset_bounds(_ab, _ba)
    _ab, _ba = np.asarray(_ab), np.asarray(_ba)
    check_type(f"case {_k}", _got, tuple)
    check_float(f"case {_k}: lower", _got[0], _iv.lower, rtol=0, atol=1e-8, unit="s",
                known_wrong={float(np.min(_ab[:, 0] - _ab[:, 1])): "the loosest floor (min)",
                             -_iv.upper: "the offset of B relative to A"})  # fmt: skip
    check_float(f"case {_k}: upper", _got[1], _iv.upper, rtol=0, atol=1e-8, unit="s",
                known_wrong={float(np.max(_ba[:, 1] - _ba[:, 0])): "the loosest ceiling (max)",
                             -_iv.lower: "the offset of B relative to A"})  # fmt: skip
check_float("A -> B only: lower", _one_way_ab[0], offset_bounds(pairs(3, 0), []).lower,
            rtol=0, atol=1e-12)  # fmt: skip
check_choice("A -> B only: upper", "inf" if _one_way_ab[1] == np.inf else repr(_one_way_ab[1]),
             "inf", {"inf": "unbounded above"})  # fmt: skip
check_choice("B -> A only: lower", "-inf" if _one_way_ba[0] == -np.inf else repr(_one_way_ba[0]),
             "-inf", {"-inf": "unbounded below"})  # fmt: skip
check_float("B -> A only: upper", _one_way_ba[1], offset_bounds([], pairs(0, 3)).upper,
            rtol=0, atol=1e-12)  # fmt: skip
_raised = []
for _ab, _ba in (
    ([], []),
    (pairs(1, 0)[:, ::-1], pairs(0, 1)[:, ::-1]),  # (receive, send): columns swapped
    ([[1.0, 0.2]], [[0.0, 0.5]]),
):
    try:
        with forbid((clocks, "offset_bounds"), exercise="Exercise 3 (hidden cases)"):
            offset_interval(_ab, _ba)
        _raised.append("returned")
    except ValueError:
        _raised.append("ValueError")
check_choice("no messages at all", _raised[0], "ValueError",
             {"ValueError": "raised", "returned": "returned a value for no messages"})  # fmt: skip
check_choice("swapped columns (lower > upper)", _raised[1], "ValueError",
             {"ValueError": "raised", "returned": "returned an empty interval"})  # fmt: skip
check_choice("contradicting messages", _raised[2], "ValueError",
             {"ValueError": "raised", "returned": "returned an empty interval"})  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Certain, impossible or undetermined? (2 points)
#
# Take **rank 1 as A** and **rank 0 as B**, with their messages `pairs(1, 0)` and `pairs(0, 1)`
# (setup cell). For each statement, is it `"certain"`, `"impossible"` or `"undetermined"`? Set
# `verdicts` to a tuple of four strings, in this order:
#
# 1. Rank 1's first all-reduce kernel of `ProfilerStep#1` (`nccl_kernels(1).iloc[4]`) **starts**
#    before rank 0's (`nccl_kernels(0).iloc[4]`).
# 2. Rank 1's `ProfilerStep#2` annotation starts before rank 0's.
# 3. The all-reduce kernel of statement 1 **ends** on rank 1 before it ends on rank 0.
# 4. Rank 1's first `DataLoader` annotation (in `ProfilerStep#0`) starts before rank 0's.

# %% nbgrader={"grade": false, "grade_id": "verdicts_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_theta_10 = offset_bounds(pairs(1, 0), pairs(0, 1))
_k1, _k0 = nccl_kernels(1).iloc[4], nccl_kernels(0).iloc[4]


def _start(rank, name):
    frame = profiles[rank]
    return frame.loc[frame["name"] == name, "ts"].iloc[0]


verdicts = tuple(
    str(order_certainty(t_a, t_b, _theta_10))
    for t_a, t_b in (
        (_k1["ts"], _k0["ts"]),
        (_start(1, "ProfilerStep#2"), _start(0, "ProfilerStep#2")),
        (_k1["ts"] + _k1["dur"], _k0["ts"] + _k0["dur"]),
        (_start(1, "DataLoader"), _start(0, "DataLoader")),
    )
)
### END SOLUTION
print(verdicts)

# %% nbgrader={"grade": true, "grade_id": "verdicts_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: four verdicts ("certain", "impossible", "undetermined") for rank 1 (A) vs rank 0 (B)."""
check_type("verdicts", verdicts, tuple)
check_array("len(verdicts)", np.array([len(verdicts)]), [4])
for _v in verdicts:
    check_choice("each verdict", _v, _v if _v in ("certain", "impossible", "undetermined") else "",
                 {"certain": "", "impossible": "", "undetermined": ""})  # fmt: skip
### BEGIN HIDDEN TESTS
_why = {
    1: {
        "impossible": "what the raw timestamps say (θ = 0); rank 1's clock is ~1.44 ms ahead",
        "undetermined": "d = 1361 µs is below the lower bound 1436.9 µs: certain",
    },
    2: {
        "certain": "what the raw timestamps say, or the interval with the roles of A and B "
        "swapped; d = 1457 µs is above the upper bound 1447.7 µs",
        "undetermined": "d = 1457 µs is above the upper bound 1447.7 µs",
    },
    3: {
        "certain": "the interval allows either order: d = 1442.6 µs lies inside "
        "(1436.9, 1447.7) µs",
        "impossible": "what the raw timestamps or the midpoint offset say; the interval "
        "(1436.9, 1447.7) µs holds d = 1442.6 µs, so either order is possible",
    },
    4: {
        "impossible": "what the raw timestamps say (θ = 0); d = 1435.2 µs is below the lower "
        "bound 1436.9 µs",
        "undetermined": "d = 1435.2 µs is below the lower bound 1436.9 µs: certain",
    },
}
for _i, (_got, _want) in enumerate(
    zip(verdicts, ("certain", "impossible", "undetermined", "certain"), strict=True), start=1
):
    check_choice(f"verdicts[{_i - 1}] (statement {_i})", _got, _want, {_want: "right"} | _why[_i])
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Drift-corrected alignment over an hour (2 points)
#
# `sync_1h` holds an hour of clock-sync messages between hosts A and B: every 300 s a burst of 20
# messages each way (`window` 0–12; `"A->B"` rows are $(S_A, R_B)$, `"B->A"` rows $(S_B, R_A)$).
# B's clock is the reference, and no single offset fits the hour.
#
# 1. Compute each window's offset interval and its midpoint.
# 2. Fit $t_A = \theta_0 + (1 + \rho \cdot 10^{-6})\, t_B$ with `fit_drift` through the points
#    (A's reading, B's reading) $= (t + \text{midpoint},\ t)$, with $t$ the window's time on B's
#    clock (e.g. the mean send time of its B → A messages).
# 3. Set `drift_ppm_fit` to $\hat\rho$ in ppm (a float, to 0.01 ppm) and `event_on_b` to the
#    time on B's clock (a float, s, to the microsecond) of an event A stamps at $t_A = 3412.0$ s.

# %% nbgrader={"grade": false, "grade_id": "drift_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_t_b, _mid = [], []
for _w, _g in sync_1h.groupby("window"):
    _ab = _g[_g["direction"] == "A->B"][["send_ts", "recv_ts"]].to_numpy()
    _ba = _g[_g["direction"] == "B->A"][["send_ts", "recv_ts"]].to_numpy()
    _t_b.append(_ba[:, 0].mean())
    _mid.append(offset_bounds(_ab, _ba).midpoint)
_fit = fit_drift(np.array(_t_b) + np.array(_mid), np.array(_t_b))
drift_ppm_fit = _fit.drift_ppm
event_on_b = float(_fit.to_reference(3412.0))
### END SOLUTION
print(f"drift {drift_ppm_fit:.3f} ppm; the event is at t_B = {event_on_b:.6f} s")

# %% nbgrader={"grade": true, "grade_id": "drift_ppm_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5a: the drift of A's clock relative to B's, in ppm, fitted through window midpoints."""
check_range("drift_ppm_fit", drift_ppm_fit, -100.0, 100.0, what="parts per million, not a ratio")
### BEGIN HIDDEN TESTS
check_float(  # computed once with the solution's fit
    "drift_ppm_fit",
    drift_ppm_fit,
    -15.6788,
    rtol=0,
    atol=0.01,
    unit="ppm",
    known_wrong={
        15.6791: "the drift of B relative to A: fit_drift(local, reference) takes A's readings first",
        0.0: "no drift at all — or the drift as a ratio (about −1.6e-5), not parts per million",
    },
)
### END HIDDEN TESTS
passed("Exercise 5a")

# %% nbgrader={"grade": true, "grade_id": "event_on_b_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5b: the time on B's clock (s) of the event A stamps at t_A = 3412.0 s, to 1 µs."""
check_range("event_on_b", event_on_b, 3400.0, 3420.0, what="seconds on B's clock, near 3412 s")
### BEGIN HIDDEN TESTS
check_float(  # compared as event_on_b − 3412 s, so that the digits that differ show
    "event_on_b − 3412.0 s",
    event_on_b - 3412.0,
    0.0519604,
    rtol=0,
    atol=1 * us,
    unit="s",
    known_wrong={
        0.0: "the raw timestamp: A's clock is not B's",
        -0.0015366: "the first window's offset only: 53 ms of drift accumulate in an hour",
        0.0502046: "the nearest window's offset (3300 s): 112 s of drift are 1.8 ms",
        -0.0519596: "fit.to_local: that maps B's clock to A's, the other way round",
        0.0519645: "a line through the windows' LOWER bounds: use the midpoints",
        0.0519564: "a line through the windows' UPPER bounds: use the midpoints",
        0.0519775: "a line through the A → B messages themselves: that ignores their delay",
    },
)
### END HIDDEN TESTS
passed("Exercise 5b")

# %% [markdown]
# ### Explained answer — Why `time.time()` under-reports GPU time (2 points, graded by hand)
#
# A colleague times the forward pass of a GPU model with
# `t0 = time.time(); out = model(x); t1 = time.time()` and reports `t1 - t0` as "the forward
# time". In four to six sentences: what does `t1 - t0` measure, why is it shorter than the GPU
# time (use Exercise 2: that forward's annotation lasts 0.54 ms on the host), when could it also
# be *longer* than the GPU time, and how would you measure the device time correctly?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_host_timer", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Kernel launches are asynchronous:
# `model(x)` returns as soon as the CPU has enqueued the forward's kernels, so `t1 - t0` measures
# the host's enqueue time — Python, the framework's dispatch and the launch calls — not the
# execution. On rank 2 the forward annotation lasts 0.54 ms while its kernels run for 13.0 ms on
# the device: the host timer misses 96 % of the work, which runs later, under whatever the host
# times next (typically the first call that synchronizes, such as `loss.item()`, which then
# looks slow). It can also read *longer* than the GPU time when the forward is launch-bound (many
# tiny kernels: the device idles while the CPU enqueues) or when the call blocks on a sync
# inside. To measure device time, bracket the region with CUDA events recorded on the stream
# (`torch.cuda.Event(enable_timing=True)`, `start.record()`, `end.record()`,
# `end.synchronize()`, `start.elapsed_time(end)`), or call `torch.cuda.synchronize()` before
# both timer reads (which adds the queue already in flight and the launch latency), or read the
# kernels from a profiler trace joined to their launches by correlation id.
#
# **Rubric (2 points).** 1 point: asynchronous launch — the timer measures enqueue, with the
# numbers (0.54 ms vs 13.0 ms). 1 point: a correct way to measure device time (CUDA events or
# synchronize before both reads, or a trace by correlation id), and either when the host time can
# exceed the device time or where the missing time shows up instead.

# %% [markdown]
# ## Takeaways
#
# - A host timer around an asynchronous launch measures the enqueue. The queue delay
#   $q = t^{\text{start}}_{\text{kernel}} - t^{\text{end}}_{\text{launch}}$ tells you who waits
#   for whom, and it can be negative.
# - Join launches to kernels by correlation id; a join by time picks the wrong launch whenever the
#   CPU runs ahead.
# - Messages bound a clock offset from both sides, $\max(S_A - R_B) < \theta < \min(R_A - S_B)$;
#   an order across hosts is certain, impossible or undetermined. Over long runs, fit the drift.
# - The trap: subtracting timestamps taken on different clocks, or pairing events because they
#   are close in time. Correlate first, then subtract, and carry the uncertainty.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# **The time base.** Kineto writes `ts` relative to `baseTimeNanoseconds`, the Unix time floored
# to a grid of 7,889,238 s, about three months (`ChromeTraceBaseTime` in libkineto's
# `output_json.h`). The floor keeps nanoseconds exact in a double, and it gives every rank
# profiled in the same three months the same base, so their traces load on one timeline.
# `trace.absolute_time(df)` adds the base back. A shared base is not a shared clock: each host
# still reads its own.
#
# **Real message pairs.** Any two events whose order causality fixes give a bound. The start of
# a send kernel on A and the end of the matching receive kernel on B form a pair
# $(S_A, R_B)$: the receive cannot finish before the send began. A collective is such an
# exchange in every direction, since no rank's all-reduce can end before every rank has started
# it. These pairs are loose (kernel boundaries, not message times) and carry the GPU-to-host
# conversion error; a deliberate exchange of clock readings over the network gives tighter ones.
#
# **Ranks that never talk.** Offsets add along a chain, $\theta_{20} = \theta_{21} +
# \theta_{10}$, and so do their bounds and widths. In the profile, rank 2 against rank 0 through
# rank 1 gives a band twice as wide as one hop; align every rank against a common peer where you
# can.
#
# **What dPRO does with the interval.** For BytePS traces dPRO solves for one time shift per
# machine, the smallest that satisfies every send-before-receive constraint (a quadratic program,
# `optimize_time_shift` in dPRO's `bps_helper/graph.py`); for NCCL traces it shifts each host so
# that a synchronization operation ends at the same time everywhere. Both give a point, and a
# point hides how much the messages leave undecided.
#
# **A real trace.** `load_trace(data_path("real_cpu_mlp.json.gz"))` is a real PyTorch 2.13 CPU
# profile of a small MLP (`course_lib/data/README.md`): host events only, so no launches, kernels
# or correlation ids.
