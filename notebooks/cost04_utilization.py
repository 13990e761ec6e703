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
# - compute MFU from a measured throughput, and HFU when activations are recomputed;
# - choose the eligible peak — the dense tensor-core peak in the training dtype — and spot a
#   number quoted against a 2:4-sparse peak;
# - name the time base of a utilization (kernel time, step time, wall-clock);
# - decide whether two published MFU numbers can be compared.
#
# **What you need:** the matrix multiplications of a transformer layer (QKV, attention, output
# projection, MLP) and Python arithmetic with powers of ten. cost01's idea that a step is more than
# the sum of its kernels, and cost03's exposed communication, reappear in section 4.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import PercentFormatter

from course_lib.checks import check_choice, check_float, check_range, check_type, passed
from course_lib.explorers.utilization import GPT3_CONFIGS, utilization_explorer
from course_lib.figures.utilization import utilization_waterfall
from course_lib.hardware import accelerator_table, eligible_peak, peak

rng = np.random.default_rng(4)  # the course's convention; nothing in this lesson is random
TERA = 1e12  # FLOP/s in code; 989 * TERA is 989 TFLOP/s

# The worked example: GPT-3 6.7B (Brown et al. 2020, Table 2.1) with Megatron-LM's padded
# vocabulary, 1024 sequences of 2048 tokens per step on 64 H100 SXM in bf16.
layers, hidden, heads, head_dim = GPT3_CONFIGS["GPT-3 6.7B"]
vocab, seq_len, batch_size = 51200, 2048, 1024
num_devices, step_time = 64, 4.0  # GPUs; steady-state seconds per step (profiler)

# Exercise 1: PaLM 540B (Chowdhery et al. 2022, Table 1).
PALM_540B = dict(
    num_params=540.35e9,  # N
    num_layers=118,  # L
    d_model=18432,
    num_heads=48,  # H
    head_dim=256,  # Q
    seq_len=2048,  # T
)

# Exercise 2: the 1.7B configuration of Narayanan et al. 2021, Table 1; the time is synthetic.
MEGATRON_1P7B = dict(
    num_layers=24,
    hidden_size=2304,
    num_heads=24,
    vocab_size=51200,
    seq_len=2048,
    batch_size=512,  # sequences per iteration
    num_gpus=32,  # A100 SXM 80GB, bf16, full activation recomputation
    iteration_time=3.80,  # seconds, measured in steady state
)

# Exercise 3: four utilization claims for bf16 training (synthetic; GPT-3 architectures).
CLAIMS = pd.DataFrame(
    {
        "accelerator": ["TPU v4", "H200 SXM", "H100 SXM", "A100 SXM 80GB"],
        "num_devices": [64, 512, 128, 16],
        "model": ["GPT-3 2.7B", "GPT-3 175B", "GPT-3 6.7B", "GPT-3 760M"],
        "seq_len": [2048, 2048, 4096, 2048],
        "recompute": ["none", "full", "none", "none"],
        "model_flops_per_token": [17_899_192_320.0, 1_076_442_955_776.0, 46_355_447_808.0,
                                  5_454_692_352.0],
        "tokens_per_second": [444_400.0, 194_300.0, 1_204_000.0, 351_400.0],  # whole job
        "quoted_utilization": [0.452, 0.550, 0.220, 0.768],
    },
    index=pd.Index(["A", "B", "C", "D"], name="claim"),
)  # fmt: skip

