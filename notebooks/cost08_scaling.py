# %% [markdown]
# # cost08 · Strong and weak scaling answer different fixed-work questions
#
# **Objective.** Define the work held constant, normalize against a feasible device-count
# baseline, and distinguish system throughput from time to a training-quality target.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - compute strong-scaling efficiency $E_s(N) = T(N_0)\,N_0 / (T(N)\,N)$ and weak-scaling
#   efficiency $E_w(N) = T(N_0)/T(N)$ against the smallest device count $N_0$ that can run the job;
# - say which work a published scaling table holds fixed, and when a ratio of two runs is not an
#   efficiency at all;
# - fit an Amdahl serial fraction to measured times;
# - choose the global batch that reaches a target loss soonest, which is not the batch with the
#   highest throughput.
#
# **What you need:** cost04 (per-device FLOP/s and MFU). Python and numpy at the level of array
# arithmetic and `np.linalg.lstsq`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import course_lib.scaling as scaling
from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_names,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.scaling import batch_tradeoff_explorer
from course_lib.figures.scaling import (
    batch_tradeoff,
    strong_scaling_efficiency,
    weak_scaling_throughput,
)
from course_lib.scaling import (
    fit_serial_fraction,
    load_megatron_table,
    strong_efficiency,
)

rng = np.random.default_rng(8)  # the course's convention; nothing below is random
table1 = load_megatron_table(1)  # Narayanan et al. 2021, Table 1 (published, A100 GPUs)
table2 = load_megatron_table(2)  # Narayanan et al. 2021, Table 2 (published, A100 GPUs)

# %% [markdown]
# ## 1. Strong scaling holds the total work fixed, measured from a feasible baseline
#
# Strong scaling asks: this exact job — same model, same global batch, same tokens — on more
# devices, how much sooner does it finish? With $T(N)$ the time of that fixed work on
# $N$ devices, the ideal is $T(N) = T(N_0)\,N_0/N$ and the efficiency is
#
# $$E_s(N) = \frac{T(N_0)\,N_0}{T(N)\,N},$$
#
# where $N_0$ is the **baseline**: the smallest device count on which the job runs at all. It is
# rarely one device: a 175-billion-parameter model's 16-bit weights alone (350 GB) exceed four
# 80 GB A100s.
#
# Narayanan et al. (2021, Megatron-LM, Table 2) trained a 174.6B GPT at a fixed global batch of
# 1,536 sequences on 384, 768 and 1,536 A100 GPUs with PTD-P (tensor + pipeline + data
# parallelism) and with ZeRO-3 (sharded data parallelism). The table gives teraFLOP/s per GPU,
# $X$. The work is fixed, so $T \propto 1/(N X)$ and $E_s(N) = X(N)/X(N_0)$.

# %%
gpt175 = table2[table2["parameters_billion"] == 174.6]  # batch 1,536 in every row
for scheme, rows in gpt175.groupby("scheme", sort=False):
    n = rows["num_gpus"].to_numpy(dtype=float)
    work_time = 1.0 / (n * rows["teraflops_per_gpu"].to_numpy(dtype=float))  # ∝ time of the work
    print(f"{scheme:7s} E_s vs N0 = 384:", np.round(strong_efficiency(n, work_time, 384), 3))
strong_scaling_efficiency(table2, parameters_billion=174.6)
plt.show()

# %% [markdown]
# Same model, same batch: PTD-P keeps 92 % of its per-GPU rate at 4× the GPUs; ZeRO-3 keeps
# 31 %, so its 1,536-GPU run takes as long as its 768-GPU run (74 days for 300B tokens). These
# are efficiencies only because the batch is the same in every row: a different global batch
# changes the steps to the target loss (section 4), so equal tokens do not make it the same run.

# %% [markdown]
# ## 2. Weak scaling holds the work per device fixed: say which work
#
# Weak scaling asks a different question: give every device the same work and add devices (the
# global batch grows with $N$); does a step stay as fast? With $T(N)$ the step time,
#
# $$E_w(N) = \frac{T(N_0)}{T(N)}
#   = \frac{\text{throughput}(N)\,N_0}{\text{throughput}(N_0)\,N},$$
#
# with throughput the work per second of the whole system. Both forms need the same per-device
# work in every run: model share, microbatch and sequence length. Gustafson (1988) asked this
# question; Amdahl (1967) the strong one.
#
# Megatron-LM's Table 1 is titled weak scaling: GPT models from 1.7B parameters on 32 GPUs to 1T
# on 3,072, with the global batch growing from 512 to 3,072 sequences. Look at what grows.

