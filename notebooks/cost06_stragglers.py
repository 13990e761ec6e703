# %% [markdown]
# # cost06 · A barrier follows the slowest required participant, not the average rank
#
# **Objective.** Analyze maximum completion times, rank waiting, and the assumptions needed to
# extrapolate straggler probabilities as a job scales.
#
# **Time:** 33 min · **Level:** advanced
#
# You will be able to
# - compute a step's barrier time and every rank's wait from a (steps × ranks) completion matrix,
#   and tell a persistent straggler from a transient one;
# - compute the probability that a step has a slow rank, $1 - (1 - p)^n$, and the expected
#   maximum of $n$ rank times from its CDF;
# - extrapolate both from a small job to a large one, and say which assumption (independent,
#   identically distributed ranks) the data must satisfy first.
#
# **What you need:** cost01 (a step ends when its longest dependency path ends). numpy at the
# level of `axis=` reductions and boolean masks (numpy is what is installed; there is no scipy);
# a CDF and an integral.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.straggler import straggler_explorer
from course_lib.figures.straggler import (
    barrier_waits,
    expected_max_curve,
    slow_step_curves,
)
from course_lib.straggler import (
    barrier_times,
    exercise_run,
    expected_max_normal,
    normal_cdf,
    prob_slow_step,
    prob_slow_step_hosts,
    rank_waits,
    slowest_counts,
    synthetic_completion,
)

rng = np.random.default_rng(6)  # the course's convention; the data below have their own seeds
ms = 1e-3  # one millisecond in seconds

# Section 1's job (synthetic): 8 ranks, 200 steps, 100 ms of work per step, 3 ms of jitter.
job = synthetic_completion(200, 8, mean=100 * ms, rank_std=3 * ms, seed=19)

# Exercise 1: a synthetic (40 steps x 8 ranks) run; what is in it is for you to find out.
EX1_COMPLETION = exercise_run("ex1")
# Exercise 2: at 64 ranks, 3.1 % of the steps had at least one slow rank.
P64_SLOW_STEPS = 0.031
# Exercise 4: the CDF of N(0, 1) on a grid; Exercise 5: a synthetic 64-rank run on 8 hosts.
GRID_X = np.linspace(-8.0, 8.0, 4001)
GRID_F = normal_cdf(GRID_X)
RUN_B = exercise_run("run_b")

# %% [markdown]
# ## 1. A synchronous step ends when its slowest rank arrives
#
# In data-parallel training no rank can finish the gradient all-reduce before the last one has
# contributed. Record when rank $r$ finishes its work in step $s$, from the step's start, as
# $c_{s,r}$, a (steps × ranks) **completion matrix**. Then
#
# $$T_s = \max_r c_{s,r}, \qquad w_{s,r} = T_s - c_{s,r},$$
#
# where $T_s$ is the step's **barrier time** (when the collective can complete) and $w_{s,r}$
# is the time rank $r$ **waits** for the slowest one. A synthetic job: 8 ranks, 100 ms of work
# per step, 3 ms of independent jitter (a standard deviation).

# %%
barrier = barrier_times(job)  # (steps,) row maxima
waits = rank_waits(job)  # (steps, ranks): barrier - own
print(f"mean rank time {job.mean() / ms:.1f} ms, mean barrier {barrier.mean() / ms:.1f} ms")
print(f"mean wait per rank (ms): {np.round(waits.mean(axis=0) / ms, 2)}")
barrier_waits(job, steps=(0, 1, 2))
plt.show()

# %% [markdown]
# Blue is each rank's work, hatched orange its wait; the next step starts at the dashed line.
# The average rank takes 100.0 ms, the step 104.3 ms: 4.3 ms of every step, on every rank, is
# waiting. A different rank is last in each step: nothing is broken, the step follows a
# maximum, and the maximum of noisy times exceeds their mean.

