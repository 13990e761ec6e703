# %% [markdown]
# # cost04 · A utilization percentage is meaningful only with its FLOP and time conventions
#
# **Objective.** Define useful model FLOPs, executed recomputation, eligible peak throughput, and
# completed time before comparing training utilization.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - count a transformer's model FLOPs per token (PaLM's $6N + 12LHQT$) and per iteration
#   (Megatron-LM's form), and say what each count leaves out;
# - compute MFU from a measured throughput, and HFU when activations are recomputed, and explain
#   why HFU ≥ MFU;
# - choose the eligible peak — the dense tensor-core peak in the training dtype — and correct a
#   number quoted against a 2:4-sparse peak;
# - name the time base of a utilization (kernel time, step time, wall-clock) and convert between
#   them;
# - decide whether two published MFU numbers can be compared.
#
# **What you need:** the matrix multiplications of a transformer layer (QKV, attention, output
# projection, MLP), Python arithmetic with powers of ten, and cost01's idea that a step's time is
# more than the sum of its kernels. cost03's exposed communication reappears in section 5.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib.checks import check_choice, check_float, check_range, check_type, passed
from course_lib.explorers.utilization import (
    GPT3_CONFIGS,
    utilization_explorer,
)
from course_lib.figures.utilization import utilization_waterfall
from course_lib.flops import (
    hfu,
    megatron_flops_per_iteration,
    mfu,
    mfu_from_throughput,
    model_flops_per_token,
)
from course_lib.hardware import accelerator_table, eligible_peak, peak

rng = np.random.default_rng(4)  # the course's convention; nothing in this lesson is random
TERA = 1e12  # FLOP/s in code; 989 * TERA is 989 TFLOP/s

# Exercise 1 and 2: PaLM 540B (Chowdhery et al. 2022, Table 1 and section 4.1).
PALM_540B = dict(
    num_params=540.35e9,  # N
    num_layers=118,  # L
    d_model=18432,
    num_heads=48,  # H
    head_dim=256,  # Q (note: H * Q = 12288, not d_model)
    seq_len=2048,  # T
    tokens_per_second=238.3e3,  # observed training throughput of the whole job
    num_chips=6144,  # TPU v4 chips, two pods of 3072
)

# Exercise 3: Megatron-LM's 1T-parameter configuration (Narayanan et al. 2021, Table 1, abstract).
MEGATRON_1T = dict(
    num_layers=128,
    hidden_size=25600,
    num_heads=160,
    vocab_size=51200,
    seq_len=2048,
    batch_size=3072,  # sequences per iteration
    num_gpus=3072,  # A100, bf16
    achieved_flops=502e15,  # aggregate FLOP/s reported, counted with the paper's eq. (3)
)

# Exercise 4: four published-style claims (GPT-3 architectures, V = 51200, all bf16).
CLAIMS = pd.DataFrame(
    {
        "accelerator": ["A100 SXM 80GB", "H100 SXM", "H100 SXM", "A100 SXM 80GB"],
        "num_devices": [8, 64, 256, 128],
        "model": ["GPT-3 760M", "GPT-3 6.7B", "GPT-3 175B", "GPT-3 2.7B"],
        "num_params": [758_120_448, 6_652_166_144, 174_575_321_088, 2_647_654_400],
        "seq_len": [2048, 2048, 2048, 4096],
        "recompute": ["none", "none", "full", "none"],
        "tokens_per_second": [219_600.0, 663_300.0, 97_800.0, 822_300.0],
        "quoted_utilization": [0.480, 0.226, 0.554, 0.820],
    },
    index=pd.Index(["A", "B", "C", "D"], name="claim"),
)

# Exercise 5: one week of a GPT-3 175B run on 1024 A100 SXM 80GB, bf16, full recomputation.
RUN_175B = dict(num_layers=96, hidden_size=12288, vocab_size=51200, seq_len=2048, batch_size=1536)
RUN_175B_GPUS = 1024
JOB_LOG = dict(  # seconds, except the step counts
    window=604_800.0,  # 7 days of wall-clock, from the job's start
    steps_kept=18_000,  # steps whose updates are in the model at the end of the window
    steps_redone=420,  # steps lost to 3 failures (work since the last checkpoint) and run again
    step_time=31.0,  # mean time per training step, steady state
    kernel_time=27.9,  # mean time per step during which the GPU runs kernels (profiler)
    checkpoint_time=7_920.0,  # 72 blocking checkpoint saves of 110 s
    eval_time=5_400.0,  # 18 evaluations of 300 s
    restart_downtime=7_200.0,  # 3 x 40 min: detect the failure, replace the node, reload
    input_stall_time=13_260.0,  # waiting for data between steps
)

