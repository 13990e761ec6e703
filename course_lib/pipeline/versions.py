"""Weight versions in a pipeline: which version each (stage, microbatch) uses under a policy,
how many versions a stage holds, staleness, and gradient descent with a delayed gradient (pipe07).

Bookkeeping. :func:`weight_versions` takes a simulated :class:`~course_lib.pipeline.Timeline`
(or a Schedule, which it simulates) and replays, stage by stage, the order in which the actions
ran. A stage's weights have versions 0, 1, 2, ...: version v is the stage's weights after v
updates. An update happens right after the action that completes a microbatch's gradient on
that stage (its W if the schedule splits the backward, else its B), as the policy says:

- ``"flushed"`` (GPipe, Huang et al. 2019; 1F1B with a flush, PipeDream-Flush, Narayanan et al.
  2021, "Memory-Efficient Pipeline-Parallel DNN Training", ICML, §3.2): the schedule is one step;
  gradients accumulate over all its microbatches and each stage updates once, after its last
  one. Every action uses version 0: one version per step, the semantics of synchronous SGD on
  the whole batch, W(t+1) = W(t) - ν·∇f(W(t)).
- ``"stashing"`` (PipeDream, Narayanan et al. 2019, "PipeDream: Generalized Pipeline Parallelism
  for DNN Training", SOSP, §3.3, weight stashing): no flush; the schedule's microbatches are a
  stream and each is its own minibatch. A stage updates after every backward; a forward uses the
  stage's newest version and the backward of the same microbatch the version its forward used
  (stashed). Stage s of a 1F1B pipeline then holds p - s versions in steady state, and
  microbatch j sees version j - (p - 1 - s) on stage s: W(t+1) = W(t) - ν·∇f(W_0(t-p+1), ...,
  W_{p-1}(t)), a different delay on each stage (§3.3's equation, 0-indexed stages).
- ``"2bw"`` (PipeDream-2BW, Narayanan et al. 2021, §3.1, double-buffered weights): no flush;
  gradients accumulate over batches of ``microbatches_per_batch`` = m consecutive microbatches
  and a stage creates version b + 1 once its gradients of batches 0..b are all in. A batch is
  given a version when its first microbatch enters the pipeline (its first forward on stage 0):
  stage 0's newest version then; every stage runs the batch's forwards and backwards on that
  version. The paper defines 2BW for m >= p (the pipeline depth); then, under 1F1B with p >= 2, batch b uses
  version max(b - 1, 0) (§3.1: input k, 1-indexed, uses max(⌊(k - 1)/m⌋ - 1, 0)), every stage
  holds 2 versions, and W(t+1) = W(t) - ν·∇f(W(t-1)).

Nothing above is a formula of the schedule: versions come from counting the updates that ran
before each action on its stage. The closed forms (:func:`stashing_version`,
:func:`stashing_versions_held`, :func:`two_bw_version`) are what the tests check the replay
against for 1F1B.

Counts. A version is held on its stage from its creation until it is no longer needed: until the
next version is created (until then it is the stage's current weights) or until the last action
that uses it ends, whichever is later. ``held`` is the peak over the stage's actions of the
number of versions held while an action runs. ``staleness[s, j]`` is the number of updates the
stage made between the version microbatch j used there and the one current when its gradient
completes (the delay d of W(t+1) = W(t) - ν·∇f(W(t-d))); ``spread[j]`` the range over stages of
the versions microbatch j used (0 when the microbatch saw one consistent model).

Delayed gradients. :func:`delayed_gradient_descent` runs w(t+1) = w(t) - ν·A·w̃(t) on
f(w) = ½ wᵀAw, where coordinate i of w̃(t) is w_i(t - d_i) (w(t) = w(0) for t < 0): d = 0 is
gradient descent, d = 1 on every coordinate is 2BW's semantics, and per-coordinate delays model
PipeDream's per-stage ones. In the eigenbasis of A each coordinate follows the scalar recursion
x(t+1) = x(t) - q·x(t-d), q = ν·λ, solved in closed form by :func:`scalar_delayed_closed_form`
(roots of z^(d+1) - z^d + q); it converges iff 0 < q < 2·cos(dπ/(2d + 1)) (Levin and May 1976,
"A note on difference-delay equations", Theoretical Population Biology 9, 178-187):
:func:`max_stable_step`. The quadratic is synthetic (random eigenvectors, log-spaced
eigenvalues); a real model's loss is not quadratic, but near a minimum it behaves like one.

Argument checks shared by several routines are public (``check_*``): a grade cell that forbids one
routine disables the private helpers of this module it calls (course_lib.checks.forbid).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from course_lib.pipeline._validate import check_int
from course_lib.pipeline.schedule import KINDS, Action, Schedule
from course_lib.pipeline.simulate import Timeline, simulate

__all__ = [
    "POLICIES",
    "WeightVersions",
    "check_delay",
    "check_hessian",
    "check_policy",
    "check_step",
    "delayed_gradient_descent",
    "delayed_rate",
    "max_stable_step",
    "quadratic_loss",
    "random_quadratic",
    "scalar_delayed_closed_form",
    "stage_columns",
    "stage_order",
    "stashing_version",
    "stashing_versions_held",
    "two_bw_version",
    "weight_versions",
]

POLICIES: tuple[str, ...] = ("flushed", "stashing", "2bw")
"""Weight-version policies of :func:`weight_versions`: one update per step after a flush (GPipe,
PipeDream-Flush), an update after every backward with weight stashing (PipeDream), and
double-buffered updates once per batch of m >= p microbatches (PipeDream-2BW)."""


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class WeightVersions:
    """Which weight version each (stage, microbatch) used, derived from a timeline (pipe07).

    ``forward[s, j]`` and ``backward[s, j]`` are the versions F(s, j) and its backward (B, and W
    if split) ran on — equal under every policy here: each keeps a microbatch's forward and
    backward on one version. ``latest[s, j]`` is the stage's newest version when the action
    completing the microbatch's gradient ran, ``staleness = latest - forward``. ``held[s]`` is
    the peak number of versions stage s holds; ``held_per_action[s]`` the count while each of its
    actions runs, in the order of ``stage_order(timeline)[s]``. ``updates[s]`` counts the updates stage s made.
    """

    policy: str
    microbatches_per_batch: int | None
    forward: np.ndarray
    backward: np.ndarray
    latest: np.ndarray
    held: np.ndarray
    updates: np.ndarray
    held_per_action: tuple[np.ndarray, ...]

    @property
    def staleness(self) -> np.ndarray:
        """Updates between the version used and the newest when the gradient completes: latest - forward."""
        return self.latest - self.forward

    @property
    def spread(self) -> np.ndarray:
        """Per microbatch, the range over stages of the forward versions it used (0: one model)."""
        return self.forward.max(axis=0) - self.forward.min(axis=0)

    @property
    def synchronous(self) -> bool:
        """True if every gradient is fresh and consistent: staleness 0 and spread 0 everywhere,
        i.e. the same updates as synchronous SGD (pipe07)."""
        return bool((self.staleness == 0).all() and (self.spread == 0).all())


def check_policy(policy: object) -> str:
    """A policy name, one of :data:`POLICIES`."""
    if not isinstance(policy, str):
        raise TypeError(
            f"policy must be one of {POLICIES}, got {policy!r} ({type(policy).__name__})"
        )
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    return policy


def stage_columns(timeline: Timeline) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The actions of ``timeline`` stage by stage, in the order they ran -> (kind code, stage,
    microbatch, offsets): flat arrays, stage s in [offsets[s], offsets[s + 1]) (pipe07).

    Within a stage, actions are sorted by start time; ties keep the rank's program order (a stage
    lives on one rank, which runs its actions one at a time in list order). Kind codes index KINDS.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline, got {type(timeline).__name__}")
    events = timeline.events
    stage = events["stage"].to_numpy(dtype=np.int64)
    order = np.lexsort((events["start"].to_numpy(dtype=float), stage))
    letters = events["kind"].to_numpy()[order]
    kind = np.full(len(letters), -1, dtype=np.int64)
    for code, letter in enumerate(KINDS):
        kind[letters == letter] = code
    stage = stage[order]
    microbatch = events["microbatch"].to_numpy(dtype=np.int64)[order]
    offsets = np.searchsorted(stage, np.arange(timeline.schedule.num_stages + 1))
    return kind, stage, microbatch, offsets.astype(np.int64)


def stage_order(timeline: Timeline) -> tuple[tuple[Action, ...], ...]:
    """Per stage, its actions in the order they ran in ``timeline`` (see :func:`stage_columns`) (pipe07)."""
    kind, stage, microbatch, offsets = (c.tolist() for c in stage_columns(timeline))
    letters = [KINDS[k] for k in kind]
    return tuple(
        tuple(map(Action, letters[lo:hi], stage[lo:hi], microbatch[lo:hi]))
        for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)
    )


def weight_versions(
    timeline: Timeline | Schedule, policy: str, microbatches_per_batch: int | None = None
) -> WeightVersions:
    """Replay ``timeline`` stage by stage under ``policy`` -> the versions used, held, stale (pipe07).

    ``timeline`` is a simulated Timeline, or a Schedule (simulated with unit costs: only the
    order of each stage's actions matters). ``microbatches_per_batch`` (m) is required for
    ``"2bw"`` and refused by the other policies. Raises ValueError naming the argument for an
    unknown policy, 2BW with m < num_stages (the paper's m >= p) or with num_microbatches not a
    multiple of m; and naming the action if a microbatch's forward, backward (or W) is missing.
    """
    if isinstance(timeline, Schedule):
        timeline = simulate(timeline, 1.0, 1.0, 1.0)
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline or a Schedule, got {type(timeline).__name__}")
    policy = check_policy(policy)
    schedule = timeline.schedule
    p, num_mb = schedule.num_stages, schedule.num_microbatches
    if policy == "2bw":
        if microbatches_per_batch is None:
            raise ValueError(
                "microbatches_per_batch is required for policy '2bw' (the m microbatches whose "
                "gradients make one update)"
            )
        m = check_int("microbatches_per_batch", microbatches_per_batch)
        if m < p:
            raise ValueError(
                f"microbatches_per_batch={m} is below num_stages={p}: PipeDream-2BW is defined "
                f"for m >= p (Narayanan et al. 2021, §3.1), so that two versions suffice"
            )
        if num_mb % m:
            raise ValueError(
                f"microbatches_per_batch={m} must divide num_microbatches={num_mb} "
                "(the stream is whole batches)"
            )
    elif microbatches_per_batch is not None:
        raise ValueError(
            f"microbatches_per_batch applies to policy '2bw' only, got "
            f"microbatches_per_batch={microbatches_per_batch!r} with policy {policy!r}"
        )
    else:
        m = None

    release_kind = "W" if schedule.has_weight_actions else "B"
    # Flat columns over all stages in stage order; position = index within the stage's order.
    kind, stage, micro, offsets = stage_columns(timeline)
    counts = np.diff(offsets)
    total = len(kind)
    position = np.arange(total, dtype=np.int64) - offsets[stage]

    def position_of(code: int, what: str) -> np.ndarray:
        where = np.full((p, num_mb), -1, dtype=np.int64)
        mask = kind == code
        where[stage[mask], micro[mask]] = position[mask]
        if (where < 0).any():
            s, j = (int(x[0]) for x in np.nonzero(where < 0))
            raise ValueError(
                f"{Action(KINDS[code], s, j)} is not in the timeline: every microbatch needs its "
                f"{what} on every stage for its weight versions"
            )
        return where

    f_pos = position_of(KINDS.index("F"), "forward")
    position_of(KINDS.index("B"), "backward")
    r_pos = position_of(
        KINDS.index(release_kind), "weight gradient" if release_kind == "W" else "backward"
    )

    # creation[s, v - 1]: position after which stage s creates version v (sorted per stage).
    if policy == "flushed":
        creation = r_pos.max(axis=1, keepdims=True)  # one update, after the stage's last gradient
    elif policy == "stashing":
        creation = np.sort(r_pos, axis=1)  # an update after every completed gradient
    else:
        batch_done = r_pos.reshape(p, num_mb // m, m).max(axis=2)
        creation = np.maximum.accumulate(batch_done, axis=1)  # batch b waits for batch b - 1

    # One sorted array of all stages' creation positions, stage s shifted by s·span.
    span = int(counts.max()) + 2 if p else 1
    keyed = (creation + 1 + span * np.arange(p)[:, None]).ravel()

    def created_before(s: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Versions stage s has created before the action at position pos: its newest version."""
        found = np.searchsorted(keyed, pos + 1 + span * s, side="left")
        return found - creation.shape[1] * s

    stages_grid = np.broadcast_to(np.arange(p)[:, None], (p, num_mb))
    if policy == "2bw":
        entry = f_pos[0].reshape(num_mb // m, m).min(axis=1)  # first forward of each batch, stage 0
        batch_version = created_before(np.zeros_like(entry), entry)
        forward = np.broadcast_to(np.repeat(batch_version, m)[None, :], (p, num_mb)).copy()
        # Stage s always has that version in time: the batches stage 0 had finished when the
        # batch entered were finished on every later stage first (B(s, j) precedes B(0, j)), and
        # F(s, j) starts after F(0, j). So no forward waits for a version (the tests check it).
    else:
        forward = created_before(stages_grid, f_pos)
    latest = created_before(stages_grid, r_pos)

    # Versions held: v lives on its stage from its creation until max(next creation, last use).
    num_versions = creation.shape[1] + 1
    born = np.concatenate([np.full((p, 1), -1), creation], axis=1)
    next_born = np.concatenate([creation, np.full((p, 1), np.iinfo(np.int64).max // 2)], axis=1)
    last_use = np.full((p, num_versions), -1, dtype=np.int64)
    used = forward[stage, micro]  # every action of (s, j) runs on the forward's version
    np.maximum.at(last_use, (stage, used), position)
    end = np.minimum(np.maximum(next_born, last_use), counts[:, None] - 1)
    diff = np.zeros(total + p, dtype=np.int64)  # one spare slot per stage for "past the end"
    base = (offsets[:-1] + np.arange(p))[:, None]
    np.add.at(diff, (base + born + 1).ravel(), 1)
    np.add.at(diff, (base + end + 1).ravel(), -1)
    alive = np.cumsum(diff)
    held_per_action = tuple(
        _frozen(alive[offsets[s] + s : offsets[s + 1] + s].copy()) for s in range(p)
    )
    held = np.array([int(h.max()) if len(h) else 0 for h in held_per_action], dtype=np.int64)
    return WeightVersions(
        policy=policy,
        microbatches_per_batch=m,
        forward=_frozen(forward),
        backward=_frozen(forward.copy()),
        latest=_frozen(latest),
        held=_frozen(held),
        updates=_frozen(np.full(p, creation.shape[1], dtype=np.int64)),
        held_per_action=held_per_action,
    )


# --------------------------------------------------------------------------------------------
# closed forms for 1F1B (checked against the replay in the tests)


def stashing_version(stage: int, microbatch: int, num_stages: int, num_microbatches: int) -> int:
    """PipeDream's version of microbatch j on stage s of 1F1B: max(0, j - w), w = min(m, p - s - 1) (pipe07).

    F(s, j) runs after j - w backwards of its stage (w warm-up forwards first), so it sees the
    weights after j - w updates: j - (p - 1 - s) in steady state (PipeDream 2019, §3.3).
    """
    p = check_int("num_stages", num_stages)
    m = check_int("num_microbatches", num_microbatches)
    s = check_int("stage", stage, minimum=0)
    j = check_int("microbatch", microbatch, minimum=0)
    if s >= p or j >= m:
        raise ValueError(f"stage={s}, microbatch={j} outside num_stages={p}, num_microbatches={m}")
    return max(0, j - min(m, p - s - 1))


def stashing_versions_held(num_stages: int) -> np.ndarray:
    """Versions held per stage by PipeDream's weight stashing in 1F1B's steady state: p - s (pipe07).

    The p - s microbatches in flight on stage s each entered after one more update than the
    previous, so each holds its own version (the newest among them); valid when the stream has
    at least 2(p - s) - 1 microbatches (a steady-state forward at stage s)."""
    p = check_int("num_stages", num_stages)
    return p - np.arange(p, dtype=np.int64)


def two_bw_version(microbatch: int, microbatches_per_batch: int) -> int:
    """PipeDream-2BW's version for microbatch j (0-indexed): max(⌊j/m⌋ - 1, 0) (Narayanan et al. 2021, §3.1) (pipe07).

    For a pipeline of p >= 2 stages running 1F1B with m >= p: batch ⌊j/m⌋ enters before the
    previous batch's update. (With p = 1 nothing overlaps and batch b runs on version b.)"""
    j = check_int("microbatch", microbatch, minimum=0)
    m = check_int("microbatches_per_batch", microbatches_per_batch)
    return max(j // m - 1, 0)


# --------------------------------------------------------------------------------------------
# gradient descent with a delayed gradient on a quadratic


def check_hessian(hessian: object) -> np.ndarray:
    """A symmetric positive definite (n, n) float array (the Hessian A of f(w) = ½ wᵀAw)."""
    a = np.asarray(hessian, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"hessian must be a square (n, n) array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("hessian must be finite")
    if not np.allclose(a, a.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(a).max()))):
        raise ValueError("hessian must be symmetric")
    if np.linalg.eigvalsh(a).min() <= 0:
        raise ValueError("hessian must be positive definite (every eigenvalue > 0)")
    return a


def check_delay(delay: object, dim: int) -> np.ndarray:
    """A delay: an int >= 0 (every coordinate) or ``dim`` ints >= 0 (one per coordinate) -> int array."""
    if isinstance(delay, Sequence | np.ndarray) and not isinstance(delay, str | bytes):
        items = list(np.asarray(delay).ravel()) if isinstance(delay, np.ndarray) else list(delay)
        if len(items) != dim:
            raise ValueError(
                f"delay has {len(items)} entries but the problem has {dim} coordinates"
            )
        return np.array(
            [check_int(f"delay[{i}]", d, minimum=0) for i, d in enumerate(items)], dtype=np.int64
        )
    return np.full(dim, check_int("delay", delay, minimum=0), dtype=np.int64)


def check_step(name: str, value: object) -> float:
    """A finite real number > 0 (a step size)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number > 0, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def random_quadratic(dim: int, condition_number: float, seed: int) -> np.ndarray:
    """A seeded SPD Hessian Q·diag(λ)·Qᵀ, λ log-spaced from 1 to ``condition_number`` (synthetic) (pipe07)."""
    n = check_int("dim", dim)
    kappa = check_step("condition_number", condition_number)
    if kappa < 1:
        raise ValueError(f"condition_number must be >= 1, got {kappa}")
    seed = check_int("seed", seed, minimum=0)
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    q *= np.sign(np.diag(r))  # a Haar-distributed orthogonal matrix
    eigenvalues = np.geomspace(1.0, kappa, n)
    a = (q * eigenvalues) @ q.T
    return (a + a.T) / 2


def quadratic_loss(hessian: object, iterates: object) -> np.ndarray | float:
    """f(w) = ½ wᵀAw for one w (float) or each row of an (T, n) array of iterates (pipe07)."""
    a = check_hessian(hessian)
    w = np.asarray(iterates, dtype=float)
    if w.shape[-1:] != a.shape[:1] or w.ndim > 2:
        raise ValueError(
            f"iterates must have shape ({a.shape[0]},) or (T, {a.shape[0]}), got {w.shape}"
        )
    loss = 0.5 * np.einsum("...i,ij,...j->...", w, a, w)
    return float(loss) if w.ndim == 1 else loss


def delayed_gradient_descent(
    hessian: object, w0: object, step_size: float, delay: int | Sequence[int], num_steps: int
) -> np.ndarray:
    """Iterates of w(t+1) = w(t) - ν·A·w̃(t), w̃_i(t) = w_i(t - d_i), w(t < 0) = w(0) (pipe07).

    On f(w) = ½ wᵀAw the gradient is A·w; ``delay`` d = 0 is gradient descent, d = 1 2BW's
    W(t+1) = W(t) - ν·∇f(W(t-1)), and per-coordinate delays evaluate the gradient at a point
    mixing versions, as PipeDream's stages do. Returns the (num_steps + 1, n) iterates w(0)..w(T).
    At a small step a delay costs almost nothing (rate 1 - q - q² + ... for d = 1 against 1 - q);
    what it costs is the stable range of steps (:func:`max_stable_step`: ν·λ_max < 1, not 2).
    """
    a = check_hessian(hessian)
    n = a.shape[0]
    w = np.asarray(w0, dtype=float)
    if w.shape != (n,) or not np.isfinite(w).all():
        raise ValueError(f"w0 must be a finite vector of shape ({n},), got shape {w.shape}")
    nu = check_step("step_size", step_size)
    d = check_delay(delay, n)
    steps = check_int("num_steps", num_steps, minimum=0)
    iterates = np.empty((steps + 1, n))
    iterates[0] = w
    columns = np.arange(n)
    for t in range(steps):
        delayed = iterates[np.maximum(t - d, 0), columns]
        iterates[t + 1] = iterates[t] - nu * (a @ delayed)
    return iterates


def delayed_rate(step: float, delay: int) -> float:
    """Asymptotic rate of x(t+1) = x(t) - q·x(t-d): the largest |root| of z^(d+1) - z^d + q (pipe07).

    Below 1 the error shrinks by about this factor per step; at or above 1 it does not converge.
    ``step`` is q = ν·λ for an eigenvalue λ of the Hessian.
    """
    q = check_step("step", step)
    d = check_int("delay", delay, minimum=0)
    coefficients = np.zeros(d + 2)
    coefficients[0], coefficients[1], coefficients[-1] = 1.0, -1.0, q
    if d == 0:
        coefficients = np.array([1.0, q - 1.0])
    return float(np.abs(np.roots(coefficients)).max())


def max_stable_step(delay: int) -> float:
    """Largest q = ν·λ for which x(t+1) = x(t) - q·x(t-d) converges: 2·cos(dπ/(2d + 1)) (pipe07).

    Levin and May 1976, "A note on difference-delay equations" (Theor. Popul. Biol. 9): 2 for
    d = 0 (gradient descent's ν < 2/λ), 1 for d = 1 (2BW), and about π/(2d + 1) for large d
    (2·cos(dπ/(2d + 1)) = 2·sin(π/(4d + 2))).
    """
    d = check_int("delay", delay, minimum=0)
    return 2.0 * math.cos(d * math.pi / (2 * d + 1))


def scalar_delayed_closed_form(step: float, delay: int, w0: float, num_steps: int) -> np.ndarray:
    """x(0..T) of x(t+1) = x(t) - q·x(t-d), x(t <= 0) = w0, in closed form Σ_i c_i z_i^(t+d) (pipe07).

    z_i are the roots of z^(d+1) - z^d + q and the c_i solve the d + 1 initial values x(-d..0) =
    w0 (a Vandermonde system). The only repeated root possible is z* = d/(d + 1), double, at
    q* = d^d/(d + 1)^(d + 1) (where the polynomial and its derivative both vanish); there the
    basis has t·z*^t too. ``step`` is q = ν·a for f(w) = ½ a w².
    """
    q = check_step("step", step)
    d = check_int("delay", delay, minimum=0)
    if isinstance(w0, bool | np.bool_) or not isinstance(w0, Real) or not math.isfinite(w0):
        raise TypeError(f"w0 must be a finite number, got {w0!r}")
    steps = check_int("num_steps", num_steps, minimum=0)
    k = np.arange(d, d + steps + 1)  # x(t) = y(t + d), y(0..d) the initial values
    if d == 0:
        return float(w0) * (1.0 - q) ** np.arange(steps + 1, dtype=float)
    polynomial = np.zeros(d + 2)
    polynomial[0], polynomial[1], polynomial[-1] = 1.0, -1.0, q
    z_star = d / (d + 1)
    q_star = z_star**d * (1 - z_star)
    initial = np.arange(d + 1, dtype=float)[:, None]
    if abs(q - q_star) <= 1e-12 * q_star:  # double root z*: basis z*^k, k·z*^(k-1), others^k
        others, _ = np.polydiv(polynomial, np.poly([z_star, z_star]))
        roots = np.concatenate([[z_star], np.roots(others)]).astype(complex)
        derivative = initial * z_star ** np.maximum(initial - 1, 0)
        basis = np.concatenate([roots[None, :] ** initial, derivative], axis=1)
        coefficients = np.linalg.solve(basis, np.full(d + 1, float(w0), dtype=complex))
        values = (coefficients[:-1] * roots[None, :] ** k[:, None]).sum(axis=1)
        values = values + coefficients[-1] * k * z_star ** (k - 1.0)
    else:
        roots = np.roots(polynomial).astype(complex)
        coefficients = np.linalg.solve(
            roots[None, :] ** initial, np.full(d + 1, float(w0), dtype=complex)
        )
        values = (coefficients * roots[None, :] ** k[:, None]).sum(axis=1)
    return values.real
