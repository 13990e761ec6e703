# %% [markdown]
# # cost04 · A utilization percentage is meaningful only with its FLOP and time conventions
#
# **Objective.** Define useful model FLOPs, executed recomputation, eligible peak throughput, and
# completed time before comparing training utilization.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - count a transformer's model FLOPs per token (PaLM) and per iteration (Megatron-LM);
# - compute MFU from a measured throughput, and HFU when activations are recomputed;
# - choose the eligible peak and spot a number quoted against a 2:4-sparse peak;
# - compute one run's MFU on two time bases;
# - decide whether two published MFU numbers can be compared.
#
# **What you need:** the matrix multiplications of a transformer layer and Python arithmetic with
# powers of ten. cost01's step that is more than the sum of its kernels returns in section 4.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import PercentFormatter

from course_lib.checks import check_choice, check_float, check_range, check_type, forbid, passed
from course_lib.explorers.utilization import GPT3_CONFIGS, utilization_explorer
from course_lib.figures.utilization import utilization_waterfall
from course_lib.hardware import accelerator_table, eligible_peak, peak

rng = np.random.default_rng(4)  # the course's convention; nothing in this lesson is random
TERA = 1e12  # FLOP/s in code; 989 * TERA is 989 TFLOP/s

# The worked example: GPT-3 6.7B (Brown et al. 2020, Table 2.1) with Megatron-LM's padded
# vocabulary, 1024 sequences of 2048 tokens per step on 64 H100 SXM in bf16.
layers, hidden, heads, head_dim = GPT3_CONFIGS["GPT-3 6.7B"]
vocab, seq_len, batch_size = 51200, 2048, 1024
num_devices, step_time = 64, 4.0  # GPUs; seconds per step (synthetic)

# Exercise 1: PaLM 540B (Chowdhery et al. 2022, Table 1: every head has size 256).
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
    iteration_time=3.80,  # seconds per iteration (synthetic)
)

# Exercise 3: four utilization claims for bf16 training of GPT-3 shapes (synthetic).
CLAIMS = pd.DataFrame(
    {
        "accelerator": ["A100 SXM 80GB", "H200 SXM", "H100 SXM", "A100 SXM 80GB"],
        "num_devices": [64, 512, 128, 16],
        "model": ["GPT-3 2.7B", "GPT-3 175B", "GPT-3 6.7B", "GPT-3 760M"],
        "model_flops_per_token": [17_899_192_320.0, 1_076_442_955_776.0, 46_355_447_808.0,
                                  5_454_692_352.0],
        "tokens_per_second": [498_600.0, 194_300.0, 1_204_000.0, 351_400.0],  # whole job
        "quoted_utilization": [0.447, 0.550, 0.220, 0.768],
    },
    index=pd.Index(["A", "B", "C", "D"], name="claim"),
)  # fmt: skip