# %% [markdown]
# ## 1. Model FLOPs count the work the model needs, not the work the device did
#
# Utilization is a ratio, achieved FLOP/s over peak FLOP/s, and both halves are conventions. The
# numerator starts with a FLOP count. The standard one, introduced together with the term MFU, is
# PaLM's **model FLOPs** per token of training (Chowdhery et al. 2022, Appendix B):
#
# $$F_{\text{token}} = 6N + 12\,L\,H\,Q\,T,$$
#
# where $N$ is the number of parameters, $L$ the number of layers, $H$ the number of attention
# heads, $Q$ the head dimension and $T$ the sequence length. Each parameter takes part in one
# multiply-add per token in the forward pass (2 FLOPs) and two in the backward pass (gradients
# with respect to the input and to the weight: 4 FLOPs): $6N$. Attention adds, per layer, head and
# token, a dot product with each of the $T$ keys and a weighted sum of the $T$ values — $2TQ$
# FLOPs each forward, times 3 for forward and backward: $12LHQT$. Only matrix multiplications
# count; softmax, normalisation, activations and the optimizer do not, and neither does a causal
# mask (some tools halve the attention term for it — another convention to ask about).
#
# Megatron-LM counts per iteration of $B$ sequences of length $s$ through $l$ layers of hidden
# size $h$, vocabulary $V$: a layer's forward matmuls are $24Bsh^2 + 4Bs^2h$, the logit layer's
# $2BshV$, and forward + backward is 3× that (Korthikanti et al. 2022, §6.3):
#
# $$F_{\text{iter}} = 72\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{12\,l\,h}\right).$$
#
# For a GPT with $N = 12lh^2 + Vh$ matmul parameters and $HQ = h$ the two counts agree:
# $F_{\text{iter}} = B\,s\,F_{\text{token}}$. The worked example of this lesson is GPT-3 6.7B
# (Brown et al. 2020, Table 2.1: 32 layers, $h$ = 4096, 32 heads of 128) with the 51,200-token
# padded vocabulary Megatron-LM uses, at $s = 2048$.

# %%
layers, hidden, heads, head_dim = GPT3_CONFIGS["GPT-3 6.7B"]
vocab, seq_len, batch_size = 51200, 2048, 1024  # 1024 sequences of 2048 tokens per step
num_params = 12 * layers * hidden**2 + vocab * hidden
flops_per_token = model_flops_per_token(num_params, layers, heads, head_dim, seq_len)
model_flops_step = megatron_flops_per_iteration(
    batch_size, seq_len, layers, hidden, vocab, recompute=False
)
print(f"N = {num_params / 1e9:.3f} B parameters")
print(f"6N = {6 * num_params:.4e}, 12LHQT = {12 * layers * heads * head_dim * seq_len:.4e}")
print(f"model FLOPs per token 6N + 12LHQT = {flops_per_token:.4e}")
print(f"Megatron per iteration / (B s)    = {model_flops_step / (batch_size * seq_len):.4e}")
print(f"attention share of the count: {12 * layers * hidden * seq_len / flops_per_token:.1%}")

# %% [markdown]
# $4.31 \times 10^{10}$ FLOPs per token, of which 7.5 % is attention. Quick estimates often use
# $6N$ alone, the rule of thumb behind "training compute ≈ $6ND$" ($D$ tokens). The attention term
# relative to $6N$ is about $s/(6h)$, so how much $6N$ leaves out depends on the shape of the
# model, not on the hardware:

# %%
seq_lens = 2 ** np.arange(9, 16)  # 512 ... 32768
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for (name, (l_, h_, heads_, q_)), colour in zip(
    GPT3_CONFIGS.items(), ["#CC79A7", "#009E73", "#0072B2", "#D55E00"], strict=True
):
    n_ = 12 * l_ * h_**2 + vocab * h_
    share = [1 - 6 * n_ / model_flops_per_token(n_, l_, heads_, q_, int(t)) for t in seq_lens]
    ax.plot(seq_lens, share, "o-", color=colour, lw=2, ms=4, label=f"{name} (h = {h_})")