# %%
per_gpu = table1.assign(
    params_per_gpu_billion=table1["parameters_billion"] / table1["num_gpus"],
    sequences_per_gpu=table1["batch_size"] / table1["num_gpus"],
)
columns = ["parameters_billion", "num_gpus", "batch_size", "params_per_gpu_billion"]
print(per_gpu[columns + ["sequences_per_gpu", "teraflops_per_gpu"]].iloc[[0, -1]].to_string())
weak_scaling_throughput(table1)
plt.show()

# %% [markdown]
# Per-GPU teraFLOP/s rises from 137 to 163: on the right axis, $X(N)/X(N_0) = 1.19$ at
# $N = 3{,}072$. But parameters per GPU grow from 0.05B to 0.33B and sequences per GPU per step
# fall from 16 to 1, so no two rows do the same work per GPU.

# %% [markdown]
# ## 3. Amdahl's serial fraction summarises a strong-scaling curve
#
# Split the fixed work's time into a part $a$ that no device count shrinks (a serial step,
# communication that does not fall with $N$) and a part $b/N$ that divides perfectly:
#
# $$T(N) = a + \frac{b}{N}, \qquad s = \frac{a}{a + b/N_0}, \qquad
#   \frac{T(N_0)}{T(N)} = \frac{1}{s + (1 - s)\,N_0/N},$$
#
# where $s$ is the serial fraction of the baseline run. This is Amdahl's law with the baseline
# at $N_0$: the speed-up over $N_0$ can never exceed $1/s$. A least-squares fit of $a$ and $b$ to
# measured times gives $s$. The fit is a summary, not a mechanism: a communication cost that
# grows with $N$ looks like a rising serial fraction.
#
# Table 2's 174.6B rows are such measurements: the same work (300B tokens at batch 1,536) on
# 384, 768 and 1,536 GPUs, with the published training days as $T(N)$ and $N_0 = 384$.

# %%
for scheme, rows in gpt175.groupby("scheme", sort=False):
    days = rows["training_days_300b_tokens"]  # published, Narayanan et al. 2021, Table 2
    serial = fit_serial_fraction(rows["num_gpus"], days, 384)
    print(f"{scheme:7s} s = {serial:.2f}: at most {1 / serial:.3g}x the speed on 384 GPUs")

# %% [markdown]
# PTD-P's $s = 0.03$ leaves room for a 33.6× speed-up over 384 GPUs. ZeRO-3's $s = 0.74$ caps it at
# 1.35×, and it reached 1.22× (90 days to 74): whatever does not shrink as its GPUs are added, the
# fit reports as serial work.

# %% [markdown]
# ## 4. Throughput is not time to a target loss
#
# More devices usually come with a larger global batch $B$, and throughput (examples per second)
# rises. But a larger batch does not buy progress one for one. McCandlish et al. (2018, Sec. 2)
# found that the optimizer steps $S$ and the examples $E = BS$ needed to reach a given loss trade
# off as
#
# $$\left(\frac{S}{S_{\min}} - 1\right)\left(\frac{E}{E_{\min}} - 1\right) = 1
#   \quad\Longrightarrow\quad S = S_{\min}\left(1 + \frac{B_{\text{noise}}}{B}\right),
#   \quad E = E_{\min}\left(1 + \frac{B}{B_{\text{noise}}}\right),$$
#
# where $S_{\min}$ is the fewest steps (at an infinite batch), $E_{\min}$ the fewest examples (at
# a tiny batch), and $B_{\text{noise}}$ the gradient noise scale; the paper's critical batch
# $B_{\text{crit}} = E_{\min}/S_{\min}$ equals $B_{\text{noise}}$ in this model. Far below it,
# doubling $B$ halves the steps; far above, it halves nothing and doubles the examples.
#
# Take a fixed cluster (synthetic numbers of a realistic size): $N = 64$ devices, microbatches
# of $b = 8$ sequences at $t_{\text{micro}} = 0.25$ s each, a gradient all-reduce of
# $t_{\text{ar}} = 0.6$ s per step, $S_{\min} = 20{,}000$, $B_{\text{noise}} = 4{,}096$. With
# $k$ microbatches per device per step (gradient accumulation), $B = Nbk$, a step takes
# $k\,t_{\text{micro}} + t_{\text{ar}}$, and the time to target is steps × step time.

