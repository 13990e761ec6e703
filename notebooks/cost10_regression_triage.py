# %% [markdown]
# # cost10 · Triage a throughput regression with matched work, uncertainty, and a falsifiable hypothesis
#
# **Objective.** Reconcile latency and throughput, design repeated comparisons, and locate a
# regression without confusing a changed workload or noisy profile with a causal diagnosis.
#
# **Time:** 34 min · **Level:** advanced
#
# You will be able to
# - check that two runs did the same work before comparing their throughput, and compute
#   throughput over matched work;
# - put a bootstrap confidence interval on a before/after difference, and say how many runs a
#   change of a given size needs at a given noise;
# - read a trace diff (Holistic Trace Analysis's TraceDiff) of two real PyTorch profiles, tell the
#   op that got slower from the ops that merely contain it;
# - state a hypothesis as a prediction that a measurement could refute.
#
# **What you need:** cost01 (the step and its critical path) and cost02 (Kineto traces as
# DataFrames). Python, numpy and pandas at the level of a boolean mask and a `groupby`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import math
from statistics import NormalDist

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import course_lib.stats as course_stats
from course_lib.checks import (
    check_choice,
    check_float,
    check_int,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.triage import triage_explorer
from course_lib.figures.stats import comparison_plot, power_curves, trace_diff_bars
from course_lib.stats import (
    bisect,
    compare,
    matched_throughput,
    ops_diff,
    runs_to_detect,
    time_interleaved,
    trace_diff,
)
from course_lib.trace import data_path, load_trace

rng = np.random.default_rng(10)

# Exercise 2's data (synthetic): 4,000 sequences of 256-2048 tokens, 32 per step, trained twice.
# Before the change the loader buckets sequences by length and pads each batch to its longest;
# after it, batches are random and padded to 2048. Step time grows with the padded tokens.
lengths = rng.integers(256, 2049, 4000)
before_batches = np.sort(lengths).reshape(-1, 32)
after_batches = rng.permutation(lengths).reshape(-1, 32)


def _steps(batches: np.ndarray, padded_len: np.ndarray) -> pd.DataFrame:
    padded = 32 * padded_len
    noise = rng.normal(1.0, 0.02, len(batches))
    return pd.DataFrame(
        {
            "real_tokens": batches.sum(axis=1),
            "padded_tokens": padded,
            "step_time": (0.04 + 6.0e-6 * padded) * noise,
        }
    )


before_steps = _steps(before_batches, before_batches.max(axis=1))
after_steps = _steps(after_batches, np.full(len(after_batches), 2048))

# Section 2's data (synthetic): 20 runs of one benchmark before and after a library upgrade.
runs_before = rng.normal(0.100, 0.003, 20)
runs_after = rng.normal(0.102, 0.003, 20)

# Section 4's data (real): two PyTorch CPU profiler traces of the same tiny MLP, before and after
# one change, captured once by scripts/capture_regression_traces.py. The traces carry no version
# field: course_lib/data/README.md records the capture (torch 2.13.0+cpu).
trace_before = load_trace(data_path("regression_before.json.gz"))
trace_after = load_trace(data_path("regression_after.json.gz"))
real_diff = trace_diff(trace_before, trace_after)

# %% [markdown]
# ## 1. Throughput is work over time: match the work before you compare
#
# A throughput is a ratio, $X = W / T$, where $W$ is the work a run did (tokens, samples) and $T$
# the time it took; latency is the time of one unit of work, a step or a request. A change can
# move $X$ by moving $W$ alone: longer sequences, a larger batch, more padding. So ask first *did
# both runs do the same work?*, then *which work counts?*
#
# Padding is the usual trap: tokens padded to 2048 train nothing, and a dashboard of padded
# tokens per second rewards them. Count the real (non-padding) tokens and sum over the run:
#
# $$X_{\text{useful}} = \frac{\sum_i W_i}{\sum_i T_i},$$
#
# where $W_i$ is step $i$'s real tokens and $T_i$ its time in seconds. It is the ratio of sums,
# not the mean of per-step ratios: a slow step weighs as much time as it took.
#
# A worked example (illustrative numbers): doubling the sequence length from 2048 to 4096 (16
# sequences per step) takes the step from 0.42 s to 0.95 s, 2.26× the time for 2× the tokens:

# %%
tokens_per_step = {"seq 2048": 16 * 2048, "seq 4096": 16 * 4096}
step_seconds = {"seq 2048": [0.42, 0.43, 0.41], "seq 4096": [0.95, 0.96, 0.94]}
for run, tokens in tokens_per_step.items():
    times = step_seconds[run]
    x = matched_throughput([tokens] * len(times), times)
    print(f"{run}: {x:,.0f} tokens/s, {np.mean(times) * 1e3:.0f} ms per step")

# %% [markdown]
# Step latency rose 2.26×, throughput fell 12 %: both true, neither a regression of the code.
# Attention's cost grows with the square of the sequence length; compare runs of equal sequence
# length, or normalise the work to its FLOPs (cost04).

# %% [markdown]
# ## 2. One run is an anecdote: repeat, and put an interval on the difference
#
# Run times vary from run to run (other processes, caches, clocks, the data). Measure each side
# $n$ times and compare the means with an interval that says how far chance alone could move
# them. The *percentile bootstrap* (Efron & Tibshirani 1993, §13.3) needs no formula for that
# spread: draw $n_b$ runs from `before` and $n_a$ from `after`, with replacement and
# independently, take the difference of the two means, repeat $B$ times, and read the interval
# off the quantiles:
#
# $$\big[\,q_{(1-c)/2},\; q_{(1+c)/2}\,\big] \text{ of } \bar{t}^{*}_{\text{after}} - \bar{t}^{*}_{\text{before}},$$
#
# where $c$ is the confidence (0.95) and $q_p$ the $p$-quantile over the $B$ resamples. If the
# interval lies wholly above zero the change is slower; if it contains zero, the runs cannot
# tell. `compare` also reports Cohen's $d$, the difference of means over the pooled standard
# deviation (Cohen 1988, ch. 2): the change against the noise.
#
# Twenty runs of a benchmark before and after a library upgrade (synthetic):

# %%
summary = compare(runs_before, runs_after, seed=0)
print(summary)
comparison_plot(runs_before, runs_after, seed=0)
plt.show()

# %% [markdown]
# The left panel is every run; the true change (the runs are synthetic) is +2 %, the measured
# one +1.1 %. The right panel is the bootstrap distribution of the difference, its 95 % interval
# shaded: it contains zero. That is not "no regression": at 3 % noise twenty runs are too few to
# see 2 % (section 3).
#
# Your machine's noise, measured now: the same numpy sort run as "A" and as "B", in the order A,
# B, B, A, A, B, … so that a slow spell hits both and neither always runs first. An A/A
# comparison has no change to find; its interval shows how wide "no change" is here.

# %%
a_values = np.random.default_rng(0).standard_normal(1_000_000)
aa = time_interleaved(
    {"A": lambda: np.sort(a_values), "B": lambda: np.sort(a_values)},
    repeats=25,
    budget=2.0,
    alternate=True,
)
aa_runs = {k: g["seconds"].to_numpy() for k, g in aa.groupby("workload")}
aa_all = aa["seconds"].to_numpy()
aa_cv = float(aa_all.std(ddof=1) / aa_all.mean())
aa_robust_cv = float(1.4826 * np.median(np.abs(aa_all - np.median(aa_all))) / np.median(aa_all))
aa_summary = compare(aa_runs["A"], aa_runs["B"], seed=0)
if aa_robust_cv > 0.05:
    aa_shape = "both are large: the machine itself is the noise"
elif aa_robust_cv < 0.75 * aa_cv:
    aa_shape = "std/mean is the larger: a few runs far out carry the noise"
else:
    aa_shape = "the median-based cv is as large: the whole spread is broad, not a few outliers"
print(
    f"{len(aa_runs['A'])} runs each: median A {np.median(aa_runs['A']) * 1e3:.2f} ms, "
    f"median B {np.median(aa_runs['B']) * 1e3:.2f} ms; cv {aa_cv:.1%} (std/mean), "
    f"{aa_robust_cv:.1%} (1.4826·MAD/median): {aa_shape}"
)
print(
    f"A/A: mean B / mean A − 1 = {aa_summary.relative_change:+.1%}, 95 % interval "
    f"[{aa_summary.ci_low * 1e3:+.3f}, {aa_summary.ci_high * 1e3:+.3f}] ms -> {aa_summary.verdict}"
)

# %% [markdown]
# On a quiet laptop a few-millisecond sort varies by a percent or two; on a shared VM, by tens of
# percent. The two cvs tell the shapes apart: outliers inflate std/mean and barely move the
# median-based one; when both are large, the machine itself is the noise. Medians that differ by
# several percent, or an interval that excludes zero, in an A/A run are a false alarm: chance
# (about 1 in 20) or runs that are not exchangeable (a slow spell, a warm-up). A cluster adds node-to-node variation and
# stragglers (cost06): compare runs on the same nodes, or pair them.

# %% [markdown]
# ## 3. The number of runs follows from the noise and the change you need to see
#
# For $n$ runs a side with run-to-run coefficient of variation $\sigma$ (standard deviation over
# mean), a two-sided test at level $\alpha$ detects a true relative change $\delta$ with
# probability $1 - \beta$ when
#
# $$n = \left\lceil 2\,\big(z_{1-\alpha/2} + z_{1-\beta}\big)^2 \left(\frac{\sigma}{\delta}\right)^2 \right\rceil$$
#
# runs per side (Chow, Shao & Wang 2008, §3.2.1, p. 58, the two-sample parallel design), where
# $z_p$ is the standard normal $p$-quantile (`NormalDist().inv_cdf(p)`): $z_{0.975} = 1.960$,
# $z_{0.8} = 0.842$. The 2 is there because both means are noisy. Halving the change you want
# to see quadruples the runs. For $\delta = 2\,\%$ at $\sigma = 3\,\%$, power 0.8, and at your
# machine's std/mean cv (the test compares means, so plan with their noise):

# %%
print(
    f"runs per side: {runs_to_detect(0.02, 0.03)}; at your machine's cv "
    f"({aa_cv:.1%}): {runs_to_detect(0.02, max(aa_cv, 1e-4))}"
)
power_curves([0.01, 0.02, 0.05], 0.03)
plt.show()

# %% [markdown]
# Each curve is one change; the dots mark 80 % power. Section 2's 20 runs detect a 2 % change
# about half the time. Noise you remove (pinned clocks, a quiet node) is cheaper than runs you
# add.

# %% [markdown]
# ## 4. A trace diff says what changed, not why
#
# Two real PyTorch CPU profiler traces (torch 2.13.0, as `course_lib/data/README.md` records) of
# the same tiny MLP, six training steps each, before and after one code change; the steps went
# from 4.1–4.7 ms to 7.5–8.8 ms. Holistic Trace Analysis's `TraceDiff.compare_traces` sums, per
# op name, the count and the total duration in each trace and their differences; `ops_diff`
# sorts the names by count into *added*, *deleted*, *increased*, *decreased* and *unchanged*.
# `trace_diff` does the same over all six steps (HTA takes the first iteration by default):

# %%
print({k: v for k, v in ops_diff(real_diff).items() if k != "unchanged"})
columns = ["before_counts", "after_counts", "diff_counts", "diff_duration"]
print(real_diff[columns].head(6).to_string(float_format=lambda s: f"{s * 1e3:.2f} ms"))
trace_diff_bars(real_diff, top=8, show_self=False)
plt.show()

# %% [markdown]
# The casts to and from float64 appeared (`ToCopyBackward0`, more `aten::to`) and cost almost
# nothing. The top of the list is `autograd::engine::evaluate_function: AddmmBackward0`, and
# every `ProfilerStep#N` grew too. They are wrappers: a trace's duration is *inclusive*, so an
# op's growth shows again in every op that contains it. What an op spends outside its children
# is its *self time*; `trace_diff` adds `before_self_duration`, `after_self_duration` and
# `diff_self_duration`. An op whose total grew but whose self time did not contains the
# regression; it is not its site.
#
# Even the site is a symptom: a diff cannot say that the output layer now runs in float64 (the
# change, `course_lib/data/README.md`); it says which op to suspect.

# %% [markdown]
# ## 5. A hypothesis must predict a measurement that could refute it; bisect when you cannot guess
#
# "The upgrade made it slower" predicts nothing. "The output layer's matrix multiplies run in
# float64, about twice as slow as float32 on this CPU" predicts numbers: `aten::mm`'s self time
# per call doubles, and casting that one layer back to float32, with nothing else changed,
# returns the step to 4.1–4.7 ms. Run that one experiment: if the step stays at 8 ms, the
# hypothesis is refuted, however well it explains the diff.
#
# When no hypothesis survives, bisect the history. With the last good and the first bad commit
# measured, the $N$ candidates run from the one after the good to the bad one; testing the
# middle halves them (`git bisect`: "Bisecting: 49 revisions left to test after this (roughly 6
# steps)"). In the worst case it builds
#
# $$\lceil \log_2 N \rceil$$
#
# of them: 7 for 100 commits, never the known-bad end. `bisect(is_bad, N)` simulates it:

# %%
culprit = 63
print(bisect(lambda i: i >= culprit, 100))  # (the first bad candidate found, builds tested)

# %% [markdown]
# Each build's test is a section 2 comparison: give it enough runs, or one noisy verdict sends
# the search the wrong way.

# %% [markdown]
# ## Explore
#
# The explorer simulates $n$ runs a side of a 100 ms step with noise $\sigma$ and a true change
# $\delta$: the bootstrap interval, its verdict, and the power against $n$. Try:
# - At cv 3 %, change 2 %, 10 runs, step the seed: the verdict flips between "regression" and
#   "inconclusive". Drag the runs to the number the right panel marks and step it again.
# - Set the change to 0: the interval still excludes zero for about 1 seed in 20, a false alarm.
# - Double the noise: the runs needed grow fourfold.

# %%
triage_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE` and run the grade cell below each; hidden tests
# check more cases at grading. While a grade cell calls your function, the `course_lib.stats`
# routine it asks you to write is disabled.
#
# ### Exercise 1 — Throughput over matched work (2 points)
#
# Write `tokens_per_second(real_tokens, step_times)`: the throughput in real tokens per second
# (a float) of a run whose step $i$ trained `real_tokens[i]` non-padding tokens in
# `step_times[i]` seconds (two equal-length sequences of numbers). The hidden tests use runs
# whose step times vary a lot from step to step.


# %% nbgrader={"grade": false, "grade_id": "throughput_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def tokens_per_second(real_tokens, step_times) -> float:
    """Real tokens per second over a run."""
    ### BEGIN SOLUTION
    return float(np.sum(real_tokens) / np.sum(step_times))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "throughput_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: tokens_per_second(real_tokens, step_times), real tokens per second (a float)."""
no_delegation = [(course_stats, "matched_throughput")]
with forbid(*no_delegation, exercise="Exercise 1"):
    small = tokens_per_second([30_000, 10_000, 30_000], [0.30, 0.50, 0.30])
check_float(
    "tokens_per_second([30_000, 10_000, 30_000], [0.30, 0.50, 0.30])",
    small,
    70_000 / 1.10,
    unit="tokens/s",
    known_wrong={
        220_000 / 3: "the mean of per-step throughputs: weigh each step by its time",
        70_000 / 1.10e3: "tokens per millisecond",
    },
)
### BEGIN HIDDEN TESTS
throughput_cases = [
    ([65_536] * 4, [0.41, 0.43, 1.90, 0.42]),
    (before_steps["real_tokens"].tolist(), before_steps["step_time"].tolist()),
    ([4096, 8192, 2048, 16384], [0.02, 0.09, 0.01, 0.12]),
]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    throughput_answers = [tokens_per_second(w, t) for w, t in throughput_cases]
for (w_, t_), got in zip(throughput_cases, throughput_answers, strict=True):
    w_, t_ = np.asarray(w_, float), np.asarray(t_, float)
    right = w_.sum() / t_.sum()
    check_float(
        f"tokens_per_second({len(w_)} steps)",
        got,
        right,
        unit="tokens/s",
        known_wrong={
            float(np.mean(w_ / t_)): "the mean of per-step throughputs: weigh steps by their time",
            float(np.median(w_ / t_)): "the median of per-step throughputs",
            w_.sum() / t_.mean(): "Σ tokens / mean step time: the run took the sum of the steps",
            right * 1e-3: "tokens per millisecond",
        },
    )
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Did the loader change cause a regression? (1 point)
#
# `before_steps` and `after_steps` (setup cell) are the per-step records of two runs over the
# same 4,000 sequences, before and after a change to the data loader: columns `real_tokens`,
# `padded_tokens` (what the model processed, padding included) and `step_time` (s). The
# dashboard plots padded tokens per second. Set `padding_verdict` to
# - `"regression"`: the change made training slower per unit of useful work;
# - `"improvement"`: it made training faster per unit of useful work;
# - `"no_change"`: useful throughput moved by less than 1 %.

# %% nbgrader={"grade": false, "grade_id": "padding_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
useful = {
    name: steps["real_tokens"].sum() / steps["step_time"].sum()
    for name, steps in (("before", before_steps), ("after", after_steps))
}
padding_verdict = "regression"  # useful tokens/s fell by ~40 %; padded tokens/s rose
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "padding_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: "regression", "improvement" or "no_change" for the loader change."""
stated = {
    "regression": "slower per unit of useful work",
    "improvement": "faster per unit of useful work",
    "no_change": "useful throughput within 1 %",
}
check_choice("padding_verdict", padding_verdict, padding_verdict, stated)
### BEGIN HIDDEN TESTS
check_choice(
    "padding_verdict",
    padding_verdict,
    "regression",
    {
        "regression": "right",
        "improvement": "that is the dashboard's padded tokens per second: count only the real "
        "tokens, the work both runs share",
        "no_change": "compute real tokens per second of both runs: Σ real_tokens / Σ step_time",
    },
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — A percentile bootstrap interval (2 points)
#
# Write `bootstrap_ci(before, after, confidence, num_resamples, seed)`: the percentile bootstrap
# interval of `mean(after) − mean(before)` as a tuple `(low, high)` of floats, as section 2
# defines it: each resample draws `len(before)` values from `before` and `len(after)` from
# `after`, with replacement and independently; use `np.random.default_rng(seed)`. The samples may
# differ in length. The grade compares your interval with one computed from other random draws,
# so it allows 4 % of the interval's width at each end (20,000 resamples).


# %% nbgrader={"grade": false, "grade_id": "bootstrap_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def bootstrap_ci(before, after, confidence, num_resamples, seed) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(after) - mean(before)."""
    ### BEGIN SOLUTION
    gen = np.random.default_rng(seed)
    b, a = np.asarray(before, float), np.asarray(after, float)
    mean_b = b[gen.integers(0, b.size, (num_resamples, b.size))].mean(axis=1)
    mean_a = a[gen.integers(0, a.size, (num_resamples, a.size))].mean(axis=1)
    low, high = np.quantile(mean_a - mean_b, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "bootstrap_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: bootstrap_ci(...) = (low, high), percentile interval of mean(after) − mean(before)."""
no_delegation = [(course_stats, "bootstrap_diff_ci"), (course_stats, "compare")]
one_slow = (  # 12 runs a side, one slow run after: a skewed difference
    [0.100, 0.101, 0.099, 0.100, 0.102, 0.098, 0.101, 0.100, 0.099, 0.101, 0.100, 0.103],
    [0.101, 0.100, 0.102, 0.103, 0.101, 0.099, 0.102, 0.100, 0.101, 0.104, 0.102, 0.131],
)
with forbid(*no_delegation, exercise="Exercise 3"):
    got_ci = bootstrap_ci(*one_slow, 0.95, 20_000, 1)
check_type("bootstrap_ci(one_slow)", got_ci, tuple, list)
check_int("len(bootstrap_ci(one_slow))", len(got_ci), 2)
ref_ci = course_stats.bootstrap_diff_ci(*one_slow, num_resamples=20_000, seed=123)
b1_, a1_ = np.asarray(one_slow[0]), np.asarray(one_slow[1])
se1_ = math.sqrt(b1_.var(ddof=1) / b1_.size + a1_.var(ddof=1) / a1_.size)
normal_ci = (a1_.mean() - b1_.mean() - 1.96 * se1_, a1_.mean() - b1_.mean() + 1.96 * se1_)
c90_ci = course_stats.bootstrap_diff_ci(*one_slow, confidence=0.90, num_resamples=20_000, seed=9)
for end_ in (0, 1):
    check_float(
        f"bootstrap_ci(one_slow)[{end_}]",
        got_ci[end_],
        ref_ci[end_],
        rtol=0.0,
        atol=0.04 * (ref_ci[1] - ref_ci[0]),
        unit="s",
        known_wrong={
            normal_ci[end_]: "mean difference ± 1.96 standard errors: read the quantiles of the "
            "resampled differences",
            c90_ci[end_]: "a 90 % interval: the quantiles are (1 − c)/2 and (1 + c)/2",
        },
    )
### BEGIN HIDDEN TESTS
cases = {"section 2": (runs_before, runs_after)}
gen_ = np.random.default_rng(77)
cases["unequal sizes"] = (gen_.normal(0.25, 0.01, 12), gen_.normal(0.24, 0.012, 30))
cases["skewed"] = (0.08 + gen_.exponential(0.004, 25), 0.081 + gen_.exponential(0.006, 18))
reference = {
    k: course_stats.bootstrap_diff_ci(b_, a_, num_resamples=20_000, seed=123)
    for k, (b_, a_) in cases.items()
}
for label_, (b_, a_) in cases.items():
    with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
        got_ = bootstrap_ci(b_, a_, 0.95, 20_000, 5)
    check_type(f"bootstrap_ci({label_})", got_, tuple, list)
    check_int(f"len(bootstrap_ci({label_}))", len(got_), 2)
    low_, high_ = reference[label_]
    tol_ = 0.04 * (high_ - low_)
    c90 = course_stats.bootstrap_diff_ci(b_, a_, confidence=0.90, num_resamples=20_000, seed=9)
    for end_, (got_end, right_end) in enumerate(zip(got_, (low_, high_), strict=True)):
        check_float(
            f"bootstrap_ci({label_})[{end_}]",
            got_end,
            right_end,
            rtol=0.0,
            atol=tol_,
            unit="s",
            known_wrong={
                c90[end_]: "a 90 % interval: the quantiles are (1 − c)/2 and (1 + c)/2",
                -(high_, low_)[end_]: "mean(before) − mean(after): the sign is after − before",
            },
        )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The op behind the regression (2 points)
#
# Write `regression_op(diff)`: given a table like `real_diff` (the output of `trace_diff`, one row
# per op name, section 4's columns), return the name (a str) of the op whose own time — outside
# the ops it calls — grew the most. The hidden tests use `real_diff` and tables built to look like
# other regressions.


# %% nbgrader={"grade": false, "grade_id": "regression_op_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def regression_op(diff: pd.DataFrame) -> str:
    """Name of the op behind the regression in a trace diff."""
    ### BEGIN SOLUTION
    return str(diff["diff_self_duration"].idxmax())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "regression_op_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: regression_op(diff), the op whose self time grew most (a str)."""
got_op = regression_op(real_diff)
check_type("regression_op(real_diff)", got_op, str)
top_total = real_diff["diff_duration"].idxmax()
op_options = dict.fromkeys(real_diff.index.tolist(), "an op of real_diff")
op_options[top_total] = (
    "the largest growth in total time: a wrapper, its total includes its children"
)
check_choice(  # any op of real_diff but the wrapper passes here; the hidden tests check which
    "regression_op(real_diff)",
    got_op,
    got_op if got_op != top_total else "",
    op_options,
)
### BEGIN HIDDEN TESTS


def _diff_table(rows):
    """A trace_diff-like table from (name, before/after counts, totals, selfs) rows."""
    names = [r[0] for r in rows]
    t = pd.DataFrame(
        [r[1:] for r in rows],
        index=pd.Index(names, name="name"),
        columns=[
            "before_counts",
            "after_counts",
            "before_total_duration",
            "after_total_duration",
            "before_self_duration",
            "after_self_duration",
        ],
    )
    t["diff_counts"] = t["after_counts"] - t["before_counts"]
    t["diff_duration"] = t["after_total_duration"] - t["before_total_duration"]
    t["diff_self_duration"] = t["after_self_duration"] - t["before_self_duration"]
    t["counts_change_categories"] = np.sign(t["diff_counts"]).map({1: "+", -1: "-", 0: "="})
    t["change"] = np.where(t["before_counts"].eq(0), "added", "unchanged")
    return t.sort_values("diff_duration", ascending=False)


synthetic_diffs = {
    "attention": (
        _diff_table(
            [  # counts: before, after; total: before, after; self: before, after
                ("ProfilerStep#1", 1, 1, 0.100, 0.130, 0.001, 0.001),
                ("aten::scaled_dot_product_attention", 4, 4, 0.040, 0.066, 0.002, 0.002),
                ("aten::_efficient_attention_forward", 4, 4, 0.038, 0.064, 0.038, 0.064),
                ("aten::copy_", 10, 90, 0.001, 0.003, 0.001, 0.003),
                ("aten::addmm", 8, 8, 0.030, 0.031, 0.030, 0.031),
                ("aten::add_", 50, 50, 0.020, 0.005, 0.020, 0.005),  # noise: a large shrink
            ]
        ),
        "aten::_efficient_attention_forward",
    ),
    "new op": (
        _diff_table(
            [
                ("ProfilerStep#4", 1, 1, 0.050, 0.061, 0.002, 0.002),
                ("aten::layer_norm", 6, 6, 0.006, 0.016, 0.001, 0.001),
                ("aten::native_layer_norm", 6, 6, 0.005, 0.015, 0.005, 0.006),
                ("aten::contiguous", 0, 6, 0.0, 0.009, 0.0, 0.001),
                ("aten::clone", 0, 6, 0.0, 0.008, 0.0, 0.0005),
                ("aten::copy_", 12, 18, 0.0004, 0.0080, 0.0004, 0.0080),
                ("aten::mm", 30, 30, 0.0200, 0.0209, 0.0200, 0.0209),
            ]
        ),
        "aten::copy_",
    ),
    "noisy": (
        _diff_table(
            [  # the before run had a slow spell inside aten::add_: its shrink is noise
                ("ProfilerStep#2", 1, 1, 0.100, 0.104, 0.001, 0.001),
                ("Optimizer.step#SGD.step", 1, 1, 0.040, 0.016, 0.002, 0.002),
                ("aten::add_", 40, 40, 0.030, 0.006, 0.030, 0.006),
                ("aten::bmm", 12, 12, 0.030, 0.050, 0.030, 0.050),
                ("aten::to", 4, 10, 0.001, 0.003, 0.001, 0.003),
                ("aten::mm", 24, 24, 0.028, 0.029, 0.028, 0.029),
            ]
        ),
        "aten::bmm",
    ),
    "many calls": (
        _diff_table(
            [  # aten::add_ grows 12 µs a call over 1,000 calls; the svd 7 ms in its one call
                ("ProfilerStep#3", 1, 1, 0.080, 0.100, 0.001, 0.001),
                ("aten::add_", 1000, 1000, 0.010, 0.022, 0.010, 0.022),
                ("aten::linalg_svd", 1, 1, 0.002, 0.009, 0.002, 0.009),
                ("aten::mm", 20, 20, 0.030, 0.031, 0.030, 0.031),
            ]
        ),
        "aten::add_",
    ),
}
op_cases = {"real": (real_diff, "aten::mm"), **synthetic_diffs}
for label_, (table_, right_) in op_cases.items():
    got_ = got_op if label_ == "real" else regression_op(table_)
    check_type(f"regression_op({label_} diff)", got_, str)
    wrong_ = {
        table_["diff_duration"].idxmax(): "the largest growth in total time: a wrapper",
        table_["diff_counts"].idxmax(): "the largest growth in count",
        table_["diff_self_duration"].abs().idxmax(): "the largest change either way: a shrink "
        "is not the regression",
        table_["after_self_duration"].idxmax(): "the op with the most self time after, not the "
        "one that grew",
        (
            table_["after_self_duration"] / table_["after_counts"]
            - table_["before_self_duration"] / table_["before_counts"]
        ).idxmax(): "the largest growth per call: the question is the growth in total self time",
    }
    options_ = {n: "not the op whose self time grew most" for n in table_.index}
    options_.update({k: v for k, v in wrong_.items() if k != right_})
    options_[right_] = "right"
    check_choice(f"regression_op({label_} diff)", got_, right_, options_)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Runs to detect a change (2 points)
#
# Write `runs_per_side(relative_change, cv)`: the number of runs per side (an int) that section
# 3's formula needs to detect a true relative change `relative_change` (a fraction; it may be
# negative) at run-to-run noise `cv` (a fraction), with a two-sided test at $\alpha = 0.05$ and
# power 0.8.


# %% nbgrader={"grade": false, "grade_id": "runs_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def runs_per_side(relative_change: float, cv: float) -> int:
    """n = ceil(2 (z_0.975 + z_0.8)^2 (cv / delta)^2)."""
    ### BEGIN SOLUTION
    z = NormalDist().inv_cdf
    return math.ceil(2 * (z(0.975) + z(0.8)) ** 2 * (cv / relative_change) ** 2)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "runs_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: runs_per_side(relative_change, cv), runs per side (an int)."""
no_delegation = [(course_stats, "runs_to_detect"), (course_stats, "detection_power")]
with forbid(*no_delegation, exercise="Exercise 5"):
    small_runs = runs_per_side(0.02, 0.04)
check_int(
    "runs_per_side(0.02, 0.04)",
    small_runs,
    63,
    known_wrong={
        32: "one noisy mean: both sides are noisy, so the formula has a 2",
        31: "the power term z_{0.8} is missing",
        50: "a one-sided z (1.645): the test is two-sided, z_{1−α/2}",
    },
)
### BEGIN HIDDEN TESTS
runs_cases = [(0.02, 0.03), (0.01, 0.018), (-0.03, 0.04), (0.015, 0.05), (0.1, 0.03), (0.04, 0.07)]
with forbid(*no_delegation, exercise="Exercise 5 (hidden cases)"):
    runs_answers = [runs_per_side(d_, s_) for d_, s_ in runs_cases]
z_ = NormalDist().inv_cdf
for (d_, s_), got in zip(runs_cases, runs_answers, strict=True):
    ratio_ = (s_ / d_) ** 2
    exact_ = 2 * (z_(0.975) + z_(0.8)) ** 2 * ratio_
    wrong_ = {
        math.ceil(exact_ / 2): "one noisy mean: both sides are noisy, so the formula has a 2",
        math.ceil(2 * (z_(0.95) + z_(0.8)) ** 2 * ratio_): "a one-sided z (1.645): the test is "
        "two-sided, z_{1−α/2}",
        math.ceil(2 * z_(0.975) ** 2 * ratio_): "the power term z_{0.8} is missing",
        round(exact_): "rounded to nearest: round up, a fraction of a run is a whole run",
        2 * math.ceil(exact_): "the runs of both sides together: the formula gives runs per side",
        math.ceil(2 * (z_(0.975) + z_(0.8)) ** 2 * (d_ / s_) ** 2): "δ/σ upside down",
    }
    check_int(
        f"runs_per_side({d_}, {s_})",
        got,
        runs_to_detect(d_, s_),
        known_wrong={k: v for k, v in wrong_.items() if k != runs_to_detect(d_, s_)},
    )
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: a hypothesis that can fail (2 points, graded by hand)
#
# A colleague reads section 4's diff and writes: "the regression is in autograd; the backward got
# slower after the change". Rewrite this as a falsifiable hypothesis about the real traces: name
# the op, say what you predict a measurement will show (with numbers from the diff), and the one
# experiment whose result would refute it. Two or three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_hypothesis", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). "Autograd got slower" names a
# wrapper: `evaluate_function: AddmmBackward0` grew 15.6 ms in total but about 0.1 ms in self
# time; the growth is `aten::mm`'s self time, 12.9 → 28.3 ms over 18 calls, plus `aten::addmm`'s
# 4.6 ms in the forward. Hypothesis: the change runs the output layer's matrix multiplies in
# float64, about twice as slow as float32 here. Predictions: the `aten::mm` and `aten::addmm`
# calls with float64 inputs (`record_shapes` keeps their dtypes) take about 2× their float32
# time, and the float32 calls of the first layer do not change. The refuting experiment: cast
# only that layer back to float32, leave everything else, and profile again; if the step does not
# return to 4.1–4.7 ms (within the noise of repeated runs), the hypothesis is wrong.
#
# Rubric: 1 point for naming the site by self time (not the wrapper) with the diff's numbers;
# 1 point for a prediction with a number and a single-change experiment that could refute it.

# %% [markdown]
# ## Takeaways
#
# - Throughput is Σ work / Σ time over work both runs share: real tokens, not padded ones.
# - Compare repeated runs with an interval on the difference; $n \propto (\sigma/\delta)^2$ runs
#   per side, so measure the noise before planning the runs.
# - A trace diff's durations are inclusive: the regression's site is where self time grew, and
#   it is still a symptom to explain.
# - The trap: a changed workload or a noisy profile read as a cause. Match the work, check the
#   interval, then test one prediction that could prove you wrong.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - HTA compares CPU ops and GPU kernels together (`device_type`), by name and optionally by a
#   shortened name, and keeps every event of the iteration it compares. With GPU
#   work, a CPU op's duration is its launch time: the kernel's time is on the GPU rows.
# - The percentile interval is a little narrow for small samples; Efron & Tibshirani (1993) give
#   the BCa interval, which corrects bias and skew.
# - Many comparisons at 95 % give false alarms at 5 % each: a dashboard of 40 benchmarks flags
#   two a day with no change at all. Confirm a flagged regression with fresh runs before you
#   bisect.
# - `torch.utils.benchmark.Timer` runs a statement many times, reports medians and interquartile
#   ranges, and warns when the spread is large.