ax.axvline(2048, color="#555555", ls=":", lw=1)
ax.set(xscale="log", xlabel="sequence length T", ylim=(0, 0.8))
ax.set_xticks(seq_lens, [str(t) for t in seq_lens])
ax.minorticks_off()
ax.set_ylabel("share of model FLOPs\nmissing from 6N")
ax.yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
ax.grid(alpha=0.3)
ax.legend(frameon=False, loc="upper left")
ax.set_title("What 6N leaves out: the attention term 12LHQT / (6N + 12LHQT)", loc="left")
plt.show()

# %% [markdown]
# Each line is one GPT-3 size; the dotted line marks GPT-3's own $T = 2048$. At 175B the
# attention term is under 3 % and $6N$ is a fine shortcut. At 760M and $T = 32768$ it is three
# quarters of the work: an MFU computed from $6N$ would be a quarter of the true one. Two teams
# that count differently can report numbers 4× apart for the same run.

# %% [markdown]
# ## 2. MFU divides model FLOP/s by the peak
#
# **Model FLOPs utilization** is the throughput a run achieves, counted in model FLOPs, over the
# peak throughput of the devices it occupies (Chowdhery et al. 2022, §4.1 and Appendix B):
#
# $$\text{MFU} = \frac{\text{tokens/s} \times F_{\text{token}}}{n_{\text{dev}} \times P},$$
#
# where tokens/s is the whole job's throughput, $n_{\text{dev}}$ the number of devices and $P$
# the peak FLOP/s of one device. Because the numerator counts what the model needs, not what the
# implementation did, MFU compares implementations fairly: a faster implementation of the same
# model raises it, a wasteful one lowers it.
#
# The worked run trains GPT-3 6.7B on 64 H100 SXM in bf16, 1024 sequences of 2048 tokens per
# step. The profiler's steady-state step time is 4.0 s.

# %%
num_devices = 64
dense_peak = eligible_peak("H100 SXM", "bf16")  # 989 TFLOP/s per GPU
step_time = 4.0
tokens_per_second = batch_size * seq_len / step_time
mfu_step = mfu_from_throughput(tokens_per_second, flops_per_token, num_devices, dense_peak)
print(f"{tokens_per_second:,.0f} tokens/s, {tokens_per_second / num_devices:,.0f} per GPU")
print(f"model FLOP/s per GPU: {tokens_per_second * flops_per_token / num_devices / TERA:.0f} T")
print(f"MFU = {mfu_step:.4f}")

# %% [markdown]
# Each GPU turns 353 TFLOP/s into model progress, 35.7 % of its 989 TFLOP/s. That sounds low, and
# it is, for a reason section 3 shows: this run recomputes its activations.

# %% [markdown]
# ## 3. Recomputation raises the executed FLOPs, so HFU ≥ MFU
#
# To fit in memory, the run uses **full activation recomputation**: the forward pass keeps only
# each layer's input, and the backward pass runs the layer's forward again before its own
# matmuls. The device then executes 4 forward-sized passes of every layer per step instead of 3;
# the logit layer is not recomputed. Megatron-LM's count of the executed FLOPs (Narayanan et al.
# 2021, §5.1, Eq. 3) is
#
# $$F^{\text{exec}}_{\text{iter}} = 96\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{16\,l\,h}\right).$$
#
# **Hardware FLOPs utilization** divides these executed FLOP/s by the peak. Same run, same time,
# more FLOPs counted: HFU ≥ MFU, with equality when nothing is recomputed (Korthikanti et al.
# 2022, §6.3). PaLM 540B reports both: 46.2 % MFU and 57.8 % HFU (Chowdhery et al. 2022, §4.1).

# %%
executed_flops_step = megatron_flops_per_iteration(
    batch_size, seq_len, layers, hidden, vocab, recompute=True
)
ratio = executed_flops_step / model_flops_step
hfu_step = hfu(executed_flops_step / step_time / num_devices, dense_peak)
print(f"executed / model FLOPs = {ratio:.4f}")
print(f"MFU = {mfu_step:.4f}, HFU = {hfu_step:.4f}")
print(
    f"without recomputation, at the same executed FLOP/s: step {step_time / ratio:.2f} s, "
    f"MFU = HFU = {hfu_step:.4f}"
)

# %% [markdown]
# The ratio is 1.32, a little under 4/3 because the logit layer runs only 3 passes. HFU says
# the GPUs execute 47.3 % of peak — as fast as they would without recomputation. MFU says that a
# quarter of that work is recomputation, and training runs at 35.7 %. Both are true; they answer
# different questions. HFU describes how busy the hardware is, MFU how fast the model trains, and
# only MFU rewards not recomputing: Korthikanti et al. (2022) cut the recomputation of a 530B
# model on 2240 A100s to the attention core and raised its MFU from 42.1 % to 54.2 % — a
# throughput gain an HFU comparison would mostly hide.
#
# Quoting HFU as "utilization" without saying so inflates the number by up to a third. Megatron-LM's
# headline "52 % of theoretical peak" for its 1T-parameter model counts Eq. 3's executed FLOPs:
# Exercise 3 converts it.