# %%
num_devices, micro_batch, micro_time, allreduce_time = 64, 8, 0.25, 0.6
noise_scale, min_steps = 4096, 20_000
batch_tradeoff(num_devices, micro_batch, micro_time, allreduce_time, noise_scale, min_steps, 64)
plt.show()

# %% [markdown]
# Throughput (green) climbs all the way, 3.3× from $k = 1$ to $k = 64$, because the all-reduce is
# paid once per step. The steps (orange) fall less and less: past $B_{\text{noise}}$ (dotted) they
# can fall by at most half more ($S \ge S_{\min} = S(B_{\text{noise}})/2$), while the examples
# keep growing. So the time to target has a minimum: the batch with the best throughput reaches
# the loss about 4× later than the best, $k = 4$.

# %% [markdown]
# ## Explore
#
# The explorer sweeps $k$ from 1 to 256 on the cluster above; the fastest batch is circled. Drag
# the all-reduce time to 0: the fastest batch is the smallest, since there is nothing to amortise.

# %%
batch_tradeoff_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each; hidden tests
# check more cases at grading. While a grade cell runs, `course_lib.scaling`'s efficiency, fit and
# time-to-target routines are disabled: the formulas are yours.
#
# ### Exercise 1 — Strong-scaling efficiency against a baseline (2 points)
#
# Write `strong_eff(num_devices, times, baseline_devices)`: `times[i]` is the time of the same
# total work on `num_devices[i]` devices; return a numpy array of $E_s$ for every entry, in the
# order given. `baseline_devices` is one of `num_devices`, not necessarily the first or the
# smallest listed. The hidden tests include unsorted counts, a baseline of 8 devices, and a run
# faster than ideal ($E_s > 1$: keep it).


# %% nbgrader={"grade": false, "grade_id": "strong_eff_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def strong_eff(num_devices, times, baseline_devices):
    """E_s(N) = T(N0)·N0 / (T(N)·N) for every entry, N0 = baseline_devices."""
    ### BEGIN SOLUTION
    n = np.asarray(num_devices, dtype=float)
    t = np.asarray(times, dtype=float)
    base = int(np.flatnonzero(n == baseline_devices)[0])
    return t[base] * n[base] / (t * n)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "strong_eff_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: strong_eff(num_devices, times, baseline_devices), a numpy array of E_s."""
no_delegation = [
    (scaling, name)
    for name in ("strong_efficiency", "weak_efficiency", "efficiency_from_throughput")
]
with forbid(*no_delegation, exercise="Exercise 1"):
    small = strong_eff([1, 2, 4], [8.0, 4.4, 2.5], 1)
check_type("strong_eff([1, 2, 4], [8.0, 4.4, 2.5], 1)", small, np.ndarray)
check_array("strong_eff([1, 2, 4], [8.0, 4.4, 2.5], 1)", small, [1.0, 8.0 / 8.8, 0.8])
### BEGIN HIDDEN TESTS
efficiency_cases = [  # (num_devices, times, baseline_devices)
    ([8, 16, 32, 64, 128], [100.0, 52.0, 27.5, 15.0, 8.8], 8),
    ([64, 16, 32, 128], [30.0, 100.0, 55.0, 18.0], 16),
    ([4, 8, 16, 32], [70.0, 30.0, 16.0, 9.0], 8),  # the 4-device run is not a feasible baseline
    ([384, 768, 1536], [84.0, 43.0, 23.0], 384),  # Narayanan et al. 2021 Table 2, PTD-P days
    ([2, 4, 8], [10.0, 4.5, 2.4], 2),  # faster than ideal
]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    efficiency_answers = [strong_eff(*case) for case in efficiency_cases]
for (n_, t_, n0_), got in zip(efficiency_cases, efficiency_answers, strict=True):
    n_, t_ = np.array(n_, dtype=float), np.array(t_, dtype=float)
    i_ = int(np.flatnonzero(n_ == n0_)[0])
    check_type(f"strong_eff({n_.tolist()}, {t_.tolist()}, {n0_})", got, np.ndarray)
    check_array(
        f"strong_eff({n_.tolist()}, {t_.tolist()}, {n0_})", got, t_[i_] * n_[i_] / (t_ * n_)
    )
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Weak-scaling efficiency from throughput (1 point)
#
# Write `weak_eff(num_devices, throughput, baseline_devices)`: `throughput[i]` is the whole
# system's examples per second on `num_devices[i]` devices, every device doing the same work per
# step in every run; return a numpy array of $E_w$ for every entry, in the order given. The
# baseline is as in Exercise 1, and the hidden tests include the same kinds of cases.