# Exercise 4: GPT-3 175B on 1024 A100 SXM 80GB, 1536 sequences of 2048 tokens per step, bf16,
# full recomputation (the configuration of Narayanan et al. 2021, §5.1). The job log is synthetic.
RUN_175B = dict(
    num_gpus=1024,
    model_flops_per_step=72
    * 1536
    * 2048
    * 96
    * 12288**2  # the 72-form of section 1
    * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288)),
)
JOB_LOG = dict(  # seconds, except the step counts (synthetic)
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
# Utilization is achieved FLOP/s over peak FLOP/s, and both halves are conventions. The standard
# FLOP count, introduced with the term MFU, is PaLM's **model FLOPs** per token of training
# (Chowdhery et al. 2022, Appendix B):
#
# $$F_{\text{token}} = 6N + 12\,L\,H\,Q\,T,$$
#
# where $N$ is the number of parameters, $L$ the number of layers, $H$ the number of attention
# heads, $Q$ the head dimension and $T$ the sequence length. Each parameter does one multiply-add
# per token forward (2 FLOPs) and two backward (4 FLOPs): $6N$. Attention adds, per layer, head
# and token, a dot product with each of the $T$ keys and a weighted sum of the $T$ values, $4TQ$
# FLOPs forward, times 3 with the backward: $12LHQT$.
#
# Megatron-LM counts per iteration of $B$ sequences of length $s$ through $l$ layers of hidden
# size $h$, vocabulary $V$: a layer's forward matmuls are $24Bsh^2 + 4Bs^2h$, the logit layer's
# $2BshV$, and forward + backward is 3× that (Korthikanti et al. 2022, Appendix A, Eq. 7):
#
# $$F_{\text{iter}} = 72\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{12\,l\,h}\right).$$
#
# For a GPT, with $N = 12lh^2 + Vh$ and $HQ = h$, the two agree: $F_{\text{iter}} = B\,s\,
# F_{\text{token}}$. The worked example is GPT-3 6.7B (32 layers, $h$ = 4096, 32 heads of 128).

# %%
h, s, V, B = hidden, seq_len, vocab, batch_size
num_params = 12 * layers * h**2 + V * h  # N: the matmul weights
attention = 12 * layers * heads * head_dim * s  # 12LHQT
flops_per_token_67b = 6 * num_params + attention
model_flops_step = 72 * B * s * layers * h**2 * (1 + s / (6 * h) + V / (12 * layers * h))
print(f"N = {num_params / 1e9:.3f} B parameters")
print(
    f"6N + 12LHQT = {flops_per_token_67b:.4e} FLOPs per token, {attention / flops_per_token_67b:.1%} attention"
)
print(f"72-form per iteration / (B s) = {model_flops_step / (B * s):.4e}")

# %% [markdown]
# The rule of thumb "training compute ≈ $6ND$" ($D$ tokens) drops the attention term, about
# $s/(6h)$ of $6N$: under 3 % for GPT-3 175B at its $T = 2048$ (dotted), three quarters of the
# work for 760M at $T = 32768$, where an MFU computed from $6N$ is a quarter of the true one.

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
# ## 2. MFU counts model FLOPs, HFU executed FLOPs, so HFU ≥ MFU
#
# **Model FLOPs utilization** is a run's throughput, counted in model FLOPs, over the peak of its
# devices (Chowdhery et al. 2022, §4.1 and Appendix B):
#
# $$\text{MFU} = \frac{\text{tokens/s} \times F_{\text{token}}}{n_{\text{dev}} \times P},$$
#
# where tokens/s is the whole job's throughput, $n_{\text{dev}}$ the number of devices and $P$
# the peak FLOP/s of one device.
#
# The worked run uses **full activation recomputation**: the forward keeps only each layer's
# input, and the backward runs the layer's forward again first — four forward-sized passes per
# layer instead of three; the logit layer is not recomputed. The executed FLOPs are (Narayanan et
# al. 2021, §5.1, Eq. 3)
#
# $$F^{\text{exec}}_{\text{iter}} = 96\,B\,s\,l\,h^2\left(1 + \frac{s}{6h} + \frac{V}{16\,l\,h}\right).$$
#
# **Hardware FLOPs utilization** divides the executed FLOP/s by the peak: same run, same time,
# more FLOPs counted, so HFU ≥ MFU, equal when nothing is recomputed (Korthikanti et al. 2022,
# §6.3). PaLM 540B reports both: 46.2 % MFU and 57.8 % HFU (Chowdhery et al. 2022, §4.1).

# %%
dense_peak = eligible_peak("H100 SXM", "bf16")  # 989 TFLOP/s per GPU: section 3
executed_flops_step = 96 * B * s * layers * h**2 * (1 + s / (6 * h) + V / (16 * layers * h))
tokens_per_second = B * s / step_time
mfu_step = tokens_per_second * flops_per_token_67b / (num_devices * dense_peak)
hfu_step = executed_flops_step / step_time / (num_devices * dense_peak)
print(f"{tokens_per_second:,.0f} tokens/s on {num_devices} GPUs")
print(f"MFU = {mfu_step:.4f}, HFU = {hfu_step:.4f}")
print(f"executed / model FLOPs = {executed_flops_step / model_flops_step:.4f}")

# %% [markdown]
# Each GPU turns 353 TFLOP/s into model progress (35.7 % of 989) while executing 468 (47.3 %).
# The ratio, 1.32, is a little under 4/3 because the logit layer runs three passes, not four. HFU
# says how busy the hardware is, MFU how fast the model trains; only MFU rewards recomputing less.
# Megatron-LM's headline "52 % of theoretical peak" for its 1T model counts Eq. 3's executed
# FLOPs: it is an HFU. Korthikanti et al. (2022) quote MFU, with HFU beside it in their Table 5;
# their 530B model reaches 54.2 % MFU on 2,240 A100s.

# %% [markdown]
# ## 3. The eligible peak is the dense tensor-core peak of the training dtype
#
# The denominator is a convention too. NVIDIA's A100 datasheet (column "A100 80GB SXM") lists a
# peak per dtype and unit, from FP64 to BF16 Tensor Core, and next to the TF32, BF16 and FP16
# Tensor Core figures a second one, twice as large, "with sparsity": **2:4 structured sparsity**
# (two of every four weights zero) lets the tensor cores skip half the multiply-adds, and the
# printed number counts the skipped ones as done.
#
# The **eligible peak** is the dense tensor-core figure of the training dtype: bf16 training runs
# its matmuls on the tensor cores, and dense weights have nothing to skip. On A100 that is 312
# TFLOP/s. The H100 datasheet prints only sparse figures (1,979 TFLOP/s for bf16); the dense 989
# is in the Hopper whitepaper. `course_lib.hardware` keeps each figure with its convention:

# %%
table = accelerator_table()
shown = table[table["name"].isin(["A100 SXM 80GB", "H100 SXM"]) & (table["dtype"] != "fp32")]
display(shown[["name", "dtype", "sparsity", "peak_tflops"]].set_index(["name", "dtype"]))
sparse_peak = peak("H100 SXM", "bf16", sparse=True)
rate = mfu_step * dense_peak  # the worked run's model FLOP/s per GPU
for what, p in [("dense peak", dense_peak), ("2:4-sparse figure", sparse_peak)]:
    print(f"worked run against the {what} ({p / TERA:.0f} TFLOP/s): {rate / p:.1%}")

# %% [markdown]
# The sparse figure halves every utilization. A smaller denominator inflates it: A100's dense TF32
# peak (156 TFLOP/s) doubles a bf16 run's number.

# %% [markdown]
# ## 4. The time base is part of the definition
#
# "Tokens per second" needs a clock. Three are in use, each including more of the job:
#
# - **kernel time**: the union of the kernels on the compute streams of a profiler trace. NCCL
#   collectives are kernels too, but communication, so they stay out, as do idle gaps;
# - **step time**: a steady-state training step, start to start, everything inside it included;
#   benchmark tables usually report this;
# - **wall-clock**: a window of the real job, with input stalls, evaluation, checkpoints,
#   failures and restarts, and the steps lost since the last checkpoint, which are run again:
#   they count as time, not as progress.
#
# With $S$ steps kept in a window of length $T_{\text{wall}}$,
#
# $$\text{MFU}_{\text{wall}} = \frac{S \times F_{\text{iter}}}{n_{\text{dev}}\,P\,T_{\text{wall}}}.$$
#
# A day of the worked run, from a synthetic job log:

# %%
day = dict(  # synthetic
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
# Grey is the eligible peak, each blue bar a number someone could publish for this run, each
# orange sliver what the next convention subtracts. The kernels execute 54.0 % of peak while they
# run; idle time in the step takes 6.8 points, recomputation 11.6, everything outside the steps
# 4.3: 31.4 % of peak became model progress. Same GPUs, same work, five percentages.

# %% [markdown]
# ## Explore
#
# The explorer holds the hardware fixed (kernels at 62 % of the H100's dense peak, busy 86 % of
# each step, 10 % of the wall-clock outside the steps) while you change the run (top row) and the
# conventions (second row); right, all nine (FLOP count × time base) numbers of the run. Try:
#
# 1. Toggle **peak** to 2:4 sparse: no bar moves, the 100 % line jumps and every number halves.
# 2. Toggle **recomputation** to full: the executed bars stay put while MFU falls from 53.3 % to
#    40.3 %; switch FLOP count to executed and HFU is still 53.3 %.

# %%
explorer = utilization_explorer()
explorer

# %% [markdown]
# ## Exercises
#
# The data are in the setup cell. Utilizations are fractions (0.462, not 46.2), FLOPs plain
# floats; compute without rounding (the hidden tests compare to a relative 1e-6). Peaks come from
# `eligible_peak(name, dtype)`. The FLOP formulas are yours: while a grade cell calls your
# function, the FLOP counters of `course_lib.flops` are disabled.
#
# ### Exercise 1 — Model FLOPs per token (2 points)
#
# Write `flops_per_token(model)`: PaLM's model FLOPs per token of training, a float, for a model
# described by a dict with the keys of `PALM_540B`. The hidden tests try PaLM's other sizes and a
# GPT-3.


# %% nbgrader={"grade": false, "grade_id": "palm_flops_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def flops_per_token(model: dict) -> float:
    """PaLM's model FLOPs per token of training, 6N + 12LHQT (Chowdhery et al. 2022, App. B)."""
    ### BEGIN SOLUTION
    m = model
    return (
        6 * m["num_params"] + 12 * m["num_layers"] * m["num_heads"] * m["head_dim"] * m["seq_len"]
    )
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "palm_flops_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: flops_per_token(model) -> 6N + 12LHQT (a float), without course_lib.flops."""
import course_lib.flops as _flops

_no_counters = [(_flops, "model_flops_per_token"), (_flops, "megatron_flops_per_iteration")]


def _palm_wrong(m: dict) -> dict:
    """The mistakes the lesson warns about, evaluated for model m."""
    n, lt = m["num_params"], m["num_layers"] * m["seq_len"]
    hq = m["num_heads"] * m["head_dim"]
    return {
        6 * n: "6N alone: the attention term 12LHQT is missing",
        6 * n + 12 * lt * m["d_model"]: "12·L·d_model·T: the attention term takes H·Q, which "
        "need not equal d_model",
        6 * n + 6 * lt * hq: "the attention term halved for the causal mask: PaLM counts it whole",
        2 * n + 4 * lt * hq: "the forward pass only (2N + 4LHQT)",
        8 * n + 16 * lt * hq: "executed FLOPs with recomputation (8N + 16LHQT), not model FLOPs",
        (6 * n + 12 * lt * hq) / 1e12: "TFLOPs, not FLOPs",
    }


with forbid(*_no_counters, exercise="Exercise 1"):
    _palm = flops_per_token(PALM_540B)
check_float(
    "flops_per_token(PALM_540B)", _palm, 3.277734806784e12, known_wrong=_palm_wrong(PALM_540B)
)
### BEGIN HIDDEN TESTS
_models = {  # PaLM 8B and 62B (Chowdhery et al. 2022, Table 1), GPT-3 175B, PaLM 540B at T = 8192
    "PaLM 8B": dict(
        num_params=8.63e9, num_layers=32, d_model=4096, num_heads=16, head_dim=256, seq_len=2048
    ),
    "PaLM 62B": dict(
        num_params=62.50e9, num_layers=64, d_model=8192, num_heads=32, head_dim=256, seq_len=2048
    ),
    "GPT-3 175B": dict(
        num_params=175.0e9, num_layers=96, d_model=12288, num_heads=96, head_dim=128, seq_len=2048
    ),
    "PaLM 540B, T = 8192": dict(PALM_540B, seq_len=8192),
}
with forbid(*_no_counters, exercise="Exercise 1 (hidden cases)"):
    _got = {name: flops_per_token(dict(m)) for name, m in _models.items()}
for _name, _m in _models.items():
    _expected = (
        6 * _m["num_params"]
        + 12 * _m["num_layers"] * _m["num_heads"] * _m["head_dim"] * _m["seq_len"]
    )
    check_float(f"flops_per_token({_name})", _got[_name], _expected, known_wrong=_palm_wrong(_m))
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — HFU with full recomputation (2 points)
#
# Write `hfu_full_recompute(run, peak)`: the HFU, a float, of a Megatron-LM GPT run with full
# activation recomputation, against `peak` FLOP/s per GPU. The run is a dict with the keys of
# `MEGATRON_1P7B`; the hidden tests try larger runs and an H100 run.


# %% nbgrader={"grade": false, "grade_id": "hfu_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def hfu_full_recompute(run: dict, peak: float) -> float:
    """HFU of a GPT run with full recomputation: executed FLOP/s per GPU over peak FLOP/s."""
    ### BEGIN SOLUTION
    B, s, L, h, V = (
        run[k] for k in ("batch_size", "seq_len", "num_layers", "hidden_size", "vocab_size")
    )
    executed = 96 * B * s * L * h**2 * (1 + s / (6 * h) + V / (16 * L * h))
    return executed / (run["iteration_time"] * run["num_gpus"] * peak)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "hfu_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: hfu_full_recompute(run, peak) -> HFU (a fraction), without course_lib.flops."""
import course_lib.flops as _flops

_no_counters = [(_flops, "model_flops_per_token"), (_flops, "megatron_flops_per_iteration")]


def _hfu_wrong(r: dict, p: float) -> dict:
    """The mistakes the lesson warns about, as utilizations of run r against peak p."""
    shape = ("batch_size", "seq_len", "num_layers", "hidden_size", "vocab_size")
    B, s, L, h, V = (r[k] for k in shape)
    per_s = r["iteration_time"] * r["num_gpus"] * p
    model = 72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * L * h))
    no_attention = 96 * B * s * L * h**2 * (1 + V / (16 * L * h))
    eight_n = 8 * (12 * L * h**2 + V * h) * B * s
    return {
        model / per_s: "the MFU (the 72-form model FLOPs): HFU counts the recomputed forward",
        4 / 3 * model / per_s: "4/3 of the model FLOPs: the logit layer is not recomputed, so its "
        "term is V/16lh, not V/12lh",
        no_attention / per_s: "the 96-form without its attention term s/6h",
        eight_n / per_s: "8N per token: the attention FLOPs are missing",
    }