# %% [markdown]
# ## 4. The eligible peak is the dense tensor-core peak of the training dtype
#
# The denominator is a convention too. A datasheet lists one peak per dtype, and NVIDIA's list
# the tensor-core figures "with sparsity": **2:4 structured sparsity** — two of every four
# weights zero, in a fixed pattern — lets the tensor cores skip half the multiply-adds, and the
# printed number counts the skipped ones as done. The H100 SXM datasheet prints 1,979 TFLOP/s for
# bf16; the dense figure, 989, is in the Hopper architecture whitepaper. Dense training never
# uses 2:4 sparsity, so its **eligible peak** is the dense tensor-core peak in the dtype the
# matmuls run in. `course_lib.hardware` keeps every figure with its dtype, convention and source:

# %%
table = accelerator_table()
shown = table[table["name"].isin(["A100 SXM 80GB", "H100 SXM"]) & (table["dtype"] != "fp32")]
display(shown[["name", "dtype", "sparsity", "peak_tflops"]].set_index(["name", "dtype"]))
try:
    eligible_peak("H100 SXM", "bf16", sparse=True)
except ValueError as err:
    print("eligible_peak refuses:", err)

# %% [markdown]
# Three ways the same run gets a different denominator:
#
# - **the 2:4-sparse figure**: 1,979 instead of 989 TFLOP/s halves every utilization;
# - **another dtype's figure**: on H100, fp8's *dense* peak is also 1,979 TFLOP/s, so a bf16 run
#   measured against it reads half as well — and an fp8 run measured against the bf16 peak twice
#   as well; on A100, TF32's dense 156 TFLOP/s would double a bf16 number;
# - **a different device unit**: a TPU v4 chip has two TensorCores and 275 TFLOP/s; a per-core
#   peak doubles the number.
#
# Datasheet peaks are computed at the boost clock. A GPU that throttles under its power limit
# runs below it, and that loss belongs in the utilization: the convention is the datasheet's
# dense number, not the clock you happened to get.

# %%
rate = tokens_per_second * flops_per_token / num_devices  # model FLOP/s per GPU, worked run
for dtype, sparse in [("bf16", False), ("bf16", True), ("fp8", False)]:
    p = peak("H100 SXM", dtype, sparse=sparse)
    kind = "2:4 sparse" if sparse else "dense"
    print(f"vs H100 {dtype:4s} {kind:10s} {p / TERA:5.0f} TFLOP/s: {rate / p:.1%}")

# %% [markdown]
# ## 5. The time base is part of the definition
#
# "Tokens per second" needs a clock. Three are in use, and each includes more of what a
# training job spends its time on:
#
# - **kernel time**: only the time the device runs kernels (the union of kernel intervals in a
#   profiler trace). Idle gaps, exposed communication (cost03) and waits inside the step are
#   left out. What remains measures the kernels, not the training;
# - **step time**: the steady-state time of a training step, start to start. It includes
#   everything inside the step; benchmark tables usually report this;
# - **wall-clock**: a window of the real job, from its start: input stalls between steps,
#   evaluation, checkpoint saves, failures, restarts, and the steps lost since the last
#   checkpoint, which are run again and count as time but not as progress.
#
# With $S$ steps kept in a window of length $T_{\text{wall}}$,
#
# $$\text{MFU}_{\text{wall}} = \frac{S \times F_{\text{iter}}}{n_{\text{dev}}\,P\,T_{\text{wall}}}
#   = \text{MFU}_{\text{step}} \times \frac{S \, t_{\text{step}}}{T_{\text{wall}}}.$$
#
# A day of the worked run, from its job log:

# %%
day = dict(
    window=86_400.0,
    steps_kept=19_000,
    steps_redone=400,  # one failure: the steps since the last checkpoint, run again
    kernel_time=3.5,  # GPU busy per step, from the profiler
    checkpoint_time=42 * 45.0,
    eval_time=24 * 90.0,
    restart_downtime=3_300.0,
    input_stall_time=1_450.0,
)
accounted = (day["steps_kept"] + day["steps_redone"]) * step_time + sum(
    day[k] for k in ("checkpoint_time", "eval_time", "restart_downtime", "input_stall_time")
)
print(f"accounted {accounted:,.0f} s of a {day['window']:,.0f} s window")