# %% nbgrader={"grade": false, "grade_id": "weak_eff_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def weak_eff(num_devices, throughput, baseline_devices):
    """E_w(N) = X(N)·N0 / (X(N0)·N) for every entry, X the system throughput, N0 = baseline."""
    ### BEGIN SOLUTION
    n = np.asarray(num_devices, dtype=float)
    x = np.asarray(throughput, dtype=float)
    base = int(np.flatnonzero(n == baseline_devices)[0])
    return x * n[base] / (x[base] * n)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "weak_eff_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: weak_eff(num_devices, throughput, baseline_devices), a numpy array of E_w."""
no_delegation = [
    (scaling, name)
    for name in ("strong_efficiency", "weak_efficiency", "efficiency_from_throughput")
]
with forbid(*no_delegation, exercise="Exercise 2"):
    small = weak_eff([8, 16, 32], [800.0, 1520.0, 2880.0], 8)
check_type("weak_eff([8, 16, 32], [800, 1520, 2880], 8)", small, np.ndarray)
check_array("weak_eff([8, 16, 32], [800, 1520, 2880], 8)", small, [1.0, 0.95, 0.9])
### BEGIN HIDDEN TESTS
weak_cases = [  # (num_devices, throughput, baseline_devices)
    ([16, 32, 64, 128], [1000.0, 1960.0, 3800.0, 7200.0], 16),
    ([64, 16, 32, 128], [3000.0, 800.0, 1550.0, 5600.0], 16),  # unsorted
    ([4, 8, 16, 32], [500.0, 1200.0, 2300.0, 4400.0], 8),  # baseline not the smallest listed
    ([2, 4, 8], [100.0, 205.0, 420.0], 2),  # better than ideal: keep E_w > 1
]
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    weak_answers = [weak_eff(*case) for case in weak_cases]
for (n_, x_, n0_), got in zip(weak_cases, weak_answers, strict=True):
    n_, x_ = np.array(n_, dtype=float), np.array(x_, dtype=float)
    i_ = int(np.flatnonzero(n_ == n0_)[0])
    check_type(f"weak_eff({n_.tolist()}, {x_.tolist()}, {n0_})", got, np.ndarray)
    check_array(f"weak_eff({n_.tolist()}, {x_.tolist()}, {n0_})", got, x_ * n_[i_] / (x_[i_] * n_))
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Fit a serial fraction (2 points)
#
# Write `serial_fraction(num_devices, times, baseline_devices)`: fit $T(N) = a + b/N$ to the
# times by least squares (the cell gives the columns $1$ and $1/N$ for `np.linalg.lstsq`) and
# return $s = a/(a + b/N_0)$ as a float. If the fitted $a$ is negative, no serial part is
# visible: return 0.0. The hidden tests include noisy times and a baseline that is neither one
# device nor the smallest count listed.


# %% nbgrader={"grade": false, "grade_id": "serial_fraction_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def serial_fraction(num_devices, times, baseline_devices):
    """Serial fraction s = a / (a + b/N0) of the least-squares fit T(N) = a + b/N."""
    n = np.asarray(num_devices, dtype=float)
    t = np.asarray(times, dtype=float)
    design = np.column_stack([np.ones_like(n), 1.0 / n])  # T = a·1 + b·(1/N)
    ### BEGIN SOLUTION
    (a, b), *_ = np.linalg.lstsq(design, t, rcond=None)
    a = max(float(a), 0.0)
    return a / (a + b / baseline_devices)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "serial_fraction_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: serial_fraction(num_devices, times, baseline_devices), a float in [0, 1]."""