_peak_a100 = eligible_peak("A100 SXM 80GB", "bf16")
with forbid(*_no_counters, exercise="Exercise 2"):
    _hfu = hfu_full_recompute(MEGATRON_1P7B, _peak_a100)
check_range("hfu_full_recompute(MEGATRON_1P7B, A100)", _hfu, 0.0, 1.0, what="a fraction")
check_float(
    "hfu_full_recompute(MEGATRON_1P7B, A100)",
    _hfu,
    0.407674122488745,
    known_wrong=_hfu_wrong(MEGATRON_1P7B, _peak_a100),
)
### BEGIN HIDDEN TESTS
_shape = dict(vocab_size=51200, seq_len=2048)
_runs = [  # (name, run, peak): shapes of Narayanan et al.'s Table 1, synthetic iteration times
    ("18B", dict(_shape, num_layers=40, hidden_size=6144, num_heads=48, batch_size=1024,
                 num_gpus=256, iteration_time=9.40), _peak_a100),
    ("145B", dict(_shape, num_layers=80, hidden_size=12288, num_heads=96, batch_size=2304,
                  num_gpus=1536, iteration_time=25.1), _peak_a100),
    ("1T", dict(_shape, num_layers=128, hidden_size=25600, num_heads=160, batch_size=3072,
                num_gpus=3072, iteration_time=103.0), _peak_a100),
    ("7.5B at s = 4096 on H100", dict(_shape, seq_len=4096, num_layers=36, hidden_size=4096,
                                      num_heads=32, batch_size=512, num_gpus=128,
                                      iteration_time=2.95), eligible_peak("H100 SXM", "bf16")),
]  # fmt: skip
with forbid(*_no_counters, exercise="Exercise 2 (hidden cases)"):
    _got = [hfu_full_recompute(dict(r), p) for _, r, p in _runs]