cluster_peak = num_devices * dense_peak
utilization = {
    "HFU, kernel time": executed_flops_step / (cluster_peak * day["kernel_time"]),
    "HFU, step time": executed_flops_step / (cluster_peak * step_time),
    "MFU, kernel time": model_flops_step / (cluster_peak * day["kernel_time"]),
    "MFU, step time": model_flops_step / (cluster_peak * step_time),
    "MFU, wall-clock": day["steps_kept"] * model_flops_step / (cluster_peak * day["window"]),
}
for name, value in utilization.items():
    print(f"{name:18s} {value:.1%}")

# %%
stops = [
    ("H100 bf16 dense peak", dense_peak),
    ("executed · kernel time  (HFU)", utilization["HFU, kernel time"] * dense_peak),
    ("executed · step time  (HFU)", utilization["HFU, step time"] * dense_peak),
    ("model · step time  (MFU)", utilization["MFU, step time"] * dense_peak),
    ("model · wall-clock  (MFU)", utilization["MFU, wall-clock"] * dense_peak),
]
drops = [
    "kernels run below peak",
    "GPU idle inside the step",
    "recomputation: executed, not model",
    "stalls, eval, checkpoints, restarts, redone steps",
]
fig, ax = plt.subplots(figsize=(9, 4.2), layout="constrained")
utilization_waterfall(
    stops, drops, dense_peak, ax, title="One day of the worked run: from the peak to MFU"
)
plt.show()

# %% [markdown]
# Read from the top. The grey bar is the eligible peak; each blue bar is a number someone could
# publish for this run; each orange sliver is what the next convention subtracts. The kernels
# execute 54.0 % of peak while they run, the step's idle time takes 6.8 points, recomputation
# 11.6, and everything outside the steps 4.3 more: 31.4 % of peak became model progress over the
# day. Every one of these numbers is correct, and the same GPUs did the same work in all of
# them; a percentage without its conventions cannot be told apart from any of the others.

# %% [markdown]
# ## Explore
#
# The explorer holds the hardware fixed — while kernels run, every GPU executes 62 % of the H100's
# dense bf16 peak (613 TFLOP/s); kernels run 86 % of each step; 10 % of the wall-clock lies
# outside the steps and 3 % of the steps are redone. The top row sets the run (GPT-3 size,
# sequence length, recomputation), the second row the conventions. Left: the waterfall from the
# chosen peak to the quoted number (orange). Right: all nine (FLOP count × time base) numbers of
# the same run against the chosen peak, the chosen one outlined. What to try:
#
# 1. Toggle **peak** to 2:4 sparse. No bar moves; the 100 % line jumps to 1,979 TFLOP/s and every
#    number halves.
# 2. Toggle **recomputation** to full. The executed bars stay where they were — the hardware did
#    not change — while MFU falls from 53.3 % to 40.3 %. Switch FLOP count to executed: HFU is
#    still 53.3 %.
# 3. Pick GPT-3 760M with FLOP count 6N and drag the **sequence length** from 512 to 32768: the
#    "attention FLOPs 6N leaves out" bar grows until 6N reports a quarter of the true MFU. Repeat
#    with 175B: up to $s$ = 8192 it costs less than a tenth.
# 4. Step the **time base** from kernel to wall-clock and watch the matrix: how far apart are its
#    smallest and largest numbers at your setting?

# %%
explorer = utilization_explorer()
explorer

# %% [markdown]
# ## Exercises
#
# The data are in the setup cell: `PALM_540B`, `MEGATRON_1T`, `CLAIMS`, `RUN_175B` and
# `JOB_LOG`. Use `course_lib.flops` and `course_lib.hardware` freely. Utilizations are fractions
# (0.462, not 46.2); FLOPs and FLOP/s are plain floats.
#
# ### Exercise 1 — Model FLOPs per token of PaLM 540B (1 point)
#
# Compute PaLM 540B's model FLOPs per token at its training sequence length from `PALM_540B`,
# with PaLM's own formula. Store it in `palm_flops_per_token`, a float.

# %% nbgrader={"grade": false, "grade_id": "palm_flops_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
palm_flops_per_token = model_flops_per_token(
    PALM_540B["num_params"],
    PALM_540B["num_layers"],
    PALM_540B["num_heads"],
    PALM_540B["head_dim"],
    PALM_540B["seq_len"],
)
### END SOLUTION
print(f"palm_flops_per_token = {palm_flops_per_token:.5e}")