# %% [markdown]
# ### Measure it on your machine
#
# The next cell starts $N$ processes that do the same numpy work for 10 steps, meeting at a
# `multiprocessing.Barrier` before each, and records a real completion matrix (each worker's
# finish minus the step's earliest start). It takes about a second.

# %%
import os

from course_lib.straggler import measure_completion

print(
    f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} CPUs"
)
print("workers  finish  barrier (p10-p90)      mean wait   (ms, medians over 10 steps)")
for workers in (1, 4, 8):
    try:
        measured = measure_completion(workers, 10, work_size=100_000, repeats=10)
    except TimeoutError as err:  # a stuck or killed worker: report it, keep the lesson going
        print(f"{workers:7d}  no measurement: {err}")
        continue
    last = measured.max(axis=1)  # this run's barrier time per step
    lo, hi = np.percentile(last, [10, 90]) / ms
    wait = np.median((last[:, None] - measured).mean(axis=1)) / ms
    print(
        f"{workers:7d}  {np.median(measured) / ms:6.2f}  {np.median(last) / ms:7.2f}"
        f" ({lo:5.2f}-{hi:5.2f})  {wait:9.2f}"
    )

# %% [markdown]
# The work is identical, yet the barrier usually sits further from the typical worker at 8
# workers than at 1 (the 4- and 8-worker rows can swap between runs): the processes share a few
# cores and the scheduler decides who is last. On a cluster, host interruptions, data loading,
# throttling and the network do; the arithmetic of the maximum is the same.

# %% [markdown]
# ## 2. A rare slow rank makes slow steps common
#
# Say each rank has a slow step (a garbage collection, a retransmission) with probability $p$,
# independently of the others. A step is slow if any rank is slow:
#
# $$P(\text{slow step}) = 1 - (1 - p)^n,$$
#
# where $n$ is the number of ranks. Dean and Barroso ("The Tail at Scale", CACM 2013) give the
# classic case: a server that answers 1 request in 100 slowly, fanned out to 100 servers, makes
# 63 % of requests slow.

# %%
print(f"p = 0.01, n = 100:  {prob_slow_step(0.01, 100):.3f}")
print(f"p = 0.001, n = 1024: {prob_slow_step(0.001, 1024):.3f}")
slow_step_curves(p_values=(0.001, 0.01), max_ranks=4096)
plt.show()

# %% [markdown]
# A rank slow in 0.1 % of its steps is invisible on one node and slows 64 % of the steps at
# 1024 ranks; $np$ is a fair approximation only while $np \ll 1$.

# %% [markdown]
# ## 3. The expected maximum grows with n
#
# The maximum of $n$ independent times with CDF $F$ is below $x$ only if all of them are, so
# its CDF is $F(x)^n$ (David and Nagaraja, *Order Statistics*, 2003, §2.1). The mean of any
# random variable $Y$ is $\int_0^\infty P(Y > y)\,dy - \int_{-\infty}^0 P(Y \le y)\,dy$, so
#
# $$E[\max] = \int_0^\infty \bigl(1 - F(x)^n\bigr)\,dx - \int_{-\infty}^0 F(x)^n\,dx,$$
#
# where the second term vanishes for non-negative times. For standard normal jitter
# `expected_max_normal` integrates it.

# %%
print(
    f"section 1's job, 8 ranks: 100 ms + 3 ms × 1.4236 = {100 + 3 * expected_max_normal(8):.1f} ms"
)
expected_max_curve(max_ranks=4096)
plt.show()

# %% [markdown]
# The expected barrier keeps climbing, roughly like $\sqrt{2 \ln n}$. Section 1's job predicts
# 104.3 ms and shows 104.3 ms; at 1024 ranks the same jitter costs 9.7 ms per step, 10 % of the
# work. Heavier tails make the maximum grow faster still: the tail, not the mean, sets the step.

