# %% [markdown]
# # pipe06 · Microbatch size and gradient semantics
#
# **Objective.** Preserve the intended sample or token objective while changing accumulation,
# kernel shape, and schedule microbatches.
#
# **Time:** 29 min · **Level:** advanced
#
# You will be able to
# - accumulate gradients over microbatches of unequal token counts so that a step still
#   optimises the batch's per-token objective, and say how far the mean of per-microbatch means
#   misses it;
# - tell which operations change meaning when the microbatch changes and which do not;
# - choose the number of microbatches that minimises step time from a kernel-efficiency curve
#   and the bubble.
#
# **What you need:** pipe02 (a balanced pipeline's step is $(m + p - 1)(t_f + t_b)$). numpy at
# the level of a boolean mask and a weighted average.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import course_lib.pipeline.accumulation as course_accumulation
from course_lib.checks import (
    check_array,
    check_float,
    check_int,
    check_names,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.accumulation import accumulation_explorer
from course_lib.figures.accumulation import (
    loss_by_microbatch,
    norm_gradient_curves,
    step_time_panels,
    token_weights,
)
from course_lib.pipeline import one_f_one_b, simulate
from course_lib.pipeline.accumulation import (
    NORMS,
    accumulate_gradients,
    bigram_weights,
    full_batch_gradient,
    full_batch_loss,
    init_norm_mlp,
    markov_chain,
    microbatch_gradient,
    microbatch_loss,
    microbatch_time,
    norm_gradient_errors,
    pack_microbatches,
    sample_sequences,
    step_times,
)

rng = np.random.default_rng(6)  # the course's convention: section 3's samples

# The worked example: 32 sequences of 2 to 48 tokens from a synthetic 16-token Markov chain, in
# 8 microbatches of 4 sequences padded to their longest, and a partly trained bigram model.
chain = markov_chain(16, seed=0)
weights = bigram_weights(chain)
sequences = sample_sequences(32, chain, 2, 48, seed=1)
microbatches = pack_microbatches(sequences, 4)


def check_accumulated(label, got, mbs, w):
    """Exercise 1's check: type, one entry with the usual mistakes named, every entry against
    the full-batch gradient of microbatches mbs under weights w."""
    right = full_batch_gradient(w, mbs)
    g = np.stack([microbatch_gradient(w, mb) for mb in mbs])
    n = np.array([mb.num_tokens for mb in mbs], float)
    padded = np.array([mb.padded_tokens for mb in mbs], float)
    seqs = np.array([mb.num_sequences for mb in mbs], float)
    k, total = len(mbs), n.sum()
    wrong = [
        (np.full(k, 1 / k), "the mean of the microbatch means: short microbatches count more"),
        (padded / padded.sum(), "weights by padded size: count only the mask's True entries"),
        (np.ones(k), "the sum of the mean gradients, not normalised"),
        (n, "Σ n_k g_k without dividing by the token count"),
        (n / k, "Σ n_k g_k / m: divided by the microbatch count, not the token count"),
        (n / total**2, "divided by the token count twice"),
        (n / padded.sum(), "divided by the padded token count"),
    ]
    if len(set(seqs)) > 1:  # with equal sequence counts this is the mean of means
        wrong.append((seqs / seqs.sum(), "weights by sequences: the objective is per token"))
    if (n > seqs).all():
        wrong.append(
            (
                (n - seqs) / (n - seqs).sum(),
                "n_k − s_k: the mask counts the loss's tokens, one per True",
            )
        )
    if seqs.sum() != k:  # with one sequence each this is n / m
        wrong.append((n / seqs.sum(), "Σ n_k g_k / S: divided by the sequences, not the tokens"))
    check_type(label, got, np.ndarray)
    if got.shape == right.shape:
        i = np.unravel_index(int(np.argmax(np.abs(right))), right.shape)
        hints = [(float(np.tensordot(c, g, axes=1)[i]), why) for c, why in wrong]
        check_float(
            f"{label}[{i[0]}, {i[1]}]",
            got[i],
            right[i],
            rtol=1e-9,
            known_wrong=distinct_hints(hints, float(right[i]), rtol=1e-6),
        )
    check_array(label, got, right, rtol=1e-9, atol=1e-13)


def accumulation_inputs(w, mbs):
    """Exercise 1's arguments for microbatches mbs: their mean gradients and masks."""
    return [microbatch_gradient(w, mb) for mb in mbs], [mb.mask.copy() for mb in mbs]


# The visible checks of Exercises 2 and 4 as data: input, right value, named mistakes' values.
GAP_EXAMPLE = ([2.0, 1.2, 1.0], [10, 30, 60])
GAP_EXAMPLE_RIGHT = 0.24
GAP_EXAMPLE_WRONG = [
    (-0.24, "the token mean minus the mean of means: the sign is reversed"),
    (0.24 / 1.16, "relative to the token mean: the gap is in nats"),
    (0.08, "-cov(n, L̄)/N without the factor m"),
    (0.36, "np.cov's default ddof=1: the form needs the population covariance"),
    (0.2, "the mean minus the median of means"),
    (24.0, "a percentage of a nat"),
    (0.0, "both averages unweighted: the token mean weights each L̄_k by n_k"),
]
FASTEST_EXAMPLE = (48, 8, {1: 0.40, 2: 0.30, 3: 0.35, 4: 0.605, 5: 0.70, 6: 0.72, 8: 0.75,
                           12: 0.80, 16: 0.88, 24: 0.86, 48: 0.56}, 1e-3)  # fmt: skip
FASTEST_EXAMPLE_RIGHT = 8
FASTEST_EXAMPLE_WRONG = [
    (48, "the most microbatches: the smallest bubble, the slowest kernels"),
    (1, "the fewest microbatches: the largest bubble"),
    (3, "the most efficient size: the bubble is missing"),
    (24, "t(b) = b·peak·E(b): divide by the efficiency"),
    (6, "the microbatch size b, not the count m"),
    (10, "a size that does not divide the batch, m rounded up"),
    (9, "a size that does not divide the batch, m rounded down"),
    (12, "(m + p)·t(b): one slot too many"),
    (2, "t(b) = peak/E(b): the b sequences are missing"),
]


# %% [markdown]
# ## 1. The objective is a mean over the batch's tokens
#
# A language model's step minimises the mean loss over the real tokens of its batch,
#
# $$L = \frac{1}{N}\sum_{i=1}^{N} \ell_i = \sum_{k=1}^{m} \frac{n_k}{N}\,\bar L_k,
# \qquad \bar L_k = \frac{1}{n_k}\sum_{i \in k} \ell_i,$$
#
# where $\ell_i$ is token $i$'s cross-entropy, $m$ is `num_microbatches`, $n_k$ the real
# (unpadded) tokens of microbatch $k$ and $N = \sum_k n_k$. A mean-reduced loss gives $\bar L_k$
# and its gradient $g_k$ per microbatch; the full-batch gradient is $\sum_k (n_k/N)\,g_k$.
# Averaging the $m$ gradients instead, the *mean of means*, weights each token by $1/(m\,n_k)$:
# tokens in short microbatches count more.
#
# The model is a bigram language model (the logits after token $x$ are row $x$ of a 16 × 16
# matrix). Microbatches hold whole sequences padded to their longest; a mask marks real tokens:

# %%
grads = [microbatch_gradient(weights, mb) for mb in microbatches]  # each g_k: mean over n_k
masks = [mb.mask for mb in microbatches]
full = full_batch_gradient(weights, microbatches)  # all real tokens at once, no microbatches
for rule in ("tokens", "mean_of_means", "padded"):
    accumulated = accumulate_gradients(grads, masks, rule)
    error = np.linalg.norm(accumulated - full) / np.linalg.norm(full)
    print(f"{rule:>14}: relative error {error:.1e}")
token_weights(masks)
plt.show()

# %% [markdown]
# Token weighting equals the full-batch gradient to float rounding; the mean of means is off by
# 13 %: microbatch 7 holds 53 real tokens against an average of 100, so each counts 1.9 times.
# Weighting by the padded size $P_k$ halves the error but does not remove it: $n_k$ counts only
# the mask's real tokens.
#
# Megatron-LM's `forward_step` (`megatron/core/pipeline_parallel/schedules.py`) takes the mean of
# means by default and, with `calculate_per_token_loss`, divides by the batch's real-token count
# instead. Hugging Face's Trainer averaged per-microbatch means until its fix ("Fixing Gradient
# Accumulation", HF blog, 16 Oct 2024).

# %% [markdown]
# ## 2. The mean of means misses by a covariance
#
# Both averages weight the same $\bar L_k$, by $1/m$ and by $n_k/N$. The difference of the weights
# sums to zero, so
#
# $$\frac{1}{m}\sum_k \bar L_k - L = -\frac{m}{N}\,\operatorname{cov}_k(n_k, \bar L_k),$$
#
# where $\operatorname{cov}_k$ is the population covariance over the $m$ microbatches. The error
# vanishes when every microbatch holds as many tokens, or when mean loss does not vary with
# size. Here it varies: a sequence's first token follows the start token and is uniform
# over 15 tokens ($\ln 15 = 2.7$ nats), the later ones are predictable (about 1.2 nats), so
# short sequences have the higher mean loss. The covariance is negative and the mean of means is
# too high. The gradients obey the same identity, entry by entry.

# %%
mean_losses = np.array([microbatch_loss(weights, mb) for mb in microbatches])
token_counts = np.array([mb.num_tokens for mb in microbatches])
covariance = np.mean((token_counts - token_counts.mean()) * (mean_losses - mean_losses.mean()))
print(f"mean of means - L = {mean_losses.mean() - full_batch_loss(weights, microbatches):.5f}")
print(f"-(m/N) cov(n, L)  = {-len(token_counts) / token_counts.sum() * covariance:.5f}")
loss_by_microbatch(token_counts, mean_losses)
plt.show()

# %% [markdown]
# The shortest microbatch (53 tokens) has the highest mean loss and pulls the mean of means up by
# 0.031 nats, 2.5 % of the loss: a change of accumulation rule moves the loss curve with no
# change in the model. (Synthetic text, real numerics. In a real model early tokens have less
# context too, which pushes the covariance negative; content differences between short and long
# sequences can push either way: measure it.)

# %% [markdown]
# ## 3. Batch statistics change meaning with the microbatch
#
# Token weighting repairs the objective only when each token's loss depends on its own sequence
# alone. Batch norm (training mode) normalises each feature over the current microbatch's
# samples, so a smaller microbatch computes a different function, which no weighting undoes.
# GPipe: "the sufficient statistics of inputs during training are computed over each
# micro-batch" (Huang et al. 2019, §2.2). Layer norm uses each sample's own features.
#
# A two-layer model $y = \mathrm{norm}(xW_1)\,W_2$, squared loss, 64 samples: accumulate over
# microbatches of $b$ samples (weighted by samples) and compare with one pass.

# %%
params = init_norm_mlp(num_inputs=8, num_hidden=16, num_outputs=4, seed=0)
x = rng.normal(size=(64, 8)) * rng.uniform(0.2, 3.0, size=8) + rng.normal(size=8)
y = rng.normal(size=(64, 4))
sizes = [2, 4, 8, 16, 32, 64]
errors = {norm: norm_gradient_errors(params, x, y, sizes, norm) for norm in NORMS}
norm_gradient_curves(sizes, errors)
plt.show()

# %% [markdown]
# Layer norm and no normalisation sit on the floor: float rounding. Batch norm is off by 74 % at
# $b = 2$ and still by 6 % at 32. The rule: meaning changes whenever a sample's output or loss
# depends on the other samples of its microbatch, through any batch statistic, linear or not
# (centring alone on the microbatch mean moves a linear model's gradient by 30–65 % at $b = 2$,
# in numpy checks on random data not shown here).
# Operations on each token or sequence alone are safe.

# %% [markdown]
# ## 4. Smaller microbatches shrink the bubble and slow the kernels
#
# Cut a batch of $B$ sequences into $m = B/b$ microbatches of $b$ sequences. A balanced pipeline
# takes, as in pipe02,
#
# $$T(m) = (m + p - 1)\; t(B/m),$$
#
# where $p$ is `num_stages` and $t(b)$ is one stage's forward plus backward of a microbatch of
# size $b$ (Narayanan et al. 2021, §3.4, Eq. 1). More microbatches shrink the bubble, but
# small matrix products run below peak (Narayanan et al. 2021, Fig. 7: up to 1.3× throughput
# per GPU from a larger microbatch). Model $t(b) = t_0 + b\,t_1$: a fixed cost per microbatch
# plus a cost per sequence, kernel efficiency $b\,t_1/t(b)$. Then the fixed costs grow with $m$,
# the bubble shrinks, and the continuous optimum is $m^* = \sqrt{B\,(p - 1)\,t_1/t_0}$.
#
# Synthetic constants: $t_0 = 1.5$ ms, $t_1 = 0.5$ ms (25 % efficiency at $b = 1$, 84 % at 16,
# far steeper than Fig. 7), $p = 8$, $B = 64$, so $m^* = 12.2$:

# %%
table = {b: microbatch_time(b, 1.5e-3, 0.5e-3) for b in (1, 2, 4, 8, 16, 32, 64)}
times = step_times(64, 8, table)  # {m: (m + p - 1) t(B/m)}
print({m: f"{t * 1e3:.1f} ms" for m, t in times.items()})
run = simulate(one_f_one_b(8, 16), table[4] / 3, 2 * table[4] / 3)
print(f"simulate(one_f_one_b(8, 16)): {run.makespan * 1e3:.1f} ms")
step_time_panels(64, 8, table, peak_sample_time=0.5e-3)
plt.show()

# %% [markdown]
# Blue is compute with no bubble, $m\,t(b)$; grey the bubble. One microbatch idles 88 % of the
# step; 64 microbatches of one sequence have the smallest bubble and the slowest kernels,
# 142 ms. The best lies between the extremes: 16 microbatches of 4 sequences, 80.5 ms, next to
# $m^*$; the simulator agrees. Real curves have bumps (tile sizes, memory): measure $t(b)$ at
# each size and search.

# %% [markdown]
# ## Explore
#
# The explorer draws $T(m)$ for power-of-two sizes ($t_1 = 0.5$ ms, $t_0$ on a slider) and
# simulates 1F1B at the best $m$. Try:
# - $t_0 = 0$: every size runs at peak and the best $m$ is $B$; $t_0 = 5$ ms: it falls to 8.
# - At 1.5 ms raise $p$ from 8 to 32: more microbatches, $m^* \propto \sqrt{p - 1}$.
# - $B = 1024$: the bubble's share falls; the best size grows only like $\sqrt{B}$.

# %%
accumulation_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each (hidden tests
# check more cases at grading; the course's routines that answer an exercise are disabled there).
#
# ### Exercise 1 — Token-weighted accumulation (3 points)
#
# Write `accumulate(mean_gradients, masks)`. `mean_gradients[k]` is microbatch $k$'s gradient of
# its mean token loss (numpy arrays of one shape), `masks[k]` its boolean mask (True on real
# tokens). Return the gradient of the mean loss over the batch's real tokens. 1a (1 point):
# unpadded rows of unequal length; 1b (2 points): padded microbatches, down to one token and a
# single microbatch.


# %% nbgrader={"grade": false, "grade_id": "accumulate_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def accumulate(mean_gradients, masks):
    """The gradient of the batch's mean token loss from per-microbatch mean gradients."""
    ### BEGIN SOLUTION
    counts = [int(np.count_nonzero(mask)) for mask in masks]  # real tokens n_k
    total = sum(counts)
    return sum(
        n / total * np.asarray(g, dtype=float) for n, g in zip(counts, mean_gradients, strict=True)
    )
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "accumulate_unpadded_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: accumulate(mean_gradients, masks) on unpadded microbatches of unequal length."""
_no_delegation = [
    (course_accumulation, "accumulate_gradients"),
    (course_accumulation, "full_batch_gradient"),
]
_rows = pack_microbatches(sequences[:6], 1)  # six packed rows of 24 to 46 tokens, no padding
_grads, _masks = accumulation_inputs(weights, _rows)
with forbid(*_no_delegation, exercise="Exercise 1"):
    _small = accumulate(_grads, _masks)
check_accumulated("accumulate(six unpadded rows)", _small, _rows, weights)
### BEGIN HIDDEN TESTS
_chain = markov_chain(12, seed=5)
_w = bigram_weights(_chain) + np.random.default_rng(5).normal(0.0, 0.3, size=(12, 12))
_seqs = sample_sequences(9, _chain, 1, 90, seed=6)
_cases = {
    "nine rows of 1 to 90 tokens": pack_microbatches(_seqs, 1),
    "two rows, 3 and 200 tokens": pack_microbatches([_seqs[0][:3], np.tile(_seqs[1], 5)[:200]], 1),
    "one row": pack_microbatches(_seqs[2:3], 1),
    "a row of one token": pack_microbatches([_seqs[3][:1], _seqs[4], _seqs[5]], 1),
}
_hidden = {name: accumulation_inputs(_w, mbs) for name, mbs in _cases.items()}
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _answers = {name: accumulate(*args) for name, args in _hidden.items()}
for _name, _mbs in _cases.items():
    check_accumulated(f"accumulate({_name})", _answers[_name], _mbs, _w)
### END HIDDEN TESTS
passed("Exercise 1a")

# %% nbgrader={"grade": true, "grade_id": "accumulate_padded_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: accumulate(mean_gradients, masks) on padded microbatches."""
_no_delegation = [
    (course_accumulation, "accumulate_gradients"),
    (course_accumulation, "full_batch_gradient"),
]
_grads, _masks = accumulation_inputs(weights, microbatches)
with forbid(*_no_delegation, exercise="Exercise 1"):
    _small = accumulate(_grads, _masks)
check_accumulated("accumulate(section 1's microbatches)", _small, microbatches, weights)
### BEGIN HIDDEN TESTS
_chain = markov_chain(10, seed=7)
_w = bigram_weights(_chain) + np.random.default_rng(7).normal(0.0, 0.3, size=(10, 10))
_seqs = sample_sequences(13, _chain, 1, 60, seed=8)
_cases = {
    "sizes 4, 4, 3, 2": pack_microbatches(_seqs, [4, 4, 3, 2]),
    "sizes 1, 6, 6 with a one-token sequence": pack_microbatches([_seqs[0][:1]] + _seqs[1:], [1, 6, 6]),
    "one padded microbatch": pack_microbatches(_seqs[:5], 5),
    "sizes 2, 9, 2": pack_microbatches(_seqs, [2, 9, 2]),
}  # fmt: skip
_hidden = {name: accumulation_inputs(_w, mbs) for name, mbs in _cases.items()}
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _answers = {name: accumulate(*args) for name, args in _hidden.items()}
for _name, _mbs in _cases.items():
    check_accumulated(f"accumulate({_name})", _answers[_name], _mbs, _w)
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — The error of the mean of means (2 points)
#
# Write `mean_of_means_gap(mean_losses, token_counts)`: the mean of the per-microbatch mean
# losses minus the batch's per-token mean loss, a float in nats. `mean_losses[k]` is microbatch
# $k$'s mean over its `token_counts[k]` real tokens. Hidden cases: equal counts, one
# microbatch, long microbatches with the higher loss.


# %% nbgrader={"grade": false, "grade_id": "gap_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mean_of_means_gap(mean_losses, token_counts):
    """How far the mean of per-microbatch mean losses sits above the per-token mean."""
    ### BEGIN SOLUTION
    losses = np.asarray(mean_losses, dtype=float)
    counts = np.asarray(token_counts, dtype=float)
    return float(losses.mean() - (counts * losses).sum() / counts.sum())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "gap_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: mean_of_means_gap(mean_losses, token_counts), a float in nats."""
_no_delegation = [
    (course_accumulation, "mean_of_means_error"),
    (course_accumulation, "full_batch_loss"),
    (course_accumulation, "accumulate_gradients"),
]
with forbid(*_no_delegation, exercise="Exercise 2"):
    _small = mean_of_means_gap(*GAP_EXAMPLE)
check_float(
    f"mean_of_means_gap{GAP_EXAMPLE}",
    _small,
    GAP_EXAMPLE_RIGHT,
    rtol=1e-9,
    atol=1e-12,
    known_wrong=distinct_hints(GAP_EXAMPLE_WRONG, GAP_EXAMPLE_RIGHT, rtol=1e-6, atol=1e-12),
)


### BEGIN HIDDEN TESTS
def _checked_gap(label, got, losses, counts):
    """The gap against the direct computation, with the usual mistakes named."""
    losses_, n_ = np.asarray(losses, float), np.asarray(counts, float)
    token_mean = float((n_ * losses_).sum() / n_.sum())
    right = float(losses_.mean()) - token_mean
    cov = float(np.mean((n_ - n_.mean()) * (losses_ - losses_.mean())))
    k = len(n_)
    hints = [
        (-right, GAP_EXAMPLE_WRONG[0][1]),
        (right / token_mean, GAP_EXAMPLE_WRONG[1][1]),
        (abs(right), "|gap|: keep the sign"),
        (-cov / n_.sum(), GAP_EXAMPLE_WRONG[2][1]),
        (-k / n_.sum() * cov * k / max(k - 1, 1), GAP_EXAMPLE_WRONG[3][1]),
        (float(losses_.mean()) - float(np.median(losses_)), GAP_EXAMPLE_WRONG[4][1]),
        (100 * right, GAP_EXAMPLE_WRONG[5][1]),
        (0.0, GAP_EXAMPLE_WRONG[6][1]),
    ]
    check_float(label, got, right, rtol=1e-9, atol=1e-12,
                known_wrong=distinct_hints(hints, right, rtol=1e-6, atol=1e-12))  # fmt: skip


_gap_cases = {
    "section 2's microbatches": (
        [microbatch_loss(weights, mb) for mb in microbatches],
        [mb.num_tokens for mb in microbatches],
    ),
    "long microbatches higher": ([1.1, 1.9, 1.4, 2.2], [40, 310, 120, 500]),
    "equal counts": ([1.3, 2.8, 0.9], [64, 64, 64]),
    "one microbatch": ([1.7], [250]),
    "twelve microbatches": (
        [1.9, 1.2, 1.25, 1.6, 1.1, 1.15, 2.3, 1.3, 1.45, 1.05, 1.8, 1.22],
        [30, 400, 380, 90, 512, 470, 12, 300, 150, 520, 60, 350],
    ),
}
with forbid(*_no_delegation, exercise="Exercise 2 (hidden cases)"):
    _answers = {
        name: mean_of_means_gap(list(l_), list(n_)) for name, (l_, n_) in _gap_cases.items()
    }
for _name, (_losses, _counts) in _gap_cases.items():
    _checked_gap(f"mean_of_means_gap({_name})", _answers[_name], _losses, _counts)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Which operations change meaning (2 points)
#
# With token-weighted accumulation, you halve the microbatch size, keeping the batch. Set
# `changes_meaning` to the set of options whose result changes (beyond float rounding and which
# random numbers are drawn: every random mask keeps its distribution):
# - `"batch_norm"`: batch normalisation in training mode, statistics over the microbatch's
#   samples;
# - `"layer_norm"`: layer normalisation, statistics over each token's features;
# - `"dropout"`: dropout, each activation zeroed independently with probability $q$;
# - `"causal_attention"`: causal self-attention within each sequence (microbatches hold whole
#   sequences);
# - `"moe_balance_loss"`: a mixture-of-experts load-balancing loss
#   $N_E\sum_{e} f_e P_e$ computed per microbatch, $f_e$ the fraction of the microbatch's tokens
#   routed to expert $e$, $P_e$ the mean over all the microbatch's tokens of the router
#   probability for $e$ (Fedus et al. 2022, §2.2, Eq. 4);
# - `"in_batch_negatives"`: a contrastive loss that scores each sequence against the other
#   sequences of its microbatch;
# - `"token_cross_entropy"`: per-token cross-entropy, summed and divided by the batch's tokens.

# %% nbgrader={"grade": false, "grade_id": "semantics_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
changes_meaning = {"batch_norm", "moe_balance_loss", "in_batch_negatives"}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "semantics_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: the set of operations whose result changes with the microbatch size."""
_options = {"batch_norm", "layer_norm", "dropout", "causal_attention", "moe_balance_loss",
            "in_batch_negatives", "token_cross_entropy"}  # fmt: skip
check_type("changes_meaning", changes_meaning, set, frozenset, list, tuple)
check_names(
    "changes_meaning: names that are not among the options",
    [o for o in changes_meaning if o not in _options],
    [],
)
check_names(  # section 3's own case
    "changes_meaning: does it include batch norm?",
    [o for o in changes_meaning if o == "batch_norm"],
    ["batch_norm"],
)
### BEGIN HIDDEN TESTS
check_names(
    "changes_meaning",
    changes_meaning,
    ["batch_norm", "moe_balance_loss", "in_batch_negatives"],
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The fastest number of microbatches (2 points)
#
# Write `fastest_num_microbatches(batch_size, num_stages, efficiency, peak_sample_time)`: the
# number of microbatches $m$ (an int) with the least step time (section 4) for a balanced
# pipeline. `efficiency` is a measured table `{b: E(b)}` of kernel efficiency per microbatch
# size; a stage's forward plus backward of $b$ sequences takes $t(b) = b \cdot$
# `peak_sample_time` $/ E(b)$ seconds. Use only the sizes that divide the batch. Hidden tables
# are not smooth, and one has a single stage.


# %% nbgrader={"grade": false, "grade_id": "fastest_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fastest_num_microbatches(batch_size, num_stages, efficiency, peak_sample_time):
    """The number of microbatches with the least step time."""
    ### BEGIN SOLUTION
    step = {}
    for b, e in efficiency.items():
        if batch_size % b == 0:
            m = batch_size // b
            step[m] = (m + num_stages - 1) * b * peak_sample_time / e
    return min(step, key=step.get)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "fastest_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: fastest_num_microbatches(B, p, efficiency, peak_sample_time), an int."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_accumulation, "best_num_microbatches"),
    (course_accumulation, "step_times"),
    (course_accumulation, "continuous_best_num_microbatches"),
    # T(m) from the simulator or any balanced-step closed form of the course
    (course_pipeline, "simulate"),
    *[(course_pipeline, n) for n in ("fill_drain_makespan", "zero_bubble_h1_bubble")],
    *[(course_interleaving, n) for n in ("interleaved_makespan", "step_times")],
    *[(course_imbalance, n) for n in ("gpipe_makespan", "slowest_stage_makespan")],
    (course_imbalance, "makespan_lower_bound"),
]


with forbid(*_no_delegation, exercise="Exercise 4"):
    _small = fastest_num_microbatches(
        *FASTEST_EXAMPLE[:2], dict(FASTEST_EXAMPLE[2]), FASTEST_EXAMPLE[3]
    )
check_int(
    "fastest_num_microbatches(48, 8, FASTEST_EXAMPLE's table, 1 ms)",
    _small,
    FASTEST_EXAMPLE_RIGHT,
    known_wrong=distinct_hints(FASTEST_EXAMPLE_WRONG, FASTEST_EXAMPLE_RIGHT),
)


### BEGIN HIDDEN TESTS
def _checked_fastest(label, got, big_b, p, eff, peak):
    """The searched optimum, with the extremes and the usual slips named."""
    div = {b: e for b, e in eff.items() if big_b % b == 0}

    def argmin(costs):
        return min(costs, key=costs.get)

    def best(count, cost, table=div):  # the count minimising cost(m, b, e) over the table
        return argmin({count(b): cost(count(b), b, e) for b, e in table.items()})

    right = best(lambda b: big_b // b, lambda m, b, e: (m + p - 1) * b * peak / e)
    found = [
        big_b // min(div),
        big_b // max(div),
        best(lambda b: big_b // b, lambda m, b, e: big_b * peak / e),
        best(lambda b: big_b // b, lambda m, b, e: (m + p - 1) * b * peak * e),
        argmin({b: (big_b // b + p - 1) * b * peak / e for b, e in div.items()}),
        best(lambda b: -(-big_b // b), lambda m, b, e: (m + p - 1) * b * peak / e, eff),
        best(lambda b: big_b // b, lambda m, b, e: (m + p - 1) * b * peak / e, eff),
        best(lambda b: big_b // b, lambda m, b, e: (m + p) * b * peak / e),
        best(lambda b: big_b // b, lambda m, b, e: (m + p - 1) * peak / e),
    ]
    hints = [(m, why) for m, (_, why) in zip(found, FASTEST_EXAMPLE_WRONG, strict=True)]
    check_int(label, got, right, known_wrong=distinct_hints(hints, right))


_fastest_cases = [  # (B, p, {b: E(b)}, peak seconds)
    (64, 8, {1: 0.25, 2: 0.4, 4: 0.57, 8: 0.72, 16: 0.84, 32: 0.91, 64: 0.95}, 0.5e-3),
    (32, 6, {1: 0.47, 2: 0.51, 4: 0.69, 5: 0.84, 8: 0.78, 16: 0.96, 32: 0.98}, 1e-3),
    (48, 3, {1: 0.46, 2: 0.52, 3: 0.77, 4: 0.77, 5: 0.92, 6: 0.82, 8: 0.95, 12: 0.98,
             16: 0.98, 24: 0.98, 48: 0.98}, 0.4e-3),
    (128, 8, {1: 0.22, 2: 0.27, 3: 0.42, 4: 0.41, 8: 0.43, 16: 0.65, 32: 0.89, 64: 0.94,
              128: 0.98}, 0.2e-3),
    (64, 3, {1: 0.25, 2: 0.26, 4: 0.49, 8: 0.6, 16: 0.74, 21: 0.89, 32: 0.79, 64: 0.96}, 1e-3),
    (60, 8, {1: 0.3, 2: 0.5, 3: 0.6, 4: 0.65, 5: 0.7, 6: 0.72, 8: 0.95, 10: 0.8, 12: 0.85,
             15: 0.86, 20: 0.9, 30: 0.92, 60: 0.95}, 0.5e-3),
    (64, 1, {1: 0.25, 2: 0.4, 4: 0.57, 8: 0.72, 16: 0.84, 32: 0.91, 64: 0.9}, 0.5e-3),
]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 4 (hidden cases)"):
    _answers = [fastest_num_microbatches(b_, p_, dict(e_), t_) for b_, p_, e_, t_ in _fastest_cases]
for (_b, _p, _e, _t), _got in zip(_fastest_cases, _answers, strict=True):
    _checked_fastest(f"fastest_num_microbatches({_b}, {_p}, table, {_t})", _got, _b, _p, _e, _t)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Explained answer: a pipeline for a fine-tuning job (2 points, graded by hand)
#
# A fine-tuning job steps on batches of 32 sequences of 50 to 2,000 tokens. To add a 4-stage 1F1B
# pipeline, a colleague cuts each batch into $m = 32$ microbatches of one sequence, keeps the
# framework's mean loss per microbatch and averages the 32 gradients. The vision encoder in
# stage 0 uses batch norm. The step got faster and the loss curve moved up. In 3–4 sentences
# with numbers: what changed the objective, what only the speed, and what would you change and
# measure?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_finetune_pipeline", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Averaging 32 per-sequence means
# weights each token by $1/(32\,n_k)$: a 50-token sequence's tokens count 40 times a
# 2,000-token sequence's, and short sequences have the higher mean loss, so the loss rises by
# $-(m/N)\operatorname{cov}(n_k, \bar L_k)$ with no change in the model; divide summed token
# losses by the batch's real-token count. Batch norm over one image per microbatch is a
# different function: freeze its running statistics or use a per-sample norm. The speed is the
# bubble, $(p-1)/(m+p-1) = 9$ % at $m = 32$ (27 % at $m = 8$), against slower small kernels:
# measure $t(b)$ at $b = 1, 2, 4, 8$ and minimise $(m + p - 1)\,t(32/m)$.
#
# Rubric: 1 point for the token weighting (with the fix) and batch norm as changes of objective;
# 1 point for the bubble against kernel efficiency, with the measurement that decides $m$.

# %% [markdown]
# ## Takeaways
#
# - Weight microbatch $k$'s mean gradient by $n_k/N$, real tokens from the mask.
# - The mean of means misses by $-(m/N)\operatorname{cov}(n_k, \bar L_k)$.
# - Anything computed across a microbatch's samples (batch norm, per-microbatch balancing
#   losses, in-batch negatives) changes meaning with the microbatch size.
# - The trap: choosing $m$ for the smallest bubble or the biggest microbatch;
#   $(m + p - 1)\,t(B/m)$ with a measured $t(b)$ decides.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Narayanan et al. (2021, §3.4) estimate throughput from Eq. 1 with measured times (Fig. 8:
#   $b = 4$ is best at both batch sizes tried); their Takeaway #3 says the optimum depends on
#   the model's throughput and memory, $p$, $d$ and $B$: the search of Exercise 4.
# - With `calculate_per_token_loss`, Megatron-LM divides the summed gradients by "the total
#   number of non-padded tokens in the global batch"
#   (`megatron/core/distributed/finalize_model_grads.py`): a count that exists only on the last
#   stage, which computes the loss, and is broadcast to the others.
# - Qiu et al. (2025, "Demons in the Detail", ACL) show that a load-balancing loss computed per
#   microbatch, where a microbatch holds a few sequences, forces balance within each sequence;
#   computing $f_e$ over the global batch instead improved perplexity and expert specialisation.
# - Ghost batch normalisation (Hoffer et al. 2017) computes batch-norm statistics over small
#   "ghost" batches on purpose; the point of this lesson is that a microbatch size chosen for
#   the pipeline silently sets that size for you.
# - Packing several sequences into one row removes padding but needs an attention mask that
#   stops at sequence boundaries; without it, causal attention crosses sequences and the
#   objective changes again.