# %% nbgrader={"grade": true, "grade_id": "palm_flops_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: PaLM 540B model FLOPs per token, 6N + 12LHQT at T = 2048 (a float)."""
check_range("palm_flops_per_token", palm_flops_per_token, 1e11, 1e14, what="FLOPs per token")
### BEGIN HIDDEN TESTS
check_float(
    "palm_flops_per_token",
    palm_flops_per_token,
    3.277734806784e12,
    rtol=1e-6,
    known_wrong={
        3.2421e12: "6N alone: the attention term 12LHQT is missing",
        3.295552210176e12: "12·L·d_model·T: PaLM's heads give H·Q = 12288, not d_model = 18432",
        1.092578268928e12: "the forward pass only (2N + 4LHQT)",
        4.370313075712e12: "executed FLOPs with recomputation (8N + 16LHQT), not model FLOPs",
    },
)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — PaLM's MFU from its measured throughput (2 points)
#
# PaLM 540B trained at 238.3K tokens/s on 6144 TPU v4 chips (`PALM_540B`). Compute its MFU
# against the TPU v4 peak in `course_lib.hardware` and store it in `palm_mfu`, a float. Compare
# with the 46.2 % the paper reports.

# %% nbgrader={"grade": false, "grade_id": "palm_mfu_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
palm_mfu = mfu_from_throughput(
    PALM_540B["tokens_per_second"],
    palm_flops_per_token,
    PALM_540B["num_chips"],
    eligible_peak("TPU v4", "bf16"),
)
### END SOLUTION
print(f"palm_mfu = {palm_mfu:.4f}")