# %% [markdown]
# ## 4. Extrapolation assumes independent, identical ranks
#
# Both formulas multiply probabilities, so both assume the ranks are **independent** and
# **identically distributed** (iid). Real clusters break each:
#
# - **Shared slowdowns.** A host's daemon or network link slows all its ranks at once: a
#   host-wide slowdown of probability $p_h$ per host and step, plus a rank's own of probability
#   $p_r$. With $g$ ranks per host, $n$ ranks are $n/g$ independent hosts:
#
#   $$P(\text{slow step}) = 1 - (1 - p_h)^{n/g}\,(1 - p_r)^n.$$
#
#   A rank is still slow with probability $1 - (1 - p_h)(1 - p_r)$, but together with its
#   neighbours, so fewer steps are slow than iid predicts.
# - **Persistent stragglers.** A rank with a bad accelerator or a bigger shard is slow in every
#   step: it is not identically distributed. Under iid each rank is last in a binomial share of
#   the $S$ steps, $S/n \pm \sqrt{S (1/n)(1 - 1/n)}$ (25 ± 4.7 of 200 at $n = 8$); a rank last
#   in most steps is persistent.

# %%
print("steps each rank was last, section 1's job:", slowest_counts(job))
p_rank, p_host = 1e-4, 4e-4  # 8 ranks per host
print(
    f"4096 ranks: iid {prob_slow_step(1 - (1 - p_host) * (1 - p_rank), 4096):.3f}, "
    f"host-correlated {prob_slow_step_hosts(p_rank, p_host, 4096, 8):.3f}"
)

# %% [markdown]
# Both models give each rank the rate $5 \times 10^{-4}$. Which to believe is a question for
# the data: under independence, two ranks' times are uncorrelated across steps whether or not
# they share a host (`np.corrcoef(completion.T)` gives every pair).

# %% [markdown]
# ## Explore
#
# The explorer plots section 4's two models, $P(\text{slow step})$ against $n$ for a per-rank
# rate $p$, a host-wide share of it and a host size. Try:
# - Set the host-wide share to 0: the curves coincide. Raise it to 1 with 8 ranks per host: the
#   host curve is the iid curve moved right by a factor of 8 in $n$.
# - At $p = 10^{-3}$ and $n = 1024$, drag the share from 0 to 1: the slow-step probability falls
#   from 64 % to 12 %, with every rank's own log unchanged.

# %%
straggler_explorer(p_slow=1e-3, host_share=0.8, ranks_per_host=8, num_ranks=1024)

# %% [markdown]
# ## Exercises
#
# Run the grade cell below each answer; hidden tests check more cases, with the matching
# `course_lib.straggler` routines disabled. Times are in seconds.
#
# ### Exercise 1 — Mean waits and the persistent straggler (3 points)
#
# `EX1_COMPLETION` (setup cell) is a synthetic (40 steps × 8 ranks) completion matrix.
#
# (a) Write `mean_waits(completion)`: a numpy array of shape `(ranks,)`, each rank's wait
# $w_{s,r}$ averaged over the steps, in seconds. (2 points)
#
# (b) Write `persistent_straggler(completion)`: the rank (an `int`) that arrives last in
# **more than half** of the steps, or `-1` if no rank does. The hidden tests include iid data,
# a rank last in exactly half of the steps, and a rank with one huge delay. (1 point)


# %% nbgrader={"grade": false, "grade_id": "straggler_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mean_waits(completion):
    """Each rank's wait at the barrier (row max minus own time), averaged over steps (s)."""
    ### BEGIN SOLUTION
    c = np.asarray(completion, dtype=float)
    return (c.max(axis=1, keepdims=True) - c).mean(axis=0)
    ### END SOLUTION


def persistent_straggler(completion):
    """The rank last in more than half of the steps, or -1."""
    ### BEGIN SOLUTION
    c = np.asarray(completion, dtype=float)
    counts = np.bincount(c.argmax(axis=1), minlength=c.shape[1])
    rank = int(counts.argmax())
    return rank if 2 * counts[rank] > c.shape[0] else -1
    ### END SOLUTION