_expected = [  # computed once with course_lib.flops.megatron_flops_per_iteration(..., True)
    0.432659962469394,
    0.469017536545265,
    0.520558964076276,
    0.386942319349800,
]
for (_name, _r, _p), _x, _e in zip(_runs, _got, _expected, strict=True):
    check_float(f"hfu_full_recompute({_name})", _x, _e, known_wrong=_hfu_wrong(_r, _p))
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Find the number quoted against a sparse peak (3 points)
#
# `CLAIMS` holds four synthetic utilization claims for bf16 training: accelerator, devices, model
# FLOPs per token (given), the whole job's tokens/s and the quoted utilization. Exactly one was
# computed against a 2:4-sparse peak; the others are not all honest either.
#
# a) Set `claim_mfu` to the MFU of each claim against its eligible peak: a numpy array of four
#    floats in the order of `CLAIMS.index` (`.to_numpy()` turns a column into one). (2 points)
#
# b) Set `sparse_claim` to the letter of the claim quoted against the sparse peak, a str: `"A"`,
#    `"B"`, `"C"` or `"D"`. Compare each quote with tokens/s × FLOPs per token ÷ (devices × dense
#    peak). (1 point)

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
        0.446941971692308,
        {
            0.223470985846154: "against the 2:4-sparse peak (624 TFLOP/s)",
            0.893883943384615: "against A100's TF32 peak (156 TFLOP/s), not bf16",
            0.140996860634985: "against H100's 989 TFLOP/s: each claim has its own accelerator",
            0.447: "the quote, rounded: compute it",
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
            0.121131123135288: "against H100's 989 TFLOP/s: each claim has its own accelerator",
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
# Visible: one of the four letters, exactly (the hidden test checks which one).
check_choice("sparse_claim", sparse_claim, sparse_claim, dict.fromkeys("ABCD", "a claim"))
### BEGIN HIDDEN TESTS
check_choice(
    "sparse_claim",
    sparse_claim,
    "C",
    {
        "A": "claim A's quote equals its MFU against the A100's dense bf16 312 TFLOP/s: it is "
        "honest",
        "B": "claim B's quote is 1.33× its MFU, the executed/model ratio of full recomputation: an "
        "HFU — inflated, not sparse",
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
# full recomputation (the job log is synthetic). Compute its MFU
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
_F = RUN_175B["model_flops_per_step"]
_gpus, _dense = RUN_175B["num_gpus"], eligible_peak("A100 SXM 80GB", "bf16")
_executed = 96 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
_per_s = JOB_LOG["step_time"] * _gpus * _dense
check_float(
    "mfu_step_175b",
    mfu_step_175b,
    _F / _per_s,
    known_wrong={
        _F / (JOB_LOG["compute_kernel_time"] * _gpus * _dense): "the compute-kernel time, not "
        "the step time",
        _F / (JOB_LOG["all_kernel_time"] * _gpus * _dense): "the union of all kernels (NCCL "
        "included), not the step time",
        _executed / _per_s: "the executed FLOPs of full recomputation: that is the HFU",
        _F / (2 * _per_s): "against the 2:4-sparse peak",
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
_J = JOB_LOG
_flops_per_s = RUN_175B["model_flops_per_step"] / (
    RUN_175B["num_gpus"] * eligible_peak("A100 SXM 80GB", "bf16")
)
_run = _J["steps_kept"] + _J["steps_redone"]
check_float(
    "mfu_wall_175b",
    mfu_wall_175b,
    _J["steps_kept"] * _flops_per_s / _J["window"],
    known_wrong={
        _run * _flops_per_s / _J["window"]: "redone steps counted as progress: they were run "
        "twice, kept once",
        _J["steps_kept"] * _flops_per_s / (_J["window"] - _J["restart_downtime"]): "the window "
        "without the restart downtime",
        _J["steps_kept"] * _flops_per_s / (_run * _J["step_time"]): "the time of the steps run "
        "(kept and redone): the wall-clock also holds stalls, evaluation, checkpoints and restarts",
        _flops_per_s / _J["step_time"]: "the step-time MFU",
        _J["steps_kept"] * _flops_per_s / (2 * _J["window"]): "against the 2:4-sparse peak",
    },
)
### END HIDDEN TESTS
passed("Exercise 4b")

# %% [markdown]
# ### Explained answer — When are two MFU numbers comparable? (2 points, graded by hand)
#
# A slide titled "MFU of large-model training" lists PaLM 540B at 46.2 % (Chowdhery et al. 2022),
# Megatron-LM's 1T model at 52 % (Narayanan et al. 2021) and a 530B model at 54.2 % (Korthikanti
# et al. 2022), and concludes that NVIDIA's Megatron-LM runs beat PaLM. In 3–5 sentences: which
# conventions must two numbers share, which of the three compare as they stand, and how does the
# comparison look after you convert?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_comparable_mfu", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Two utilizations compare only if they share the FLOP count (model FLOPs with
# the same terms: attention included, causal mask not discounted), the peak (dense, tensor core,
# the training dtype) and the time base (kernel, step or wall-clock). Megatron-LM's 52 % counts
# Eq. 3's executed FLOPs with the recomputed forward: it is an HFU, and with the 1T model's
# executed/model ratio of about 4/3 its MFU is about 39 % — below PaLM's 46.2 %, not above.
# Korthikanti's 54.2 % is a model-FLOPs number (the 72-form, which equals $6N + 12LHQT$ for a GPT)
# against the A100's dense 312 TFLOP/s, so it matches PaLM's MFU in FLOP count and peak; both are
# throughput numbers, not wall-clock ones. So one Megatron-LM run beats PaLM and one does not, and
# even the comparable pair measures whole systems (TPU v4 vs A100, different sizes and
# parallelism), not the software alone.
#
# **Rubric (2 points).** 1 point: names the conventions that must match (FLOP count including
# recomputation, peak including dense/dtype, time base). 1 point: identifies Megatron's 52 % as an
# HFU and converts it (≈ 39 %), or otherwise applies the conventions to the three numbers
# correctly.

# %% [markdown]
# ## Takeaways
#
# - Model FLOPs per token are $6N + 12LHQT$ (PaLM), per iteration $72Bslh^2(1 + s/6h +
#   V/12lh)$ (Megatron-LM); $6N$ alone drops the attention term.
# - MFU counts model FLOPs; HFU counts executed FLOPs, recomputation included, so HFU ≥ MFU.
# - The eligible peak is the dense tensor-core peak of the training dtype (bf16: 312 TFLOP/s on
#   A100, 989 on H100), never the 2:4-sparse figure.
# - The trap: comparing utilization percentages without their FLOP count, peak and time base.
#   One run gave 31 % to 54 % of peak in section 4; a sparse denominator would halve each.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - **HFU can hide a speed-up.** Korthikanti et al. (2022) credit sequence parallelism and
#   selective recomputation together with raising their 530B run on 2,240 A100s from 42.1 % MFU
#   (full recomputation) to 54.2 %: 29 % faster. By HFU the order reverses. The full-recomputation
#   run executes about 4/3 × 42.1 ≈ 56 % of peak. Selective recomputation re-runs only the
#   attention core, and Korthikanti's Eq. 8 then writes the attention term as $s/3h$, not $s/6h$:
#   by their convention the new run's HFU is ≈ 55.1 % (their Table 5 shows the same step for the
#   530B model, 56.0 % MFU and 57.0 % HFU), and counting only the recomputed $4Bs^2h$ forward
#   FLOPs per layer gives 54.5 %. Either is below 56 %.
# - **Causal attention.** A causal mask leaves half the score matrix unused, and kernels such as
#   FlashAttention skip it. Some tools therefore count $6N + 6LHQT$; PaLM's convention counts the
#   full $T \times T$ matrix. Ask which one a number uses.
# - **Clocks.** Datasheet peaks assume the boost clock. A GPU that throttles under its power limit
#   runs below it, and that loss belongs in the utilization: the convention is the datasheet's
#   dense figure, not the clock you happened to get.
# - **fp8.** On H100 the dense fp8 peak (1,979 TFLOP/s) equals the sparse bf16 figure. An fp8 run
#   quoted against the bf16 peak reads twice as well as it is; a run that mixes fp8 and bf16
#   matmuls has no single eligible peak, so say how you weighted it.