# %% nbgrader={"grade": true, "grade_id": "palm_mfu_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: PaLM 540B's MFU on 6144 TPU v4 chips at 275 TFLOP/s (a fraction)."""
check_range("palm_mfu", palm_mfu, 0.0, 1.0, what="a fraction of the peak, not a percentage")
### BEGIN HIDDEN TESTS
check_float(
    "palm_mfu",
    palm_mfu,
    0.46228942,
    rtol=5e-4,
    known_wrong={
        0.45726351: "6N alone: the attention term is missing",
        0.92457884: "3072 chips (one pod) or a per-TensorCore peak: the job used 6144 chips",
        0.46480237: "12·L·d_model·T in the attention term instead of 12·L·H·Q·T",
    },
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — HFU and MFU of Megatron-LM's 1T model (2 points)
#
# Narayanan et al. (2021) report 502 PFLOP/s on 3072 A100 GPUs for a 1T-parameter model:
# "52 % of theoretical peak". They count FLOPs with Eq. 3, which includes the recomputed forward
# pass. From `MEGATRON_1T`, compute the HFU they quote (`megatron_hfu`) and the MFU of the same
# run (`megatron_mfu`), both floats, against the A100's dense bf16 peak.

# %% nbgrader={"grade": false, "grade_id": "megatron_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_m = MEGATRON_1T
_args = (_m["batch_size"], _m["seq_len"], _m["num_layers"], _m["hidden_size"], _m["vocab_size"])
_a100 = eligible_peak("A100 SXM 80GB", "bf16")
megatron_hfu = hfu(_m["achieved_flops"] / _m["num_gpus"], _a100)
_model_over_executed = megatron_flops_per_iteration(
    *_args, recompute=False
) / megatron_flops_per_iteration(*_args, recompute=True)
megatron_mfu = mfu(_m["achieved_flops"] * _model_over_executed / _m["num_gpus"], _a100)
### END SOLUTION
print(f"megatron_hfu = {megatron_hfu:.4f}, megatron_mfu = {megatron_mfu:.4f}")

# %% nbgrader={"grade": true, "grade_id": "megatron_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: HFU as published and MFU of Megatron-LM's 1T run (fractions of 312 TFLOP/s)."""
check_range("megatron_hfu", megatron_hfu, 0.0, 1.0, what="a fraction of the peak")
check_range("megatron_mfu", megatron_mfu, 0.0, 1.0, what="a fraction of the peak")
check_range("megatron_mfu", megatron_mfu, 0.0, megatron_hfu, what="MFU ≤ HFU: see section 3")
### BEGIN HIDDEN TESTS
check_float(
    "megatron_hfu",
    megatron_hfu,
    0.52375467,
    rtol=5e-4,
    known_wrong={0.26187734: "against the 2:4-sparse peak (624 TFLOP/s)"},
)
check_float(
    "megatron_mfu",
    megatron_mfu,
    0.39294207,
    rtol=5e-4,
    known_wrong={
        0.52375467: "the HFU: Eq. 3 counts the recomputed forward",
        0.69811552: "HFU × 4/3: the ratio applied the wrong way round",
        0.19647104: "against the 2:4-sparse peak",
    },
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Find the number quoted against a sparse peak (3 points)
#
# `CLAIMS` holds four utilization claims, each with its accelerator, model (GPT-3 architecture,
# $N$ given, $HQ = h$; `GPT3_CONFIGS` has layers, hidden size, heads and head dimension), sequence
# length, recomputation, measured whole-job tokens/s and the quoted utilization. Exactly one of
# them was computed against a 2:4-sparse peak.
#
# a) Set `sparse_claim` to its letter, a str: `"A"`, `"B"`, `"C"` or `"D"`.
#
# b) Set `corrected_mfu` to that claim's MFU against the eligible peak, a float.
#
# Hint: compute every claim's MFU and compare it with the quote; the other claims are not all
# honest either.

# %%
CLAIMS

# %% nbgrader={"grade": false, "grade_id": "sparse_claim_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_mfus = {}
for _claim, _row in CLAIMS.iterrows():
    _l, _h, _heads, _q = GPT3_CONFIGS[_row["model"]]
    _fpt = model_flops_per_token(_row["num_params"], _l, _heads, _q, _row["seq_len"])
    _mfus[_claim] = mfu_from_throughput(
        _row["tokens_per_second"],
        _fpt,
        _row["num_devices"],
        eligible_peak(_row["accelerator"], "bf16"),
    )
print("quote / MFU:", (CLAIMS["quoted_utilization"] / pd.Series(_mfus)).round(3).to_dict())
sparse_claim = "B"
corrected_mfu = _mfus[sparse_claim]
### END SOLUTION
print(f"sparse_claim = {sparse_claim!r}, corrected_mfu = {corrected_mfu:.4f}")

# %% nbgrader={"grade": true, "grade_id": "sparse_claim_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4a: the claim quoted against a 2:4-sparse peak ("A", "B", "C" or "D")."""
check_type("sparse_claim", sparse_claim, str)
### BEGIN HIDDEN TESTS
check_choice(
    "sparse_claim",
    sparse_claim,
    "B",
    {
        "A": "claim A's quote equals its MFU against the dense bf16 peak: it is honest",
        "B": "claim B's quote is half its MFU: it divides by the 2:4-sparse 1979 TFLOP/s",
        "C": "claim C's quote is 1.33× its MFU: it is an HFU, counting recomputation — "
        "inflated, not sparse",
        "D": "claim D's quote is twice its MFU: it divides by A100's dense TF32 peak (156), "
        "the wrong dtype — inflated, not sparse",
    },
)
### END HIDDEN TESTS
passed("Exercise 4a")

# %% nbgrader={"grade": true, "grade_id": "corrected_mfu_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4b: the MFU of the sparse-peak claim against its eligible (dense bf16) peak."""
check_range("corrected_mfu", corrected_mfu, 0.0, 1.0, what="a fraction of the peak")
### BEGIN HIDDEN TESTS
check_float(
    "corrected_mfu",
    corrected_mfu,
    0.45201797,
    rtol=2e-3,
    known_wrong={
        0.226: "the quote itself: it is the number to correct",
        0.113: "the quote halved: the sparse peak already halved it once",
        0.41826167: "6N alone for claim B's FLOPs per token",
    },
)
### END HIDDEN TESTS
passed("Exercise 4b")

# %% [markdown]
# ### Exercise 5 — One run, two time bases (2 points)
#
# `RUN_175B` and `JOB_LOG` describe a week of a GPT-3 175B run on 1024 A100 SXM 80GB in bf16
# with full recomputation. Compute its MFU on the step-time base (`mfu_step_175b`) and on the
# wall-clock base over the whole window (`mfu_wall_175b`), both floats against the A100's dense
# bf16 peak. Use Megatron-LM's per-iteration count.

# %% nbgrader={"grade": false, "grade_id": "time_bases_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_r = RUN_175B
_flops = megatron_flops_per_iteration(
    _r["batch_size"],
    _r["seq_len"],
    _r["num_layers"],
    _r["hidden_size"],
    _r["vocab_size"],
    recompute=False,
)
_cluster = RUN_175B_GPUS * eligible_peak("A100 SXM 80GB", "bf16")
mfu_step_175b = _flops / (_cluster * JOB_LOG["step_time"])
mfu_wall_175b = JOB_LOG["steps_kept"] * _flops / (_cluster * JOB_LOG["window"])
### END SOLUTION
print(f"mfu_step_175b = {mfu_step_175b:.4f}, mfu_wall_175b = {mfu_wall_175b:.4f}")

# %% nbgrader={"grade": true, "grade_id": "time_bases_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: MFU of the 175B run on step time and on the wall-clock window (fractions)."""
check_range("mfu_step_175b", mfu_step_175b, 0.0, 1.0, what="a fraction of the peak")
check_range("mfu_wall_175b", mfu_wall_175b, 0.0, mfu_step_175b, what="at most the step MFU")
### BEGIN HIDDEN TESTS
check_float(
    "mfu_step_175b",
    mfu_step_175b,
    0.34189751,
    rtol=5e-4,
    known_wrong={
        0.45546370: "executed FLOPs (HFU): recomputation is not model work",
        0.37988613: "kernel time instead of step time",
        0.17094876: "against the 2:4-sparse peak",
    },
)
check_float(
    "mfu_wall_175b",
    mfu_wall_175b,
    0.31544116,
    rtol=5e-4,
    known_wrong={
        0.32280145: "redone steps counted as progress: they were run twice, kept once",
        0.34189751: "the step-time MFU: the wall-clock adds stalls, evaluation, checkpoints and "
        "restarts",
        0.42021948: "executed FLOPs (HFU) on the wall-clock",
        0.31924166: "the window without the restart downtime",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Explained answer — When are two MFU numbers comparable? (2 points, graded by hand)
#
# A slide titled "MFU of large-model training" lists PaLM 540B at 46.2 % (Chowdhery et al. 2022),
# Megatron-LM's 1T model at 52 % (Narayanan et al. 2021) and a 530B model at 54.2 % (Korthikanti
# et al. 2022), and concludes that Megatron-LM uses its hardware best. In 4–6 sentences: which
# conventions must two numbers share before you compare them, which of these three numbers can
# be compared as they stand, and what does the comparison look like after you convert? Quote
# numbers from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_comparable_mfu", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Two utilizations compare only if they share the FLOP count (model FLOPs, with
# the same terms: attention included or not, causal halving or not), the peak (dense, the training
# dtype, per device of the same kind) and the time base (kernel, step or wall-clock, steady state
# or a whole run with its restarts). Megatron-LM's 52 % counts Eq. 3's executed FLOPs with the
# recomputed forward: it is an HFU, and as MFU it is 39.3 % (Exercise 3) — below PaLM's 46.2 %,
# not above. Korthikanti's 54.2 % is a model-FLOPs number (the 72-form, which equals
# $6N + 12LHQT$ for a GPT) against the A100's dense 312 TFLOP/s, so it compares with PaLM's MFU
# in FLOP count and peak convention; both are throughput (step-time) numbers — Megatron-LM's
# come from benchmark runs, not a full training run (Megatron-LM README) — so neither includes
# the wall-clock losses of Exercise 5. Even then they measure different systems (TPU v4 vs A100, different sizes and
# parallelism), so the comparison is of the whole stack, not of the software alone.
#
# **Rubric (2 points).** 1 point: names the conventions that must match (FLOP count incl.
# recomputation, peak incl. dense/dtype, time base). 1 point: identifies Megatron's 52 % as HFU
# and converts it (≈ 39 %), or otherwise applies the conventions to the three numbers correctly.

# %% [markdown]
# ## Takeaways
#
# - Model FLOPs per token are $6N + 12LHQT$ (PaLM); per iteration
#   $72Bslh^2(1 + s/6h + V/12lh)$ (Megatron-LM). $6N$ alone drops the attention term, about
#   $s/6h$ of $6N$: negligible for wide models at short sequences, most of the work for narrow
#   models at long ones.
# - MFU counts model FLOPs; HFU counts executed FLOPs, recomputation included, so HFU ≥ MFU.
#   Only MFU tells you that recomputing costs throughput.
# - The eligible peak is the dense tensor-core peak of the training dtype: 312 TFLOP/s on A100
#   and 989 on H100 for bf16; the 2:4-sparse 1,979 is not eligible.
# - The time base — kernel, step or wall-clock with stalls, evaluation, checkpoints and restarts —
#   moves the number while the hardware does nothing different.
# - The trap: comparing two utilization percentages without their FLOP count, peak and time base.
#   The same run gave numbers from 31 % to 54 % of peak in section 5, and a sparse denominator
#   would halve each of them.
