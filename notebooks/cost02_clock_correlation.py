# %% [markdown]
# # cost02 · Correlate events before subtracting timestamps from different clocks
#
# **Objective.** Separate CPU enqueue timing, device execution timing, causal identifiers, and
# uncertainty in cross-domain clock alignment.
#
# **Time:** 31 min · **Level:** advanced
#
# You will be able to
# - tell what a host timer around an asynchronous launch measures, and compute each kernel's queue
#   delay;
# - join kernels to their launches by correlation id, never by time;
# - bound the offset between two hosts' clocks from their messages, and decide whether an order
#   across hosts is certain, impossible or undetermined;
# - correct for clock drift over a long run.
#
# **What you need:** cost01, pandas (a boolean mask, a `merge`), and a picture of a data-parallel
# step (forward, backward, all-reduce, optimizer).

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
sync_1h = pd.read_csv(data_path("clock_sync_1h.csv"))  # Exercise 4: an hour of sync messages


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
# The traces here are **synthetic**: `course_lib.tracegen` simulates four data-parallel ranks for
# three training steps and writes one PyTorch profiler (Kineto) file per rank, read here into
# DataFrames with times in **seconds**. GPU events have `pid` = device and `tid` = stream: 7
# computes, 20 runs NCCL.

# %%
rank0 = profiles[0]
display(rank0.groupby("cat").size().rename("events").to_frame().T)

# %% [markdown]
# `cudaLaunchKernel` does not run a kernel: it appends it to a stream's queue and returns. A host
# timer around a call, or around a whole forward pass, measures the **enqueue**, not the execution.
# The **queue delay**
#
# $$q = t^{\text{start}}_{\text{kernel}} - t^{\text{end}}_{\text{launch}}$$
#
# is how long a kernel waited between the return of its launch call and its start. A large $q$
# means the CPU runs ahead of a busy device; $q$ near zero everywhere, that the device waits for
# the CPU. `link_launches` joins each GPU event to its launch (section 2) and computes $q$:

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
    f"{(sync['ts'] - step1['ts']) / ms:.1f} ms into the step the CPU has launched all of it and "
    f"waits {sync['dur'] / ms:.1f} ms in cudaStreamSynchronize"
)
launch_timeline(
    rank0,
    fwd_start - 0.3 * ms,
    fwd_start + 13.5 * ms,
    title="Rank 0, the forward pass of ProfilerStep#1: launches (top) and kernels (bottom)",
)
plt.show()

# %% [markdown]
# Each grey line joins a launch to its kernel. The forward lasts 0.55 ms on the host; its 16
# kernels take 12.4 ms on the device, since the CPU launches one every 34 µs and each runs for 0.24
# to 1.3 ms. At 4.7 ms into the step the CPU has launched everything; it then blocks in
# `cudaStreamSynchronize` (inside `loss.item()`) for the 43 ms still queued.
#
# **A negative queue delay is data, not an error.** On an idle device a kernel can start before its
# launch call returns, and device timestamps reach the host clock with an error of their own: keep
# the sign. Holistic Trace Analysis 0.5.0 reports $q$ as "launch delay" clipped at zero
# (`cuda_kernel_launch_stats`), which hides exactly these kernels (releases up to 0.2.0 computed
# kernel start − launch start + launch duration instead).

# %% [markdown]
# ## 2. Join launches to kernels by correlation id, never by time
#
# CUPTI, CUDA's profiling interface, gives every runtime and driver call a **correlation id**
# "identical to the correlation ID in the memcpy, memset, or kernel activity record that is
# associated with this function" (CUPTI documentation, `CUpti_ActivityAPI::correlationId`); Kineto
# writes it into both events' `args.correlation`. Join on it. A join by time, "the launch that
# ended last before the kernel started", fails as soon as the CPU runs ahead:

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
# Blue: the true launches fall within 1.4 ms, their kernels spread over 45 ms. Orange: the time
# join gives 44 of the 47 GPU events the wrong launch, 43 of them the `cudaMemcpyAsync` of the
# loss, the last launch before the CPU blocked. Correlation ids are unique only within one process:
# across ranks, join on (rank, correlation).

# %% [markdown]
# ## 3. Every host has its own clock: a message bounds the offset from both sides
#
# On one host, Kineto stamps CPU and GPU events on the host's clock, which all its processes
# share. Different hosts' clocks disagree by an **offset**, often milliseconds, far more than the
# microseconds you want to compare. The generator gives each rank its own clock, as if on its own
# host:

# %%
latency = messages["recv_ts"] - messages["send_ts"]  # two different clocks!
print(f"{(latency < 0).sum()} of {len(messages)} messages 'arrive before they were sent'")

# %% [markdown]
# A message cannot arrive before it leaves. Write the offset of clock A relative to clock B as
# $\theta$, so that $t_A = t_B + \theta$. A message A → B leaves at $S_A$ on A's clock, which B
# reads as $S_A - \theta$, and arrives at $R_B$; a message B → A leaves at $S_B$ and arrives at
# $R_A$:
#
# $$R_B > S_A - \theta \;\Rightarrow\; \theta > S_A - R_B, \qquad
#   R_A > S_B + \theta \;\Rightarrow\; \theta < R_A - S_B .$$
#
# Each message A → B raises a floor, each B → A lowers a ceiling:
# $\max_i (S_A - R_B)_i < \theta < \min_j (R_A - S_B)_j$, assuming only that messages take a
# positive time (the constraint of dPRO's BytePS trace alignment; Hu et al., MLSys 2022). The
# **width** is the fastest one-way delay A → B plus the fastest B → A, so more messages can only
# narrow it. The **midpoint** is NTP's offset estimate (RFC 5905, §8), exact only if those two
# delays are equal.
#
# The `"p2p"` message events are the generator's own; real Kineto traces have none ("Going
# further" says where real pairs come from). Rank 3 as A, rank 0 as B:

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
# Each ▲ is the floor set by one message 3 → 0, each ▼ the ceiling of one message 0 → 3 (hollow:
# beyond the axis). They leave an 11.4 µs band around the true −732.5 µs.

# %% [markdown]
# ## 4. An order across clocks is certain, impossible or undetermined
#
# Event $a$ is stamped $t_a$ on A's clock, event $b$ is stamped $t_b$ on B's. With
# $d = t_a - t_b$, the true time from $b$ to $a$ is
# $d - \theta \in (d - \theta_{\max},\, d - \theta_{\min})$ (`interval_difference`), and "$a$
# happened before $b$" means $\theta > d$. Over the interval it is **certain** if
# $d \le \theta_{\min}$, **impossible** if $d \ge \theta_{\max}$, **undetermined** otherwise
# (`order_certainty`). Comparing raw timestamps, $d < 0$, silently assumes $\theta = 0$. The
# all-reduce kernels of rank 3 (A) and rank 0 (B):

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
# Raw timestamps say rank 3 started the first all-reduce 191 µs *before* rank 0; it started 540 µs
# *after* (the generator knows; the interval allows 535 to 546 µs). A straggler analysis on raw
# timestamps blames the wrong rank. The third row is rightly undetermined: in this generator a
# collective ends at the same true instant on every rank, and no messages can order simultaneous
# events.

# %% [markdown]
# ## 5. Clocks drift: an offset holds only near the messages that measured it
#
# Clocks also run at slightly different rates:
#
# $$t_A = \theta_0 + (1 + \rho \cdot 10^{-6})\, t_B ,$$
#
# where $\theta_0$ is the offset (s) at $t_B = 0$ and $\rho$ the **drift** in parts per million:
# $\theta(t) = \theta_0 + \rho \cdot 10^{-6}\, t$, so 10 ppm is 36 ms an hour. Over the profile's
# 0.15 s that is about a microsecond; over a long run no single offset fits every message. Take one
# interval per window (a burst of messages) and fit a line through their midpoints (`fit_drift`).
# Ten minutes at 10 ppm:

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
# Left: each window pins $\theta$ to about 9 µs, a dot at this scale, while $\theta$ climbs 6 ms;
# the offset measured once (dashed) ends 6 ms wrong. Right: every interval holds the fitted line.
# To put an event stamped $t_A$ on B's clock, invert the line:
# $t_B = (t_A - \hat\theta_0)/(1 + \hat\rho \cdot 10^{-6})$, `fit.to_reference(t_A)`.