print("mean waits (ms):", np.round(mean_waits(EX1_COMPLETION) / ms, 2))
print("persistent straggler:", persistent_straggler(EX1_COMPLETION))

# %% nbgrader={"grade": true, "grade_id": "mean_waits_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: mean_waits(completion), each rank's mean wait in seconds (an ndarray)."""
import course_lib.straggler as course_straggler

routines = ("barrier_times", "rank_waits", "slowest_counts", "persistent_stragglers")
no_delegation = [(course_straggler, name) for name in routines]
small = np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 2.0]])  # barriers 3 and 4
with forbid(*no_delegation, exercise="Exercise 1a"):
    small_waits = mean_waits(small)
check_type("mean_waits(small)", small_waits, np.ndarray)
check_array("mean_waits([[1, 3, 2], [4, 1, 2]])", small_waits, [1.0, 1.5, 1.5])
### BEGIN HIDDEN TESTS
cases = [
    EX1_COMPLETION,
    synthetic_completion(30, 5, mean=0.2, rank_std=0.01, seed=11),
    synthetic_completion(12, 16, mean=0.05, rank_std=0.004, slow_ranks={7: 1.1}, seed=12),
    np.array([[0.1, 0.1, 0.3]]),
]
with forbid(*no_delegation, exercise="Exercise 1a (hidden cases)"):
    answers = [mean_waits(c) for c in cases]
for k, (c, got) in enumerate(zip(cases, answers, strict=True)):
    check_type(f"mean_waits(case {k})", got, np.ndarray)
    check_array(f"mean_waits(case {k})", got, (c.max(axis=1, keepdims=True) - c).mean(axis=0))
### END HIDDEN TESTS
passed("Exercise 1a")

# %% nbgrader={"grade": true, "grade_id": "persistent_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: persistent_straggler(completion), the rank last in > half the steps, or -1."""
import course_lib.straggler as course_straggler

routines = ("barrier_times", "rank_waits", "slowest_counts", "persistent_stragglers")
no_delegation = [(course_straggler, name) for name in routines]
small = np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 2.0], [1.0, 2.5, 2.0]])  # rank 1 last twice
with forbid(*no_delegation, exercise="Exercise 1b"):
    small_rank = persistent_straggler(small)
check_int("persistent_straggler(small)", small_rank, 1)
### BEGIN HIDDEN TESTS
half = np.array([[1.0, 3.0], [3.0, 1.0], [1.0, 3.0], [3.0, 1.0]])  # each rank last in 2 of 4
iid = synthetic_completion(60, 8, mean=0.1, rank_std=0.003, seed=13)
persistent_cases = [
    (EX1_COMPLETION, 3),
    (iid, -1),
    (half, -1),
    (synthetic_completion(50, 4, mean=0.1, rank_std=0.002, slow_ranks={0: 1.04}, seed=14), 0),
    (
        synthetic_completion(
            30, 6, mean=0.1, rank_std=0.002, slow_ranks={5: 1.05}, spikes=[(3, 2, 1.0)], seed=15
        ),
        5,
    ),
    # three equally slow ranks share the last place: none is last in more than half the steps
    (
        synthetic_completion(
            60, 8, mean=0.1, rank_std=0.002, slow_ranks={1: 1.05, 4: 1.05, 6: 1.05}, seed=16
        ),
        -1,
    ),
    # a mild straggler, last in about a third of the steps: not a majority
    (synthetic_completion(100, 8, mean=0.1, rank_std=0.002, slow_ranks={3: 1.02}, seed=17), -1),
]
with forbid(*no_delegation, exercise="Exercise 1b (hidden cases)"):
    ranks = [persistent_straggler(c) for c, _ in persistent_cases]