with forbid((scaling, "fit_serial_fraction"), exercise="Exercise 3"):
    exact = serial_fraction([8, 16, 32, 64], [14.0, 8.0, 5.0, 3.5], 8)  # T = 2 + 96/N
check_float(
    "serial_fraction([8, 16, 32, 64], [14, 8, 5, 3.5], 8)",
    exact,
    2.0 / 14.0,
    known_wrong={
        2.0 / 98.0: "a / (a + b): the serial share of a one-device run, not of the baseline's",
        12.0 / 14.0: "the parallel fraction 1 − s",
        2.0: "the intercept a in seconds, not a fraction",
    },
)
### BEGIN HIDDEN TESTS
fit_cases = [  # (num_devices, times, baseline_devices)
    ([384, 768, 1536], [84.0, 43.0, 23.0], 384),  # Narayanan et al. 2021 Table 2, PTD-P days
    ([384, 768, 1536], [90.0, 74.0, 74.0], 384),  # ZeRO-3 days
    ([16, 32, 64, 128, 256], [28.3, 15.2, 9.4, 6.3, 4.4], 16),  # ~3 + 400/N, noisy
    ([1, 2, 4], [10.0, 4.9, 2.35], 1),  # T = -0.2 + 10.2/N: negative intercept
    ([2, 8, 4], [26.0, 8.5, 14.0], 2),  # unsorted
    ([4, 8, 16, 32], [26.0, 14.0, 8.0, 5.0], 8),  # T = 2 + 96/N; baseline not the smallest
]
with forbid((scaling, "fit_serial_fraction"), exercise="Exercise 3 (hidden cases)"):
    fit_answers = [serial_fraction(*case) for case in fit_cases]
for (n_, t_, n0_), got in zip(fit_cases, fit_answers, strict=True):
    n_, t_ = np.array(n_, dtype=float), np.array(t_, dtype=float)
    (a_, b_), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(n_), 1 / n_]), t_, rcond=None)
    expected = max(a_, 0.0) / (max(a_, 0.0) + b_ / n0_)
    wide = int(np.argmax(n_))
    ratio = n0_ / n_[wide]
    karp_flatt = (t_[wide] / t_[n_ == n0_][0] - ratio) / (1 - ratio)
    check_float(
        f"serial_fraction({n_.tolist()}, {t_.tolist()}, {n0_})",
        got,
        expected,
        known_wrong={
            max(a_, 0.0) / (max(a_, 0.0) + b_): "a / (a + b): a one-device baseline",
            max(a_, 0.0) / (max(a_, 0.0) + b_ / n_.min()): "N0 = the smallest count listed",
            a_ / (a_ + b_ / n0_): "a negative intercept kept: clip a at 0",
            1 - expected: "the parallel fraction 1 − s",
            karp_flatt: "the Karp–Flatt fraction of the largest run alone, not a fit",
        },
    )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The batch that reaches the target soonest (2 points)
#
# On section 4's cluster model, write
# `best_accumulation(num_devices, micro_batch, micro_time, allreduce_time, noise_scale)`: the
# int $k$ from 1 to 4,096 that minimises the time to target,
# $S_{\min}(1 + B_{\text{noise}}/B)(k\,t_{\text{micro}} + t_{\text{ar}})$ with $B = Nbk$
# ($S_{\min}$ does not change the answer); on a tie, the smaller $k$. The cell gives every $k$ and
# its $B$. The hidden tests include a free all-reduce, an optimum beyond 4,096 and an exact tie.


# %% nbgrader={"grade": false, "grade_id": "best_accumulation_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def best_accumulation(num_devices, micro_batch, micro_time, allreduce_time, noise_scale):
    """k in 1..4096 minimising (1 + B_noise/(N·b·k)) · (k·t_micro + t_allreduce)."""
    k = np.arange(1, 4097)  # every allowed k
    batch = num_devices * micro_batch * k  # its global batch B
    ### BEGIN SOLUTION
    time = (1 + noise_scale / batch) * (k * micro_time + allreduce_time)
    return int(k[np.argmin(time)])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "best_accumulation_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: best_accumulation(N, b, t_micro, t_allreduce, B_noise), an int k in 1..4096."""