# %% [markdown]
# ## Explore
#
# Two simulated hosts exchange messages for one second; A's clock starts 1440 µs ahead. Left: the
# bounds, the constant-offset interval (grey), and five window intervals with their drift line
# (green). Right: seven pairs of events with true gaps from −40 to +30 µs; each bar is what the grey
# interval allows for $t(a) - t(b)$, coloured by the verdict on "a before b".
#
# 1. Drag **messages each way** from 1 to 200: the band narrows fast, then stops near twice the
#    delay floor.
# 2. Lower the **delay floor** to 1 µs: every pair is decided.
# 3. Back at 10 messages and a 5 µs floor, set the **drift** to 20 ppm: the band stays narrow and
#    two verdicts turn confidently wrong (red). A non-empty interval does not prove the clock
#    model. (With two messages per window the fitted drift is noisy; try 200.)

# %%
clock_alignment_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE` and run the grade cell below each: visible checks
# give quick feedback, hidden tests check more when graded. Times are floats in seconds.
#
# ### Exercise 1 — Implement the queue delay by correlation id (2 points)
#
# Write `queue_delays(df)`: for one process's trace `df` (as `load_trace` returns it), a numpy
# array of floats, the queue delay $q$ (s) of every GPU event (`cat` in `GPU_CATEGORIES`), **in
# `df`'s row order**. Its launch is the row with `cat` in `LAUNCH_CATEGORIES` and the same
# `correlation`. Keep negative values. `trace.link_launches` is disabled while your function runs
# (a pandas `merge` is fine).


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
                                   "launch's end", 15 * us: "kernel start − launch start + launch "
                                   "duration (HTA 0.2.0's launch delay)",
                                   5.0: "microseconds: the answer is in seconds"})  # fmt: skip
check_float(
    "small trace: queue delay of gemm_kernel (row 4)",
    _q_small[1],
    45 * us,
    unit="s",
    known_wrong={
        35 * us: "the launch that ended last before the kernel started: a nearest-in-time "
        "join, not the correlation id",
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
# ### Exercise 2 — Implement the offset bounds (3 points)
#
# Write `offset_interval(a_to_b, b_to_a)` returning the tuple `(lower, upper)` of floats, the
# bounds $\max(S_A - R_B) < \theta < \min(R_A - S_B)$ of section 3. `a_to_b` has rows
# `(S_A, R_B)`, `b_to_a` rows `(S_B, R_A)`, as lists of pairs or (N, 2) arrays. The second grade
# cell checks the edge cases: an empty side leaves its bound open (`-np.inf` or `np.inf`); raise a
# `ValueError` if both are empty or if `lower > upper`. `clocks.offset_bounds` is disabled while
# your function runs.


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
"""Exercise 2: offset_interval(a_to_b, b_to_a) -> (lower, upper) from messages both ways."""
with forbid((clocks, "offset_bounds"), exercise="Exercise 2"):
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
with forbid((clocks, "offset_bounds"), exercise="Exercise 2 (hidden cases)"):
    _answers = [offset_interval(ab, ba) for ab, ba in _msg_cases]
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
### END HIDDEN TESTS
passed("Exercise 2")

# %% nbgrader={"grade": true, "grade_id": "offset_interval_edges_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2, edge cases: an empty side leaves its bound open; no messages, or lower > upper, raise."""
with forbid((clocks, "offset_bounds"), exercise="Exercise 2 (edge cases)"):
    _one_way = offset_interval([[10.0, 9.5], [20.0, 19.6]], [])
check_type("offset_interval(a_to_b, [])", _one_way, tuple)
check_float("offset_interval(a_to_b, [])[0]", _one_way[0], 0.5, unit="s")
check_choice("offset_interval(a_to_b, [])[1]", "inf" if _one_way[1] == np.inf else "finite",
             "inf", {"inf": "right", "finite": "no message B -> A, so nothing bounds θ above"})  # fmt: skip
### BEGIN HIDDEN TESTS
with forbid((clocks, "offset_bounds"), exercise="Exercise 2 (hidden edge cases)"):
    _ba_only = offset_interval(np.empty((0, 2)), pairs(0, 3))
check_type("offset_interval(empty, b_to_a)", _ba_only, tuple)
check_choice("offset_interval(empty, b_to_a)[0]", "-inf" if _ba_only[0] == -np.inf else "finite",
             "-inf", {"-inf": "right", "finite": "no message A -> B, so nothing bounds θ below"})  # fmt: skip
check_float("offset_interval(empty, b_to_a)[1]", _ba_only[1],
            offset_bounds([], pairs(0, 3)).upper, rtol=0, atol=1e-12, unit="s")  # fmt: skip
_raised = []
for _ab, _ba in (
    ([], []),
    (pairs(1, 0)[:, ::-1], pairs(0, 1)[:, ::-1]),  # (receive, send): columns swapped
    ([[1.0, 0.2]], [[0.0, 0.5]]),
):
    try:
        with forbid((clocks, "offset_bounds"), exercise="Exercise 2 (hidden edge cases)"):
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
passed("Exercise 2 (edge cases)")

# %% [markdown]
# ### Exercise 3 — Certain, impossible or undetermined? (2 points)
#
# Write `verdict(t_a, t_b, lower, upper)`: `t_a` is event $a$'s time on A's clock, `t_b` event
# $b$'s on B's, and `lower` < $\theta$ < `upper` the offset interval. Return the str `"certain"`,
# `"impossible"` or `"undetermined"` for "$a$ happened before $b$". The hidden tests include
# $d = t_a - t_b$ equal to either bound, and events of ranks 1 (A) and 0 (B).
# `clocks.order_certainty` and `clocks.interval_difference` are disabled while your function runs.


# %% nbgrader={"grade": false, "grade_id": "verdict_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def verdict(t_a, t_b, lower, upper):
    """Is "a (t_a on A's clock) happened before b (t_b on B's)" certain, impossible or undetermined?"""
    ### BEGIN SOLUTION
    d = t_a - t_b  # a before b  <=>  t_a - θ < t_b  <=>  θ > d
    if d <= lower:
        return "certain"
    if d >= upper:
        return "impossible"
    return "undetermined"
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "verdict_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: verdict(t_a, t_b, lower, upper) -> "certain", "impossible" or "undetermined"."""
with forbid((clocks, "order_certainty"), (clocks, "interval_difference"), exercise="Exercise 3"):
    _below, _at_lower = verdict(9.5, 10.0, 0.25, 0.75), verdict(10.25, 10.0, 0.25, 0.75)
check_type("verdict(9.5, 10.0, 0.25, 0.75)", _below, str)
check_choice("verdict(9.5, 10.0, 0.25, 0.75), d below the interval", _below, "certain",
             {"certain": "right", "impossible": "'before' and 'after' swapped: a precedes b when "
              "θ > d", "undetermined": "d reversed (t_b − t_a), or the offset applied the wrong "
              "way (t_a + θ)"})  # fmt: skip
check_choice("verdict(10.25, 10.0, 0.25, 0.75), d equal to the lower bound", _at_lower, "certain",
             {"certain": "right", "impossible": "what raw timestamps say (θ = 0), 'before' and "
              "'after' swapped, or the offset applied the wrong way (t_a + θ)",
              "undetermined": "a strict comparison at the bound (the interval is open)"})  # fmt: skip
### BEGIN HIDDEN TESTS
_theta_10 = offset_bounds(pairs(1, 0), pairs(0, 1))
_k1, _k0 = nccl_kernels(1).iloc[4], nccl_kernels(0).iloc[4]


def _first(rank, name):
    return profiles[rank].loc[profiles[rank]["name"] == name, "ts"].iloc[0]


_lo10, _hi10 = _theta_10.lower, _theta_10.upper
_cases = {  # name: (t_a, t_b, lower, upper, verdict)
    "d inside the interval": (10.5, 10.0, 0.25, 0.75, "undetermined"),
    "d equal to the upper bound": (10.75, 10.0, 0.25, 0.75, "impossible"),
    "d above the interval": (11.0, 10.0, 0.25, 0.75, "impossible"),
    "negative interval, d inside it": (3.5, 4.0, -0.75, -0.25, "undetermined"),
    "negative interval, d below it": (3.0, 4.0, -0.75, -0.25, "certain"),
    "negative interval, d = 0": (4.0, 4.0, -0.75, -0.25, "impossible"),
    "negative interval, d equal to its lower bound": (3.25, 4.0, -0.75, -0.25, "certain"),
    "negative interval, d equal to its upper bound": (3.75, 4.0, -0.75, -0.25, "impossible"),
    "timestamps near 5e6 s, d equal to the lower bound": (
        5170000.0 + 2.0**-10, 5170000.0, 2.0**-10, 2.0**-9, "certain"),
    "rank 1's first all-reduce of ProfilerStep#1 starts before rank 0's": (
        _k1["ts"], _k0["ts"], _lo10, _hi10, "certain"),
    "rank 1's ProfilerStep#2 starts before rank 0's": (
        _first(1, "ProfilerStep#2"), _first(0, "ProfilerStep#2"), _lo10, _hi10, "impossible"),
    "that all-reduce ends on rank 1 before it ends on rank 0": (
        _k1["ts"] + _k1["dur"], _k0["ts"] + _k0["dur"], _lo10, _hi10, "undetermined"),
    "rank 1's first DataLoader starts before rank 0's": (
        _first(1, "DataLoader"), _first(0, "DataLoader"), _lo10, _hi10, "certain"),
}  # fmt: skip


def _mistaken(d, lo, hi):
    """What each mistaken rule answers, given d = t_a − t_b and the interval (lo, hi)."""

    def rule(certain, impossible):
        return "certain" if certain else ("impossible" if impossible else "undetermined")

    return {
        "what raw timestamps say (θ = 0)": rule(d < 0, d >= 0),
        "the midpoint taken as the exact offset": rule(d < (lo + hi) / 2, d >= (lo + hi) / 2),
        "d reversed (t_b − t_a)": rule(-d <= lo, -d >= hi),
        "the offset applied the wrong way (t_a + θ)": rule(d <= -hi, d >= -lo),
        "'before' and 'after' swapped": rule(d >= hi, d <= lo),
        "a strict comparison at the bounds (the interval is open)": rule(d < lo, d > hi),
    }


with forbid((clocks, "order_certainty"), (clocks, "interval_difference"),
            exercise="Exercise 3 (hidden cases)"):  # fmt: skip
    _got = {_name: verdict(*_case[:4]) for _name, _case in _cases.items()}
for _name, (_t_a, _t_b, _lo, _hi, _want) in _cases.items():
    _options = {"certain": "", "impossible": "", "undetermined": ""}
    for _option in _options:
        _why = [m for m, v in _mistaken(_t_a - _t_b, _lo, _hi).items() if v == _option]
        _options[_option] = "; or ".join(_why) or "compare d = t_a − t_b with both bounds"
    check_type(f"verdict: {_name}", _got[_name], str)
    check_choice(f"verdict: {_name}", _got[_name], _want, _options)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Drift-corrected alignment over an hour (2 points)
#
# `sync_1h` holds an hour of clock-sync messages between hosts A and B: every 300 s a burst of 20
# messages each way (`window` 0–12; `"A->B"` rows are $(S_A, R_B)$, `"B->A"` rows $(S_B, R_A)$).
# B's clock is the reference. Fit the drift line through the windows' midpoints as in section 5,
# with $t$ = the mean send time of each window's B → A messages. Set `drift_ppm_fit` to
# $\hat\rho$ (a float, ppm, to 0.01 ppm) and `event_on_b` to the time on B's clock (a float, s, to
# the microsecond) of an event A stamps at $t_A = 3412.0$ s.

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
"""Exercise 4a: the drift of A's clock relative to B's, in ppm, fitted through window midpoints."""
check_range("drift_ppm_fit", drift_ppm_fit, -100.0, 100.0, what="parts per million, not a ratio")
### BEGIN HIDDEN TESTS
check_float(  # computed once with the solution's fit on course_lib/data/clock_sync_1h.csv
    "drift_ppm_fit",
    drift_ppm_fit,
    -15.67867,
    rtol=0,
    atol=0.01,
    unit="ppm",
    known_wrong={
        15.67891: "the drift of B relative to A: fit_drift(local, reference) takes A's readings "
        "first",
        0.0: "no drift at all — or the drift as a ratio, not parts per million",
    },
)
### END HIDDEN TESTS
passed("Exercise 4a")

# %% nbgrader={"grade": true, "grade_id": "event_on_b_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4b: the time on B's clock (s) of the event A stamps at t_A = 3412.0 s, to 1 µs."""
check_range("event_on_b", event_on_b, 3400.0, 3420.0, what="seconds on B's clock, near 3412 s")
### BEGIN HIDDEN TESTS
check_float(  # compared as event_on_b − 3412 s, so that the digits that differ show
    "event_on_b − 3412.0 s",
    event_on_b - 3412.0,
    0.0519587,
    rtol=0,
    atol=1 * us,
    unit="s",
    known_wrong={
        0.0: "the raw timestamp: A's clock is not B's",
        -0.0015382: "one offset for the whole hour (the first window's, or the fit's intercept): "
        "the clocks drift apart between windows",
        0.0502048: "the nearest window's offset: the drift since that window still counts",
        -0.0519579: "the mapping the wrong way round (to_local, or the fit's clocks swapped): "
        "that takes B's clock to A's",
        0.0519647: "a line through the windows' LOWER bounds: use the midpoints",
        0.0519527: "a line through the windows' UPPER bounds: use the midpoints",
        0.0519378: "an average over all messages' bounds: the two directions' delays differ, so "
        "only each window's tightest floor and ceiling bound the offset",
        0.0519822: "a line through the A → B messages themselves: that ignores their delay",
        0.0518933: "a line through the B → A messages themselves: that ignores their delay",
        0.0518851: "the midpoints of the loosest bounds: the LARGEST floor and SMALLEST ceiling "
        "bind",
    },
)
### END HIDDEN TESTS
passed("Exercise 4b")

# %% [markdown]
# ### Explained answer — Why `time.time()` under-reports GPU time (2 points, graded by hand)
#
# A colleague reports `t1 - t0` from `t0 = time.time(); out = model(x); t1 = time.time()` as "the
# forward time". In four to six sentences: what does it measure, why is it shorter than the GPU
# time (section 1: 0.55 ms on the host, 12.4 ms on the device), when could it be *longer*, and how
# would you measure the device time correctly?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_host_timer", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Kernel launches are asynchronous:
# `model(x)` returns as soon as the CPU has enqueued the forward's kernels, so `t1 - t0` measures
# the host's enqueue time — Python, the framework's dispatch and the launch calls — not the
# execution. On rank 0 the forward annotation lasts 0.55 ms while its 16 kernels run for 12.4 ms
# on the device: the host timer misses about 96 % of the work, which runs later, under whatever
# the host times next (typically the first call that synchronizes, such as `loss.item()`, which
# then looks slow). It can also read *longer* than the GPU time when the forward is launch-bound
# (many tiny kernels: the device idles while the CPU enqueues) or when the call blocks on a sync
# inside. To measure device time, bracket the region with CUDA events recorded on the stream
# (`torch.cuda.Event(enable_timing=True)`, `start.record()`, `end.record()`,
# `end.synchronize()`, `start.elapsed_time(end)`), or call `torch.cuda.synchronize()` before
# both timer reads (which adds the queue already in flight and the launch latency), or read the
# kernels from a profiler trace joined to their launches by correlation id.
#
# **Rubric (2 points).** 1 point: asynchronous launch — the timer measures enqueue, with section
# 1's numbers (0.55 ms on the host vs 12.4 ms on the device). 1 point: a correct way to measure
# device time (CUDA events or synchronize before both reads, or a trace by correlation id), and
# either when the host time can exceed the device time or where the missing time shows up
# instead.

# %% [markdown]
# ## Takeaways
#
# - A host timer around an asynchronous launch measures the enqueue; the queue delay, kernel start
#   − launch end, says who waits for whom, and it can be negative.
# - Join launches to kernels by correlation id, never by time.
# - Messages bound a clock offset from both sides, $\max(S_A - R_B) < \theta < \min(R_A - S_B)$;
#   an order across hosts is certain, impossible or undetermined. Over long runs, fit the drift.
# - The trap: subtracting timestamps taken on different clocks, or pairing events because they are
#   close in time. Correlate first, then subtract, and carry the uncertainty.

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
# **What dPRO does with the interval.** For BytePS traces dPRO solves for one time shift per
# machine: of the shifts that satisfy every send-before-receive constraint, those of least
# squared sum (a quadratic program, `optimize_time_shift` in dPRO's `bps_helper/graph.py`). For
# NCCL traces its default (`SYNC_MODE = 0` in `collect.py`) shifts each host so that a
# synchronization op ends at the same time everywhere. Both give a point, and a point hides how
# much the messages leave undecided.
#
# **What HTA joins.** HTA 0.5.0's launch statistics join GPU events only to `cudaLaunchKernel`,
# `cudaLaunchKernelExC`, `cudaMemcpyAsync` and `cudaMemsetAsync` (and one MTIA call). Kernels
# started through the driver, such as the NCCL kernels launched by `cuLaunchKernelEx` (12 per
# rank in this profile), are missing from them; `LAUNCH_CATEGORIES` includes driver calls.
#
# **A real trace.** `load_trace(data_path("real_cpu_mlp.json.gz"))` is a real PyTorch 2.13 CPU
# profile of a small MLP (`course_lib/data/README.md`): host events only, so no launches, kernels
# or correlation ids.