for k, ((c, expected), got) in enumerate(zip(persistent_cases, ranks, strict=True)):
    check_int(
        f"persistent_straggler(case {k})",
        got,
        expected,
        known_wrong={
            int(c.mean(axis=0).argmax()): "the rank with the largest mean time: one long delay "
            "raises a mean without making the rank persistent",
            int(c.argmax(axis=1)[0]): "the last rank of the first step only",
        }
        if expected != -1
        else {},
    )
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — From 64 ranks to 1024, assuming iid (1 point)
#
# At 64 ranks, `P64_SLOW_STEPS` = 3.1 % of the steps had at least one slow rank. Assuming iid
# ranks, what fraction of steps will have a slow rank at 1024 ranks? Set `iid_1024` to a float
# (a fraction, not a percentage), to four significant figures or better.

# %% nbgrader={"grade": false, "grade_id": "iid_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
p_one_rank = 1 - (1 - P64_SLOW_STEPS) ** (1 / 64)  # the per-rank rate behind 3.1 % at 64
iid_1024 = 1 - (1 - p_one_rank) ** 1024  # = 1 - (1 - P64)^(1024/64)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "iid_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: iid_1024, the fraction of slow steps at 1024 ranks from 3.1 % at 64 (a float)."""
check_range("iid_1024", iid_1024, 0.0, 1.0, what="a probability, as a fraction")
### BEGIN HIDDEN TESTS
check_float(
    "iid_1024",
    iid_1024,
    1 - (1 - P64_SLOW_STEPS) ** 16,
    rtol=1e-4,
    known_wrong={  # each at least 1 % away from the answer and from each other
        1 - (1 - P64_SLOW_STEPS / 64) ** 1024: "p = P64/64: the per-rank rate by division, "
        "not from (1 − p)^64 = 1 − P64",
        1 - (1 - P64_SLOW_STEPS) ** 64: "exponent 64: the exponent is the ratio of rank counts, "
        "1024/64 (or 3.1 % taken as the per-rank rate at 64 ranks)",
        P64_SLOW_STEPS: "no extrapolation",
        1 - (1 - P64_SLOW_STEPS) ** 1024: "3.1 % used as the per-rank rate at 1024 ranks",
        (1 - P64_SLOW_STEPS) ** 16: "the probability that no rank is slow",
        P64_SLOW_STEPS * 16: "linear scaling: probabilities do not add",
    },
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Slow steps with host-wide slowdowns (2 points)
#
# Write `slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host)`: the probability (a float)
# that a step has a slow rank under section 4's host model, with `num_ranks` a whole number of
# hosts of `ranks_per_host` ranks. The hidden tests include one rank per host and $p_h = 0$.


# %% nbgrader={"grade": false, "grade_id": "hosts_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host):
    """P(a step has a slow rank) with host-wide and per-rank slowdowns."""
    ### BEGIN SOLUTION
    num_hosts = num_ranks // ranks_per_host
    return 1.0 - (1.0 - p_host) ** num_hosts * (1.0 - p_rank) ** num_ranks
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "hosts_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host), a probability."""
import course_lib.straggler as course_straggler

routines = ("prob_slow_step", "prob_slow_step_hosts", "simulate_slow_steps")
no_delegation = [(course_straggler, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 3"):
    two_hosts = slow_step_hosts(0.001, 0.01, 16, 8)
check_float(
    "slow_step_hosts(0.001, 0.01, 16, 8)",
    two_hosts,
    1 - 0.99**2 * 0.999**16,
    known_wrong={  # each distinct from the answer and from each other at these inputs
        1 - 0.99**16 * 0.999**16: "one host draw per rank: the host's ranks are slow together",
        1 - 0.99**8 * 0.999**16: "g host draws: the exponent is the number of hosts, n/g",
        1 - 0.999**2 * 0.99**16: "p_rank and p_host swapped",
    },
)
### BEGIN HIDDEN TESTS
host_cases = [
    (1e-4, 4e-4, 4096, 8),
    (1e-4, 4e-4, 64, 8),
    (2e-3, 0.0, 1024, 8),
    (5e-4, 1e-3, 512, 1),
    (0.0, 2e-3, 2048, 16),
    (3e-4, 5e-3, 96, 4),
]
with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
    host_answers = [slow_step_hosts(*case) for case in host_cases]
for (pr, ph, n, g), got in zip(host_cases, host_answers, strict=True):
    expected = 1 - (1 - ph) ** (n // g) * (1 - pr) ** n
    wrong = [
        (1 - (1 - ph) ** n * (1 - pr) ** n, "n host draws: a host's ranks share one draw"),
        (1 - (1 - ph) ** g * (1 - pr) ** n, "g host draws: the exponent is the number of hosts"),
        (1 - (1 - ph) ** (n // g), "the ranks' own slowdowns are missing"),
        (1 - (1 - pr) ** n, "the host-wide slowdowns are missing"),
        (
            (1 - (1 - ph) ** (n // g)) + (1 - (1 - pr) ** n),
            "two probabilities added: combine P(no slow host) and P(no slow rank) by multiplying",
        ),
        ((n // g) * ph + n * pr, "the linear n·p approximation"),
        (1 - (1 - pr) ** (n // g) * (1 - ph) ** n, "p_rank and p_host swapped"),
    ]
    # a hint only where its value differs from the answer and from every other mistake's
    hints = {
        v: why
        for v, why in wrong
        if abs(v - expected) > 1e-9 and sum(abs(v - u) <= 1e-9 for u, _ in wrong) == 1
    }
    check_float(f"slow_step_hosts({pr}, {ph}, {n}, {g})", got, expected, known_wrong=hints)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The expected maximum from a CDF on a grid (3 points)
#
# Write `expected_max_grid(num_ranks, x, cdf_values)`: $E[\max]$ of `num_ranks` iid times from
# their CDF at increasing, not necessarily evenly spaced points `x` (`cdf_values[i]` $= F(x_i)$;
# $F = 0$ below `x[0]`, 1 above `x[-1]`), by section 3's integral and `np.trapezoid`. `x[0]` may
# be negative, zero or positive: if positive, $1 - F^n = 1$ on $[0, x_0]$ still counts. Hidden
# tests: normal, exponential and uniform CDFs, $n$ from 1 to 1024, at 0.1 % (the grid's error).
# Visible check: $n = 2$ on the N(0, 1) grid `GRID_X`, `GRID_F`, where $E[\max] = 1/\sqrt{\pi}$.


# %% nbgrader={"grade": false, "grade_id": "expected_max_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def expected_max_grid(num_ranks, x, cdf_values):
    """E[max of num_ranks iid] from the CDF on a grid, by the trapezoidal rule."""
    x = np.asarray(x, dtype=float)
    cdf = np.asarray(cdf_values, dtype=float)  # F at the points x
    ### BEGIN SOLUTION
    f_max = cdf**num_ranks  # the maximum's CDF
    # Below x[0], F = 0: 1 − F^n = 1 on [0, x[0]] if x[0] > 0, F^n = 0 on (−∞, x[0]) if x[0] < 0.
    # Either way both integrals together are x[0] + ∫ over the grid of (1 − F^n).
    return float(x[0] + np.trapezoid(1.0 - f_max, x))
    ### END SOLUTION


print(f"n = 2: {expected_max_grid(2, GRID_X, GRID_F):.4f}")

# %% nbgrader={"grade": true, "grade_id": "expected_max_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: expected_max_grid(num_ranks, x, cdf_values), E[max] by the integral (a float)."""
import course_lib.straggler as course_straggler

routines = ("expected_max", "expected_max_normal", "expected_max_monte_carlo")
no_delegation = [(course_straggler, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 4"):
    two = expected_max_grid(2, GRID_X, GRID_F)
check_float(
    "expected_max_grid(2, GRID_X, GRID_F)",
    two,
    1 / np.sqrt(np.pi),
    rtol=1e-3,
    known_wrong={
        float(np.trapezoid(1 - GRID_F[GRID_X >= 0] ** 2, GRID_X[GRID_X >= 0])): "only the x > 0 "
        "integral: the − ∫ F^n over x < 0 is left out",
        float(np.trapezoid((1 - GRID_F) ** 2, GRID_X) + GRID_X[0]): "1 − (1 − F)^n: the "
        "minimum's CDF",
    },
)
### BEGIN HIDDEN TESTS
exp_x = np.concatenate([[0.0], np.geomspace(1e-4, 60.0, 4000)])  # uneven spacing
exp_f = -np.expm1(-exp_x)
uni_x = np.linspace(2.0, 5.0, 2001)  # uniform on [2, 5]: E[max] = 2 + 3 n/(n + 1)
uni_f = (uni_x - 2.0) / 3.0
grid_cases = {  # (label, n, x, F) -> exact E[max]
    ("normal", 1): (GRID_X, GRID_F, 0.0),
    ("normal", 2): (GRID_X, GRID_F, 1 / np.sqrt(np.pi)),
    ("normal", 100): (GRID_X, GRID_F, 2.5075936),
    ("normal", 1024): (GRID_X, GRID_F, 3.2482396),
    ("exponential", 8): (exp_x, exp_f, sum(1 / k for k in range(1, 9))),
    ("exponential", 1): (exp_x, exp_f, 1.0),
    ("uniform on [2, 5]", 4): (uni_x, uni_f, 2 + 3 * 4 / 5),
    ("uniform on [2, 5]", 1): (uni_x, uni_f, 3.5),
}
with forbid(*no_delegation, exercise="Exercise 4 (hidden cases)"):
    grid_answers = {
        key: expected_max_grid(key[1], x_, f_) for key, (x_, f_, _) in grid_cases.items()
    }
for (label, n), (x_, f_, exact) in grid_cases.items():
    pos = x_ >= 0
    wrong = {
        float(np.trapezoid(1 - f_[pos] ** n, x_[pos])): "the x > 0 integral alone, from the grid's "
        "first point: where x[0] > 0, 1 − F^n = 1 on [0, x[0]] is left out; where x[0] < 0, "
        "the − ∫ F^n over x < 0 is",
        float(np.trapezoid((1 - f_) ** n, x_) + x_[0]): "1 − (1 − F)^n: the minimum's CDF",
        float(np.trapezoid(1 - f_, x_) + x_[0]): "F instead of F^n: one rank's mean",
    }
    if label == "exponential":  # the only unevenly spaced grid
        wrong[float(np.sum(1 - f_**n) * (x_[1] - x_[0]) + x_[0])] = (
            "an even spacing x[1] − x[0] assumed: the points are not evenly spaced"
        )
    got = grid_answers[(label, n)]
    # a hint only where the answer is that mistake's value (to 1e-6), not merely outside 0.1 %
    hints = {
        v: why
        for v, why in wrong.items()
        if isinstance(got, float) and abs(got - v) <= 1e-6 * abs(v) + 1e-9
    }
    check_float(
        f"expected_max_grid({n}, {label} grid)",
        got,
        exact,
        rtol=1e-3,
        atol=1e-4,
        known_wrong=hints,
    )
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which assumption does this run break? (1 point)
#
# `RUN_B` (setup cell) is a synthetic (400 steps × 64 ranks) completion matrix from 8 hosts of
# 8 ranks, ranks $8h$ to $8h + 7$ on host $h$. Before you extrapolate from it, check it with
# section 4's two tests, which the cell below prints. Set `run_b_violates` to one of
# - `"independence"`: the ranks' times are correlated (ranks of a host are slow together);
# - `"identical"`: the ranks are not identically distributed (a rank is persistently slow);
# - `"neither"`: the data are consistent with iid ranks.

# %% nbgrader={"grade": false, "grade_id": "violates_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
corr = np.corrcoef(RUN_B.T)  # (64, 64): corr[i, j], ranks i and j across the steps
host = np.arange(64) // 8
off_diagonal = ~np.eye(64, dtype=bool)
same_host = np.equal.outer(host, host) & off_diagonal  # pairs of distinct ranks on one host
other_host = ~np.equal.outer(host, host)  # pairs on different hosts
print(f"correlation, same host {corr[same_host].mean():.2f}, other {corr[other_host].mean():.2f}")
last_counts = np.bincount(RUN_B.argmax(axis=1), minlength=64)  # steps each rank was last
print(f"most steps any rank was last: {last_counts.max()} of 400")
### BEGIN SOLUTION
run_b_violates = "independence"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "violates_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: run_b_violates, "independence", "identical" or "neither"."""
stated = {
    "independence": "the ranks are correlated",
    "identical": "a rank is persistently slow",
    "neither": "consistent with iid ranks",
}
check_choice("run_b_violates", run_b_violates, run_b_violates, stated)
### BEGIN HIDDEN TESTS
check_choice(
    "run_b_violates",
    run_b_violates,
    "independence",
    {
        "independence": "the ranks of a host are correlated",
        "identical": "a persistent straggler — count how often each rank is last, and compare "
        "the ranks' means: no rank stands out",
        "neither": "iid — compare the correlation of two ranks on one host with two on "
        "different hosts",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: persistent or transient? (2 points, graded by hand)
#
# A 512-rank job's step time grew from 410 ms to 450 ms last week, and the profiler shows rank
# 77 arriving last in the steps you looked at. Describe an experiment, with the data you would
# collect and the result that would decide, that tells a persistent straggler (a property of
# rank 77's hardware or its shard) from transient ones (jitter that any rank can have). Two or
# three sentences.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_persistent_transient", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Record every rank's compute time
# (before the all-reduce) for a few hundred consecutive steps, not a few sampled ones. Under
# transient jitter each rank is last in about $1/512$ of the steps and the last rank changes
# from step to step, while a persistent straggler is last in a large share of them with a median
# (not only a mean) above the others'. Then restart with rank 77 on another host, or with its
# data shard swapped with another rank's: slowness that stays with the host or GPU is hardware,
# slowness that follows the shard is data, and slowness that vanishes was transient.
#
# Rubric: 1 point for per-rank data over many steps judged by how often a rank is last (or its
# median), not one step or a mean; 1 point for an intervention (swap host/GPU or shard) whose
# outcome separates hardware, data and transient causes.

# %% [markdown]
# ## Takeaways
#
# - A synchronous step ends at $\max_r c_{s,r}$; each rank waits $\max - c_{s,r}$.
# - A rare slowdown becomes a common slow step, $1 - (1 - p)^n$; the expected maximum grows with
#   $n$ (1.4236σ at 8 ranks, 3.2482σ at 1024).
# - Both extrapolations assume iid ranks: host-wide slowdowns make slow steps rarer than iid
#   predicts; a persistent straggler makes every step slow.
# - The trap: judging ranks by their mean. One long stall raises a mean; a persistent straggler
#   is last step after step. Check correlation and persistence before you extrapolate.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Dean and Barroso (2013) also give the remedies that accept stragglers rather than remove
#   them: hedged requests (send a second copy after the 95th-percentile latency) and tied
#   requests. Synchronous training has its own: backup workers: run $n + b$ workers and apply
#   the first $n$ gradients to arrive (Chen et al. 2016, "Revisiting Distributed Synchronous SGD").
# - For iid normal times, $E[\max]$ approaches $\sqrt{2 \ln n}$ from below very slowly (3.72 at
#   $n = 1024$ against 3.2482); extreme value theory (the Gumbel limit) gives the correction.
# - Heavy tails change the picture: for a Pareto tail with index $\alpha$ the expected maximum
#   grows like $n^{1/\alpha}$, a power of $n$, not a logarithm.
# - `expected_max_monte_carlo(n, sample, num_trials, seed)` in `course_lib.straggler` checks the
#   integral by simulation, for any rank-time distribution you can sample.