no_delegation = [
    (scaling, name)
    for name in (
        "best_accumulation_steps",
        "time_to_target",
        "steps_to_target",
        "examples_to_target",
    )
]
with forbid(*no_delegation, exercise="Exercise 4"):
    small = best_accumulation(32, 4, 0.1, 0.3, 2048)
check_int(
    "best_accumulation(32, 4, 0.1, 0.3, 2048)",
    small,
    7,
    known_wrong={
        4096: "the largest batch: the highest throughput, not the soonest target",
        1: "the smallest batch: the fewest examples, not the soonest target",
        16: "B = B_noise: the critical batch is where the trade-off turns, not the optimum",
    },
)
### BEGIN HIDDEN TESTS
batch_cases = [  # (N, b, t_micro, t_allreduce, B_noise)
    (64, 8, 0.25, 0.6, 4096),  # section 4's cluster
    (16, 4, 0.05, 0.31, 1024),
    (8, 4, 0.5, 0.096875, 1024),  # continuous optimum 2.49, best integer 3
    (128, 16, 0.2, 0.0, 8192),  # free all-reduce
    (8, 2, 0.01, 1.5, 65536),
    (8, 1, 0.0005, 2.0, 65536),  # continuous optimum beyond 4096
    (4, 2, 0.25, 0.25, 48),  # k = 2 and k = 3 tie exactly (3.0): the smaller k
]
with forbid(*no_delegation, exercise="Exercise 4 (hidden cases)"):
    batch_answers = [best_accumulation(*case) for case in batch_cases]
for case, got in zip(batch_cases, batch_answers, strict=True):
    n_, b_, tm_, ta_, bn_ = case
    k_ = np.arange(1, 4097)
    expected = int(k_[np.argmin((1 + bn_ / (n_ * b_ * k_)) * (k_ * tm_ + ta_))])
    root = float(np.sqrt(bn_ * ta_ / (n_ * b_ * tm_)))
    wrong = {
        4096: "the largest batch: the highest throughput, not the soonest target",
        1: "the smallest batch: the fewest examples, not the soonest target",
        max(1, round(bn_ / (n_ * b_))): "B = B_noise, the critical batch",
        max(1, min(4096, round(root))): "the continuous optimum rounded: compare the integers",
        max(1, min(4096, int(np.floor(root)))): "the continuous optimum rounded down",
        max(1, min(4096, int(np.ceil(root)))): "the continuous optimum rounded up",
        max(1, round(root)): "the continuous optimum without the limit of 4,096",
        n_ * b_ * expected: "the global batch B, not k",
    }
    check_int(
        f"best_accumulation{case}",
        got,
        expected,
        known_wrong={value: why for value, why in wrong.items() if value != expected},
    )
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which readings are wrong? (2 points)
#
# Which claims take a ratio of runs that did different work as an efficiency, or predict time to
# target from throughput alone? Set `wrong_claims` to a set of their letters, e.g. `{"A"}`.
# - **A.** Doubling the global batch from 2,048 to 4,096 raised tokens/s by 1.8×, so the run
#   reaches its target loss 1.8× sooner.
# - **B.** At the same global batch, 1,024 GPUs keep 97 % of the per-GPU throughput of 128 GPUs,
#   so the same training run finishes 7.8× sooner.
# - **C.** Weak-scaling efficiency stays at 95 % from 128 to 4,096 GPUs, so training to the target
#   on 4,096 GPUs takes 1/(32 × 0.95) of the time on 128.
# - **D.** Table 2's 529.6B ZeRO-3 model runs at 138 teraFLOP/s per GPU on 640 GPUs (batch 2,560,
#   marked with an asterisk) and at 98 on 1,120 GPUs (batch 2,240): a strong-scaling efficiency
#   of 98/138 = 71 % at 1,120 GPUs.