# Exercise 4: one week of a GPT-3 175B run on 1024 A100 SXM 80GB, bf16, full recomputation.
RUN_175B = dict(
    num_gpus=1024,
    model_flops_per_step=3.3862e18,  # 72-form, 1536 sequences of 2048 tokens
)
JOB_LOG = dict(  # seconds, except the step counts
    window=604_800.0,  # 7 days of wall-clock, from the job's start
    steps_kept=18_000,  # steps whose updates are in the model at the end of the window
    steps_redone=420,  # steps lost to 3 failures (work since the last checkpoint), run again
    step_time=31.0,  # mean time per training step, steady state
    compute_kernel_time=27.9,  # per step: union of kernels on the compute streams
    all_kernel_time=29.6,  # per step: union of all kernels, NCCL collectives included
    checkpoint_time=7_920.0,  # 72 blocking checkpoint saves of 110 s
    eval_time=5_400.0,  # 18 evaluations of 300 s
    restart_downtime=7_200.0,  # 3 × 40 min: detect the failure, replace the node, reload
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
# multiply-add per token forward (2 FLOPs) and two backward (gradients for the input and for the
# weight, 4 FLOPs): $6N$. Attention adds, per layer, head and token, a dot product with each of the
# $T$ keys and a weighted sum of the $T$ values, $4TQ$ FLOPs forward, times 3 for forward and
# backward: $12LHQT$. Only matrix multiplications count; softmax, normalisation and the optimizer
# do not.
#
# Megatron-LM counts per iteration of $B$ sequences of length $s$ through $l$ layers of hidden
# size $h$, vocabulary $V$: a layer's forward matmuls are $24Bsh^2 + 4Bs^2h$, the logit layer's
# $2BshV$, and forward + backward is 3× that (Korthikanti et al. 2022, §6.3):
#
# $$F_{\text{iter}} = 72\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{12\,l\,h}\right).$$
#
# For a GPT with $N = 12lh^2 + Vh$ matmul parameters and $HQ = h$ the two agree:
# $F_{\text{iter}} = B\,s\,F_{\text{token}}$. The worked example of this lesson is GPT-3 6.7B
# (32 layers, $h$ = 4096, 32 heads of 128) with Megatron-LM's 51,200-token padded vocabulary.

# %%
h, s, V, B = hidden, seq_len, vocab, batch_size
num_params = 12 * layers * h**2 + V * h  # N: the matmul weights
attention = 12 * layers * heads * head_dim * s  # 12LHQT
flops_per_token = 6 * num_params + attention
model_flops_step = 72 * B * s * layers * h**2 * (1 + s / (6 * h) + V / (12 * layers * h))
print(f"N = {num_params / 1e9:.3f} B parameters")
print(
    f"6N + 12LHQT = {flops_per_token:.4e} FLOPs per token, {attention / flops_per_token:.1%} attention"
)
print(f"72-form per iteration / (B s) = {model_flops_step / (B * s):.4e}")

# %% [markdown]
# The rule of thumb "training compute ≈ $6ND$" ($D$ tokens) drops the attention term. Relative to
# $6N$ that term is about $s/(6h)$, so how much $6N$ leaves out depends on the model's shape, not
# on the hardware:

# %%
seq_lens = 2 ** np.arange(9, 16)  # 512 ... 32768
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
colours = ["#CC79A7", "#009E73", "#0072B2", "#D55E00"]
for (name, (l_, h_, heads_, q_)), colour in zip(GPT3_CONFIGS.items(), colours, strict=True):
    six_n = 6 * (12 * l_ * h_**2 + V * h_)
    share = [12 * l_ * heads_ * q_ * t / (six_n + 12 * l_ * heads_ * q_ * t) for t in seq_lens]
    ax.plot(seq_lens, share, "o-", color=colour, lw=2, ms=4, label=f"{name} (h = {h_})")
ax.axvline(2048, color="#555555", ls=":", lw=1)
ax.set(xscale="log", xlabel="sequence length T", ylim=(0, 0.8))
ax.set_xticks(seq_lens, [str(t) for t in seq_lens])
ax.minorticks_off()
ax.set_ylabel("share of model FLOPs\nmissing from 6N")
ax.yaxis.set_major_formatter(PercentFormatter(1.0))
ax.grid(alpha=0.3)
ax.legend(frameon=False, loc="upper left")
ax.set_title("What 6N leaves out: the attention term 12LHQT / (6N + 12LHQT)", loc="left")
plt.show()

# %% [markdown]
# Each line is one GPT-3 size; the dotted line marks GPT-3's own $T = 2048$, where the worked
# model's attention is 7.5 % of its $4.31 \times 10^{10}$ FLOPs per token. At 175B the term is
# under 3 % and $6N$ is a fine shortcut. At 760M and $T = 32768$ it is three quarters of the work:
# an MFU computed from $6N$ would be a quarter of the true one.

# %% [markdown]
# ## 2. MFU counts model FLOPs, HFU executed FLOPs, so HFU ≥ MFU
#
# **Model FLOPs utilization** is the throughput a run achieves, counted in model FLOPs, over the
# peak of the devices it occupies (Chowdhery et al. 2022, §4.1 and Appendix B):
#
# $$\text{MFU} = \frac{\text{tokens/s} \times F_{\text{token}}}{n_{\text{dev}} \times P},$$
#
# where tokens/s is the whole job's throughput, $n_{\text{dev}}$ the number of devices and $P$
# the peak FLOP/s of one device. The numerator counts what the model needs, not what the
# implementation did, so a faster implementation of the same model raises MFU.
#
# The worked run uses **full activation recomputation**: the forward pass keeps only each layer's
# input, and the backward pass runs the layer's forward again before its own matmuls — four
# forward-sized passes per layer instead of three; the logit layer is not recomputed. The executed
# FLOPs are (Narayanan et al. 2021, §5.1, Eq. 3)
#
# $$F^{\text{exec}}_{\text{iter}} = 96\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{16\,l\,h}\right).$$
#
# **Hardware FLOPs utilization** divides the executed FLOP/s by the peak. Same run, same time,
# more FLOPs counted: HFU ≥ MFU, with equality when nothing is recomputed (Korthikanti et al.
# 2022, §6.3). PaLM 540B reports both: 46.2 % MFU and 57.8 % HFU (Chowdhery et al. 2022, §4.1).

# %%
dense_peak = eligible_peak("H100 SXM", "bf16")  # 989 TFLOP/s per GPU: section 3
executed_flops_step = 96 * B * s * layers * h**2 * (1 + s / (6 * h) + V / (16 * layers * h))
tokens_per_second = B * s / step_time
mfu_step = tokens_per_second * flops_per_token / (num_devices * dense_peak)
hfu_step = executed_flops_step / step_time / (num_devices * dense_peak)
print(f"{tokens_per_second:,.0f} tokens/s on {num_devices} GPUs")
print(f"MFU = {mfu_step:.4f}, HFU = {hfu_step:.4f}")
print(f"executed / model FLOPs = {executed_flops_step / model_flops_step:.4f}")

# %% [markdown]
# Each GPU turns 353 TFLOP/s into model progress, 35.7 % of its 989, while it executes 468
# TFLOP/s, 47.3 %. The ratio is 1.32, a little under 4/3 because the logit layer runs three
# passes, not four. Both numbers are true; HFU says how busy the hardware is, MFU how fast the
# model trains, and only MFU rewards recomputing less. Korthikanti et al. (2022) ran a 530B model
# on 2240 A100s at 54.2 % MFU with sequence parallelism and selective recomputation together,
# against 42.1 % with full recomputation. By HFU the comparison reverses: the full-recomputation
# run executes about 4/3 × 42.1 ≈ 56 % of peak, the new one barely more than its 54.2 %. The 29 %
# speed-up is invisible.
#
# Quoting HFU as "utilization" without saying so inflates the number by up to a third.
# Megatron-LM's headline "52 % of theoretical peak" for its 1T-parameter model counts Eq. 3's
# executed FLOPs: it is an HFU.

# %% [markdown]
# ## 3. The eligible peak is the dense tensor-core peak of the training dtype
#
# The denominator is a convention too. NVIDIA's A100 datasheet (column "A100 80GB SXM") lists a
# peak per dtype and unit: FP64 9.7 TFLOP/s, FP64 Tensor Core 19.5, FP32 19.5, TF32 Tensor Core
# 156, BF16 and FP16 Tensor Core 312 — and next to the last three a second figure, twice as
# large, "with sparsity". **2:4 structured sparsity** (two of every four weights zero, in a
# fixed pattern) lets the tensor cores skip half the multiply-adds, and the printed number counts
# the skipped ones as done.
#
# This lesson uses the **BF16 Tensor Core dense** figure, 312 TFLOP/s on A100: the matmuls of bf16
# training run on the tensor cores in bf16, and dense weights have nothing for 2:4 sparsity to
# skip. That is the **eligible peak**: dense, tensor core, training dtype. The H100 datasheet
# prints only the sparse tensor-core figures (1,979 TFLOP/s for bf16); the dense 989 is in the
# Hopper architecture whitepaper. `course_lib.hardware` keeps every figure with its dtype,
# convention and source:

# %%
table = accelerator_table()
shown = table[table["name"].isin(["A100 SXM 80GB", "H100 SXM"]) & (table["dtype"] != "fp32")]
display(shown[["name", "dtype", "sparsity", "peak_tflops"]].set_index(["name", "dtype"]))
sparse_peak = peak("H100 SXM", "bf16", sparse=True)
rate = mfu_step * dense_peak  # the worked run's model FLOP/s per GPU
for what, p in [("dense peak", dense_peak), ("2:4-sparse figure", sparse_peak)]:
    print(f"worked run against the {what} ({p / TERA:.0f} TFLOP/s): {rate / p:.1%}")

# %% [markdown]
# The sparse figure halves every utilization. Other denominators move it too: A100's dense TF32
# peak (156 TFLOP/s) doubles a bf16 run's number, and so does a per-TensorCore peak for a TPU v4
# chip, which has two TensorCores and 275 TFLOP/s.

# %% [markdown]
# ## 4. The time base is part of the definition
#
# "Tokens per second" needs a clock. Three are in use, and each includes more of what a training
# job spends its time on:
#
# - **kernel time**: the time the device runs compute kernels, the union of the kernel intervals
#   on the compute streams of a profiler trace. NCCL collectives are kernels too, on their own
#   streams; they are communication, so they stay out, as do idle gaps and waits (cost03). What
#   remains measures the kernels, not the training;
# - **step time**: the steady-state time of a training step, start to start, with everything
#   inside it; benchmark tables usually report this;
# - **wall-clock**: a window of the real job: input stalls between steps, evaluation, checkpoint
#   saves, failures, restarts, and the steps lost since the last checkpoint, which are run again
#   and count as time but not as progress.
#
# With $S$ steps kept in a window of length $T_{\text{wall}}$,
#
# $$\text{MFU}_{\text{wall}} = \frac{S \times F_{\text{iter}}}{n_{\text{dev}}\,P\,T_{\text{wall}}}.$$
#
# A day of the worked run, from its job log:

# %%
day = dict(
    window=86_400.0,
    steps_kept=19_000,
    steps_redone=400,  # one failure: the steps since the last checkpoint, run again
    compute_kernel_time=3.5,  # per step: compute-stream kernels, from the profiler
)
per_gpu = {  # FLOP/s per GPU, from the peak down
    "H100 bf16 dense peak": dense_peak,
    "executed · kernel time  (HFU)": executed_flops_step / day["compute_kernel_time"] / num_devices,
    "executed · step time  (HFU)": executed_flops_step / step_time / num_devices,
    "model · step time  (MFU)": model_flops_step / step_time / num_devices,
    "model · wall-clock  (MFU)": day["steps_kept"] * model_flops_step / day["window"] / num_devices,
}
drops = [
    "kernels run below peak",
    "GPU idle inside the step",
    "recomputation: executed, not model",
    "stalls, eval, checkpoints, restarts, redone steps",
]
fig, ax = plt.subplots(figsize=(9, 4.2), layout="constrained")
utilization_waterfall(
    per_gpu.items(), drops, dense_peak, ax, title="One day of the worked run: from the peak to MFU"
)
plt.show()

# %% [markdown]
# Read from the top. The grey bar is the eligible peak; each blue bar is a number someone could
# publish for this run; each orange sliver is what the next convention subtracts. The kernels
# execute 54.0 % of peak while they run, the step's idle time takes 6.8 points, recomputation
# 11.6, and everything outside the steps 4.3 more: 31.4 % of peak became model progress over the
# day. The same GPUs did the same work in all of them; a percentage without its conventions
# cannot be told apart from any of the others.

# %% [markdown]
# ## Explore
#
# The explorer holds the hardware fixed: while kernels run, every GPU executes 62 % of the H100's
# dense bf16 peak (613 TFLOP/s); kernels run 86 % of each step; 10 % of the wall-clock lies
# outside the steps and 3 % of the steps are redone. The top row sets the run, the second row the
# conventions. Left, the waterfall from the chosen peak to the quoted number (orange); right, all
# nine (FLOP count × time base) numbers of the same run, the chosen one outlined. Try:
#
# 1. Toggle **peak** to 2:4 sparse. No bar moves; the 100 % line jumps to 1,979 TFLOP/s and every
#    number halves.
# 2. Toggle **recomputation** to full. The executed bars stay where they were — the hardware did
#    not change — while MFU falls from 53.3 % to 40.3 %. Switch FLOP count to executed: HFU is
#    still 53.3 %.
# 3. Pick GPT-3 760M, FLOP count 6N, and drag the **sequence length** from 512 to 32768: 6N ends at
#    a quarter of the true MFU. With 175B, up to $s$ = 8192 it costs less than a tenth.
# 4. Step the **time base** from kernel to wall-clock: how far apart are the matrix's smallest and
#    largest numbers at your setting?

# %%
explorer = utilization_explorer()
explorer

# %% [markdown]
# ## Exercises
#
# The data are in the setup cell. Utilizations are fractions (0.462, not 46.2); FLOPs and FLOP/s
# are plain floats (3.1e12, not 3.1 TFLOP). Compute in code from the data without rounding: the
# hidden tests compare to a relative 1e-6. Peaks come from `eligible_peak(name, dtype)`.
#
# ### Exercise 1 — Model FLOPs per token of PaLM 540B (2 points)
#
# Compute PaLM 540B's model FLOPs per token of training at its sequence length with PaLM's own
# formula and the numbers in `PALM_540B`. Store it in `palm_flops_per_token`, a float.

# %% nbgrader={"grade": false, "grade_id": "palm_flops_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_p = PALM_540B
palm_flops_per_token = (
    6 * _p["num_params"] + 12 * _p["num_layers"] * _p["num_heads"] * _p["head_dim"] * _p["seq_len"]
)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "palm_flops_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: PaLM 540B model FLOPs per token, 6N + 12LHQT at T = 2048 (a float)."""
check_range("palm_flops_per_token", palm_flops_per_token, 1e11, 1e14, what="FLOPs per token")
### BEGIN HIDDEN TESTS
check_float(
    "palm_flops_per_token",
    palm_flops_per_token,
    3.277734806784e12,
    known_wrong={
        3.2421e12: "6N alone: the attention term 12LHQT is missing",
        3.295552210176e12: "12·L·d_model·T: PaLM's heads give H·Q = 12288, not d_model = 18432",
        3.259917403392e12: "the attention term halved for the causal mask: PaLM counts it whole",
        1.092578268928e12: "the forward pass only (2N + 4LHQT)",
        4.370313075712e12: "executed FLOPs with recomputation (8N + 16LHQT), not model FLOPs",
    },
)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — HFU of a run with full recomputation (2 points)
#
# `MEGATRON_1P7B` is the configuration of the smallest model in Narayanan et al.'s Table 1,
# trained in bf16 on 32 A100 SXM 80GB with full activation recomputation; one iteration of 512
# sequences takes 3.80 s (a synthetic measurement). Compute the run's HFU and store it in
# `hfu_1p7b`, a float.

# %% nbgrader={"grade": false, "grade_id": "hfu_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_m = MEGATRON_1P7B
_B, _s, _l, _h, _V = (
    _m[k] for k in ("batch_size", "seq_len", "num_layers", "hidden_size", "vocab_size")
)
_executed = 96 * _B * _s * _l * _h**2 * (1 + _s / (6 * _h) + _V / (16 * _l * _h))
hfu_1p7b = _executed / (
    _m["iteration_time"] * _m["num_gpus"] * eligible_peak("A100 SXM 80GB", "bf16")
)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "hfu_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: HFU of the 1.7B run with full recomputation (a fraction of the dense peak)."""
check_range("hfu_1p7b", hfu_1p7b, 0.0, 1.0, what="a fraction of the peak, not a percentage")
### BEGIN HIDDEN TESTS
check_float(  # 96-form FLOPs / (3.80 s × 32 × 312 TFLOP/s)
    "hfu_1p7b",
    hfu_1p7b,
    0.407674122488745,
    known_wrong={
        0.310646116368583: "the MFU (the 72-form model FLOPs): HFU counts the recomputed forward",
        0.414194821824777: "4/3 of the model FLOPs (8N + 16LHQT per token): the logit layer "
        "is not recomputed, so its term is V/16lh, not V/12lh",
        0.357595151588015: "the 96-form without its attention term s/6h",
        0.364115850924049: "8N per token: the attention FLOPs are missing",
        0.203837061244373: "against the 2:4-sparse peak (624 TFLOP/s)",
    },
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Find the number quoted against a sparse peak (3 points)
#
# `CLAIMS` holds four utilization claims for bf16 training runs: the accelerator, the number of
# devices, the model FLOPs per token ($6N + 12LHQT$, given), the whole job's measured tokens/s
# and the quoted utilization. Exactly one was computed against a 2:4-sparse peak; the others are
# not all honest either.
#
# a) Set `claim_mfu` to the MFU of each claim against its eligible peak: a numpy array of four
#    floats in the order of `CLAIMS.index` (`.to_numpy()` turns a column into one). (2 points)
#
# b) Set `sparse_claim` to the letter of the claim quoted against the sparse peak, a str:
#    `"A"`, `"B"`, `"C"` or `"D"`. (1 point)

# %%
CLAIMS

# %% nbgrader={"grade": false, "grade_id": "claim_mfu_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_peaks = np.array([eligible_peak(name, "bf16") for name in CLAIMS["accelerator"]])
claim_mfu = (CLAIMS["tokens_per_second"] * CLAIMS["model_flops_per_token"]).to_numpy() / (
    CLAIMS["num_devices"].to_numpy() * _peaks
)
### END SOLUTION
print("claim_mfu =", np.round(claim_mfu, 4))

# %% nbgrader={"grade": true, "grade_id": "claim_mfu_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3a: the MFU of claims A to D against their eligible peaks (a numpy array of 4 floats)."""
check_type("claim_mfu", claim_mfu, np.ndarray)
check_range("len(claim_mfu)", len(claim_mfu), 4, 4, what="one MFU per claim, A to D")
for _letter, _value in zip("ABCD", claim_mfu, strict=True):
    check_range(f"claim_mfu, claim {_letter}", _value, 0.0, 1.0, what="a fraction of the peak")
### BEGIN HIDDEN TESTS
_expected = {  # tokens/s × FLOPs per token / (devices × dense bf16 peak)
    "A": (
        0.45195460608,
        {
            0.90390921216: "a per-TensorCore peak: a TPU v4 chip has two",
            0.452: "the quote, rounded: compute it",
        },
    ),
    "B": (
        0.413045189086350,
        {
            0.206418237496918: "against the 2:4-sparse peak (1,979 TFLOP/s)",
            0.550726918781800: "4/3 × the FLOPs, recomputation counted: that is an HFU",
            0.550244096051770: "the executed FLOPs, recomputation counted: that is an HFU",
            0.550: "the quote itself",
        },
    ),
    "C": (
        0.440880617739130,
        {
            0.220328919122789: "against the 2:4-sparse peak (1,979 TFLOP/s)",
            0.220: "the quote itself",
        },
    ),
    "D": (
        0.383970130707692,
        {
            0.767940261415385: "against A100's TF32 peak (156 TFLOP/s), not bf16",
            0.191985065353846: "against the 2:4-sparse peak (624 TFLOP/s)",
            0.768: "the quote itself",
        },
    ),
}
for _i, (_letter, (_mfu, _wrong)) in enumerate(_expected.items()):
    check_float(f"claim_mfu, claim {_letter}", claim_mfu[_i], _mfu, known_wrong=_wrong)
### END HIDDEN TESTS
passed("Exercise 3a")

# %% nbgrader={"grade": false, "grade_id": "sparse_claim_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
print("quote / MFU:", (CLAIMS["quoted_utilization"] / claim_mfu).round(2).to_dict())
sparse_claim = "C"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "sparse_claim_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3b: the claim quoted against a 2:4-sparse peak ("A", "B", "C" or "D")."""
check_type("sparse_claim", sparse_claim, str)
### BEGIN HIDDEN TESTS
check_choice(
    "sparse_claim",
    sparse_claim,
    "C",
    {
        "A": "claim A's quote equals its MFU against TPU v4's 275 TFLOP/s: it is honest",
        "B": "claim B's quote is 1.33× its MFU: an HFU counting recomputation — inflated, "
        "not sparse",
        "C": "claim C's quote is half its MFU: it divides by the 2:4-sparse 1,979 TFLOP/s",
        "D": "claim D's quote is twice its MFU: it divides by A100's dense TF32 peak (156) — "
        "the wrong dtype, and it inflates rather than halves",
    },
)
### END HIDDEN TESTS
passed("Exercise 3b")

# %% [markdown]
# ### Exercise 4 — One run, two time bases (3 points)
#
# `RUN_175B` and `JOB_LOG` describe a week of a GPT-3 175B run on 1024 A100 SXM 80GB in bf16 with
# full recomputation; its model FLOPs per step are given. Compute its MFU
#
# a) on the step-time base, `mfu_step_175b` (1 point), and
#
# b) on the wall-clock base over the whole window, `mfu_wall_175b` (2 points),
#
# both floats against the eligible peak.

# %% nbgrader={"grade": false, "grade_id": "mfu_step_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_cluster = RUN_175B["num_gpus"] * eligible_peak("A100 SXM 80GB", "bf16")
mfu_step_175b = RUN_175B["model_flops_per_step"] / (_cluster * JOB_LOG["step_time"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mfu_step_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4a: MFU of the 175B run on the step-time base (a fraction)."""
check_range("mfu_step_175b", mfu_step_175b, 0.0, 1.0, what="a fraction of the peak")
### BEGIN HIDDEN TESTS
check_float(
    "mfu_step_175b",
    mfu_step_175b,
    0.341897843000414,
    known_wrong={
        0.379886492222682: "the compute-kernel time, not the step time",
        0.358068686926109: "the union of all kernels (NCCL included), not the step time",
        0.170948921500207: "against the 2:4-sparse peak",
    },
)
### END HIDDEN TESTS
passed("Exercise 4a")

# %% nbgrader={"grade": false, "grade_id": "mfu_wall_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_cluster = RUN_175B["num_gpus"] * eligible_peak("A100 SXM 80GB", "bf16")
mfu_wall_175b = (
    JOB_LOG["steps_kept"] * RUN_175B["model_flops_per_step"] / (_cluster * JOB_LOG["window"])
)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mfu_wall_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4b: MFU of the 175B run on the wall-clock base over the 7-day window (a fraction)."""
check_range("mfu_wall_175b", mfu_wall_175b, 0.0, 1.0, what="a fraction of the peak")
### BEGIN HIDDEN TESTS
check_float(
    "mfu_wall_175b",
    mfu_wall_175b,
    0.315441462292048,
    known_wrong={
        0.322801763078863: "redone steps counted as progress: they were run twice, kept once",
        0.319241961837736: "the window without the restart downtime",
        0.334102126710502: "the time of the steps run (kept and redone): the wall-clock also "
        "holds stalls, evaluation, checkpoints and restarts",
        0.341897843000414: "the step-time MFU",
        0.157720731146024: "against the 2:4-sparse peak",
    },
)
### END HIDDEN TESTS
passed("Exercise 4b")

# %% [markdown]
# ### Explained answer — When are two MFU numbers comparable? (2 points, graded by hand)
#
# A slide titled "MFU of large-model training" lists PaLM 540B at 46.2 % (Chowdhery et al. 2022),
# Megatron-LM's 1T model at 52 % (Narayanan et al. 2021) and a 530B model at 54.2 % (Korthikanti
# et al. 2022), and concludes that Megatron-LM uses its hardware best. In 4–6 sentences: which
# conventions must two numbers share before you compare them, which of these three can be
# compared as they stand, and what does the comparison look like after you convert? Quote numbers
# from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_comparable_mfu", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Two utilizations compare only if they share the FLOP count (model FLOPs with
# the same terms: attention included, causal mask not discounted), the peak (dense, tensor core,
# the training dtype, per device of the same kind) and the time base (kernel, step or wall-clock).
# Megatron-LM's 52 % counts Eq. 3's executed FLOPs with the recomputed forward: it is an HFU, and
# with the 1T model's executed/model ratio of about 4/3 its MFU is about 39 % — below PaLM's
# 46.2 %, not above. Korthikanti's 54.2 % is a model-FLOPs number (the 72-form, which equals
# $6N + 12LHQT$ for a GPT) against the A100's dense 312 TFLOP/s, so it matches PaLM's MFU in FLOP
# count and peak convention; both are throughput numbers, and Megatron-LM's come from benchmark
# runs, so neither includes the wall-clock losses of Exercise 4. Even then they measure different
# systems (TPU v4 vs A100, different sizes and parallelism): the comparison is of the whole stack.
#
# **Rubric (2 points).** 1 point: names the conventions that must match (FLOP count including
# recomputation, peak including dense/dtype, time base). 1 point: identifies Megatron's 52 % as an
# HFU and converts it (≈ 39 %), or otherwise applies the conventions to the three numbers
# correctly.

# %% [markdown]
# ## Takeaways
#
# - Model FLOPs per token are $6N + 12LHQT$ (PaLM); per iteration
#   $72Bslh^2(1 + s/6h + V/12lh)$ (Megatron-LM). $6N$ alone drops the attention term, about
#   $s/6h$ of $6N$.
# - MFU counts model FLOPs; HFU counts executed FLOPs, recomputation included, so HFU ≥ MFU. Only
#   MFU shows what recomputing costs.
# - The eligible peak is the dense tensor-core peak of the training dtype: 312 TFLOP/s on A100 and
#   989 on H100 for bf16; the 2:4-sparse figures are not eligible.
# - The trap: comparing two utilization percentages without their FLOP count, peak and time base.
#   The same run gave numbers from 31 % to 54 % of peak in section 4, and a sparse denominator
#   would halve each of them.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - **Causal attention.** A causal mask leaves half the score matrix unused, and kernels such as
#   FlashAttention skip it. Some tools therefore count $6N + 6LHQT$; PaLM's convention counts the
#   full $T \times T$ matrix. Ask which one a number uses.
# - **Clocks.** Datasheet peaks assume the boost clock. A GPU that throttles under its power limit
#   runs below it, and that loss belongs in the utilization: the convention is the datasheet's
#   dense figure, not the clock you happened to get.
# - **fp8.** On H100 the dense fp8 peak (1,979 TFLOP/s) equals the sparse bf16 figure. An fp8 run
#   quoted against the bf16 peak reads twice as well as it is; a run that mixes fp8 and bf16
#   matmuls has no single eligible peak, so say how you weighted it.
# - **Selective recomputation** (Korthikanti et al. 2022, §5) re-runs only the attention core: the
#   score and value products add $4Bs^2h$ forward FLOPs per layer, so HFU sits just above MFU —
#   about 54.5 % for the 530B run of section 2, below the full-recomputation run's 56 %.