# %% nbgrader={"grade": false, "grade_id": "wrong_claims_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
# A and C change the batch and assume the steps scale with it. D: both runs cost about the same
# FLOPs for 300B tokens, but the global batch went from 2,560 to 2,240 sequences, so they are not
# the same job; 640 GPUs stand in because ZeRO-3 did not fit on 560 GPUs at microbatch 4
# (Narayanan et al. 2021, Table 2 caption).
wrong_claims = {"A", "C", "D"}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "wrong_claims_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: wrong_claims, the set of letters of the claims that misread their numbers."""
check_type("wrong_claims", wrong_claims, set, frozenset, list, tuple)
check_names("wrong_claims (letters A-D only)", set(wrong_claims) - set("ABCD"), ())
### BEGIN HIDDEN TESTS
check_names("wrong_claims", wrong_claims, ("A", "C", "D"))
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: "superlinear weak scaling" (2 points, graded by hand)
#
# A colleague reads Table 1 and writes: "Megatron-LM weak-scales superlinearly: 119 % efficiency
# at 3,072 GPUs. Our 1.7B model will train faster per GPU on 3,072 GPUs than on 32." What work does
# Table 1 hold fixed, what does the 1.19 measure, and what would you measure before planning the
# 1.7B run on 3,072 GPUs? Answer in two or three sentences with numbers from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_superlinear", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Table 1 holds no work per GPU fixed:
# the model grows from 1.7B to 1,008B parameters (0.05B to 0.33B per GPU) while the sequences per
# GPU per step fall from 16 to 1, so 163/137 = 1.19 is a ratio of per-GPU FLOP rates on different
# work. Larger models run larger matrix multiplications, which reach more of the A100's peak (44 %
# against 52 %): a property of the bigger model, not of adding GPUs, and silent about a 1.7B model
# on 3,072 GPUs, where each GPU holds too little work to hide communication and the global batch
# (3,072 sequences or more) may be past its critical batch. I would measure the 1.7B model's step
# time at fixed per-GPU work from 32 GPUs up ($E_w = T(N_0)/T(N)$) and its steps to the target
# loss at the larger batch, then compare time to target, not FLOP/s.
#
# Rubric: 1 point for naming that the work per GPU (model size, batch per GPU) is not fixed, so
# 1.19 compares rates of different work; 1 point for a measurement at fixed per-device work or of
# time to target at the larger batch.

# %% [markdown]
# ## Takeaways
#
# - Strong scaling fixes the total work, $E_s = T(N_0)N_0/(T(N)N)$; weak scaling fixes the work
#   per device, $E_w = T(N_0)/T(N)$; $N_0$ is the smallest count that can run the job. A ratio of
#   runs with different batches or models is not an efficiency.
# - A serial fraction $s$ from $T(N) = a + b/N$ caps the speed-up over $N_0$ at $1/s$.
# - The trap: higher throughput is not sooner convergence. Past the critical batch, a larger batch
#   buys examples per second and no fewer steps; judge a configuration by time to target.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Karp and Flatt (1990) define the *experimentally determined serial fraction* of a single run,
#   $e = (1/\psi - 1/p)/(1 - 1/p)$ for speed-up $\psi$ on $p$ processors; a rising $e$ across
#   runs points at an overhead that grows with $N$, which one Amdahl fit averages away.
# - McCandlish et al. (2018) estimate the critical batch with the *simple noise scale*
#   $B_{\text{simple}} = \operatorname{tr}(\Sigma)/|G|^2$, the per-example gradient variance over the
#   squared gradient norm, measured during training; it grows as the loss falls, so the best batch
#   grows during a run.
# - Table 2's days column is the paper's Eq. 4, $8TP/(nX)$ for $T$ tokens, $P$ parameters, $n$
#   GPUs at $X$ FLOP/s each, rounded: for PTD-P at 1,536 GPUs it gives 22.4 days against the
#   table's 23. The factor 8 counts forward, backward and the recomputed forward as
#   $2 \times (1 + 2 + 1)$ FLOPs per parameter per token.
# - To fit $s$ on your own machine, `course_lib.scaling.measure_strong_scaling([1, 2, 4])` times a
#   fixed numpy work split over 1, 2 and 4 fresh processes (start-up is the serial part). Fit, with
#   $N_0 = 1$, only the counts your cores run at once: more processes than cores time-share, which
#   a fit reads as serial work.
# - In the explorer, raise $B_{\text{noise}}$ to 65,536 (McCandlish et al. 2018 find it grows as
#   the target loss falls): the fastest batch moves right.
