"""Clock offsets as intervals, linear drift fits and ordering certainty across clock domains (cost02).

Every host and every device keeps its own clock. The convention throughout is

    t_A = t_B + θ        (θ = offset of clock A relative to clock B, in seconds)

so an instant that clock B reads as ``t`` is read by clock A as ``t + θ``.

Message causality bounds θ without any assumption about how long a message takes, only that it
takes a positive time. dPRO (H. Hu, C. Jiang, Y. Zhong, Y. Peng, C. Wu, Y. Zhu, H. Lin, C. Guo,
"dPRO: A Generic Performance Diagnosis and Optimization Toolkit for Expediting Distributed DNN
Training", MLSys 2022, arXiv:2205.02473) aligns BytePS traces with the same constraint, that a
message is received after it is sent, but then solves for ONE time shift per machine (the shifts
of least squared sum that satisfy every constraint, a quadratic program: ``optimize_time_shift``
in dPRO's ``bps_helper/graph.py``); by default it aligns NCCL traces on a synchronization op
instead. This module keeps the whole interval of admissible offsets:

* a message A -> B sent at ``S_A`` (A's clock) and received at ``R_B`` (B's clock) arrives after
  it left: ``R_B > S_A - θ``, hence ``θ > S_A - R_B``;
* a message B -> A sent at ``S_B`` and received at ``R_A`` gives ``R_A > S_B + θ``, hence
  ``θ < R_A - S_B``.

With messages both ways the offset lies in the interval ``(max(S_A - R_B), min(R_A - S_B))``; for
a constant offset its width is the sum of the two smallest one-way delays, the fastest message
A -> B plus the fastest B -> A (not necessarily one round trip), so more messages can only
tighten it. The midpoint is the NTP-style estimate, exact only when the two one-way delays are
equal — an assumption that cannot be tested from the timestamps alone.

Comparing two events in different clock domains then has three possible answers: the order is
*certain* (true for every θ in the interval), *impossible* (false for every θ) or *undetermined*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Certainty",
    "DifferenceInterval",
    "DriftFit",
    "OffsetInterval",
    "fit_drift",
    "interval_difference",
    "offset_bounds",
    "order_certainty",
    "simulate_messages",
]

Certainty = Literal["certain", "impossible", "undetermined"]


def _check_bound(name: str, value: float) -> float:
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v


@dataclass(frozen=True)
class OffsetInterval:
    """Offsets θ (t_A = t_B + θ) consistent with message causality: lower < θ < upper (cost02).

    The interval is open: strictly positive message delays give strict inequalities. ``lower`` may
    be ``-inf`` (no message A -> B) and ``upper`` may be ``+inf`` (no message B -> A).
    ``lower == upper`` describes an exactly known offset (a point), e.g. clocks known to agree.
    """

    lower: float
    upper: float

    def __post_init__(self) -> None:
        lo = _check_bound("lower", self.lower)
        hi = _check_bound("upper", self.upper)
        if lo > hi:
            raise ValueError(f"empty offset interval: lower {lo} > upper {hi}")
        if lo == math.inf or hi == -math.inf:
            raise ValueError(f"offset interval ({lo}, {hi}) contains no finite offset")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def width(self) -> float:
        """Width upper - lower of the offset interval in seconds (inf if one side is unbounded) (cost02)."""
        return self.upper - self.lower

    @property
    def midpoint(self) -> float:
        """Midpoint (lower + upper) / 2: the estimate that assumes equal one-way delays (cost02)."""
        if math.isinf(self.width):
            raise ValueError(
                f"offset interval ({self.lower}, {self.upper}) is unbounded: it has no midpoint; "
                "messages in both directions are needed"
            )
        return 0.5 * (self.lower + self.upper)

    def contains(self, theta: ArrayLike) -> bool | NDArray[np.bool_]:
        """Whether θ is consistent with the messages: lower < θ < upper (or θ == the point) (cost02)."""
        t = np.asarray(theta, dtype=float)
        if self.lower == self.upper:
            out = t == self.lower
        else:
            out = (t > self.lower) & (t < self.upper)
        return bool(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class DifferenceInterval:
    """Bounds on a true elapsed time t(a) - t(b) between events on two clocks: lower < diff < upper (cost02)."""

    lower: float | NDArray[np.float64]
    upper: float | NDArray[np.float64]

    @property
    def width(self) -> float | NDArray[np.float64]:
        """Width upper - lower: the offset interval's width, whatever the two timestamps (cost02)."""
        return self.upper - self.lower

    @property
    def midpoint(self) -> float | NDArray[np.float64]:
        """Midpoint (lower + upper) / 2 of the elapsed-time bounds (cost02)."""
        return 0.5 * (self.lower + self.upper)


def _pairs(x: ArrayLike, name: str, columns: str) -> NDArray[np.float64]:
    """``x`` as an (N, 2) float array of timestamp pairs, or a ValueError naming the problem."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return np.empty((0, 2))
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"{name} must have shape (N, 2) with columns ({columns}), got {a.shape}")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] = {a[i].tolist()} is not finite")
    return a


def offset_bounds(a_to_b: ArrayLike, b_to_a: ArrayLike) -> OffsetInterval:
    """Offset interval max(S_A - R_B) < θ < min(R_A - S_B) from matched send/receive pairs (cost02).

    ``a_to_b`` has rows (send time on A's clock, receive time on B's clock); ``b_to_a`` has rows
    (send time on B's clock, receive time on A's clock). Either may be empty (that side of the
    interval is then unbounded), not both. Raises ValueError naming the two messages whose
    constraints conflict when max(S_A - R_B) > min(R_A - S_B): a mismatched pair, swapped
    columns, or a clock convention other than t_A = t_B + θ.
    """
    ab = _pairs(a_to_b, "a_to_b", "send on A, receive on B")
    ba = _pairs(b_to_a, "b_to_a", "send on B, receive on A")
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("need at least one message (a_to_b and b_to_a are both empty)")
    lower, upper, i, j = -math.inf, math.inf, -1, -1
    if len(ab):
        lows = ab[:, 0] - ab[:, 1]
        i = int(np.argmax(lows))
        lower = float(lows[i])
    if len(ba):
        highs = ba[:, 1] - ba[:, 0]
        j = int(np.argmin(highs))
        upper = float(highs[j])
    if lower > upper:
        raise ValueError(
            "inconsistent messages: "
            f"a_to_b[{i}] (sent {ab[i, 0]} on A, received {ab[i, 1]} on B) requires "
            f"θ > {lower}, but b_to_a[{j}] (sent {ba[j, 0]} on B, received {ba[j, 1]} on A) "
            f"requires θ < {upper}. Check that send/receive pairs are matched, the columns are "
            "(send, receive), and the convention t_A = t_B + θ"
        )
    return OffsetInterval(lower, upper)


def interval_difference(
    t_a: ArrayLike, t_b: ArrayLike, interval: OffsetInterval
) -> DifferenceInterval:
    """True elapsed time from event b to event a: (t_a - θ) - t_b lies in (t_a - t_b - upper, t_a - t_b - lower) (cost02).

    ``t_a`` is read on A's clock, ``t_b`` on B's clock; both broadcast (numpy). Subtracting the raw
    timestamps, t_a - t_b, silently assumes θ = 0.
    """
    if not isinstance(interval, OffsetInterval):
        raise TypeError(f"interval must be an OffsetInterval, got {type(interval).__name__}")
    a = np.asarray(t_a, dtype=float)
    b = np.asarray(t_b, dtype=float)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("timestamps t_a and t_b must be finite")
    d = a - b
    lo, hi = d - interval.upper, d - interval.lower
    if np.ndim(d) == 0:
        return DifferenceInterval(float(lo), float(hi))
    return DifferenceInterval(lo, hi)


def order_certainty(
    t_a: ArrayLike, t_b: ArrayLike, interval: OffsetInterval
) -> Certainty | NDArray[np.str_]:
    """Is "event a (A's clock) happened before event b (B's clock)" certain, impossible or undetermined (cost02)?

    a precedes b iff t_a - θ < t_b, i.e. iff θ > d with d = t_a - t_b. Over the open interval
    lower < θ < upper: certain iff d <= lower, impossible iff d >= upper, undetermined otherwise.
    For a point interval (lower == upper == θ) the answer is certain iff d < θ (simultaneous
    events are not "before"). Vectorized: arrays give an array of labels.
    """
    if not isinstance(interval, OffsetInterval):
        raise TypeError(f"interval must be an OffsetInterval, got {type(interval).__name__}")
    a = np.asarray(t_a, dtype=float)
    b = np.asarray(t_b, dtype=float)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("timestamps t_a and t_b must be finite")
    d = a - b
    lo, hi = interval.lower, interval.upper
    certain = (d < lo) | ((d == lo) & (lo < hi))
    impossible = d >= hi
    out = np.where(certain, "certain", np.where(impossible, "impossible", "undetermined"))
    if out.ndim == 0:
        return str(out)  # type: ignore[return-value]
    return out


@dataclass(frozen=True)
class DriftFit:
    """Linear clock model local = offset + (1 + drift_ppm·1e-6)·reference, fitted by least squares (cost02).

    ``offset`` (s) is the local reading at reference time 0, ``drift_ppm`` how many microseconds
    per second the local clock gains on the reference, ``residual`` the root-mean-square misfit
    (s) of the sync points — jitter that no linear model removes.
    """

    offset: float
    drift_ppm: float
    residual: float

    @property
    def rate(self) -> float:
        """Local seconds per reference second: 1 + drift_ppm·1e-6 (cost02)."""
        return 1.0 + self.drift_ppm * 1e-6

    def to_reference(self, t: ArrayLike) -> float | NDArray[np.float64]:
        """Map local timestamps to the reference clock: (t - offset) / (1 + drift_ppm·1e-6) (cost02)."""
        out = (np.asarray(t, dtype=float) - self.offset) / self.rate
        return float(out) if out.ndim == 0 else out

    def to_local(self, t: ArrayLike) -> float | NDArray[np.float64]:
        """Map reference timestamps to the local clock: offset + (1 + drift_ppm·1e-6)·t (cost02)."""
        out = self.offset + self.rate * np.asarray(t, dtype=float)
        return float(out) if out.ndim == 0 else out


def fit_drift(local_times: ArrayLike, reference_times: ArrayLike) -> DriftFit:
    """Least-squares fit of local = offset + (1 + drift_ppm·1e-6)·reference from sync points (cost02).

    ``local_times[i]`` and ``reference_times[i]`` are the two clocks' readings of the same instant
    (e.g. at a barrier or sync message). Needs at least two points with distinct reference times.
    The fit is done on centred data so that epoch-sized timestamps keep their precision.
    ``offset`` is the local reading at reference time 0: with epoch-scale timestamps that is an
    extrapolation far outside the data (a 0.01 ppm error in the drift moves it by 17 s at
    1.7e9 s), so subtract a common origin first if the offset itself matters;
    :meth:`DriftFit.to_reference` is accurate within the fitted range either way.
    """
    loc = np.asarray(local_times, dtype=float)
    ref = np.asarray(reference_times, dtype=float)
    if loc.ndim != 1 or ref.ndim != 1 or loc.shape != ref.shape:
        raise ValueError(
            f"local_times and reference_times must be 1-D of equal length, got {loc.shape} "
            f"and {ref.shape}"
        )
    if len(loc) < 2:
        raise ValueError(f"need at least 2 sync points to fit offset and drift, got {len(loc)}")
    for name, arr in (("local_times", loc), ("reference_times", ref)):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{i}] = {arr[i]} is not finite")
    ref_mean, loc_mean = ref.mean(), loc.mean()
    dr, dl = ref - ref_mean, loc - loc_mean
    sxx = float(dr @ dr)
    if sxx == 0.0:
        raise ValueError("reference_times are all equal: drift is not identifiable")
    slope = float(dr @ dl) / sxx
    offset = float(loc_mean - slope * ref_mean)
    resid = dl - slope * dr
    rms = float(np.sqrt(np.mean(resid**2)))
    return DriftFit(offset=offset, drift_ppm=(slope - 1.0) * 1e6, residual=rms)


def simulate_messages(
    num_messages: int,
    *,
    offset: float,
    drift_ppm: float = 0.0,
    min_delay: float = 5e-6,
    mean_extra_delay: float = 20e-6,
    span: float = 1.0,
    start: float = 0.0,
    seed: int = 0,
    mean_extra_delay_ba: float | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Message pairs between clocks t_A = offset + (1 + drift_ppm·1e-6)·t_B, delays min_delay + Exp(mean_extra_delay) (cost02).

    Clock B is the reference (it reads true time). ``num_messages`` messages go each way, sent at
    true times drawn uniformly from [start, start + span] s and sorted; each one-way delay is
    ``min_delay`` plus an exponential extra with mean ``mean_extra_delay`` (s), or, for the
    B -> A messages, ``mean_extra_delay_ba`` if given (asymmetric paths: the midpoint of the
    interval is then biased, the interval itself is not). Returns
    ``(a_to_b, b_to_a)``, (N, 2) arrays with rows (S_A, R_B) and (S_B, R_A): the input of
    :func:`offset_bounds`. The offset at true time t is offset + drift_ppm·1e-6·t. Same seed, same
    messages; with the same seed, a larger ``num_messages`` keeps every message of a smaller one.
    """
    if isinstance(num_messages, bool) or not isinstance(num_messages, (int, np.integer)):
        raise ValueError(f"num_messages must be an integer >= 1, got {num_messages!r}")
    if num_messages < 1:
        raise ValueError(f"num_messages must be an integer >= 1, got {num_messages!r}")
    for name, value, positive in (
        ("offset", offset, False),
        ("drift_ppm", drift_ppm, False),
        ("min_delay", min_delay, True),
        ("mean_extra_delay", mean_extra_delay, False),
        (
            "mean_extra_delay_ba",
            mean_extra_delay if mean_extra_delay_ba is None else mean_extra_delay_ba,
            False,
        ),
        ("span", span, False),
        ("start", start, False),
    ):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {value!r}")
        if positive and v <= 0:
            raise ValueError(f"{name} must be > 0 seconds (messages take time), got {value!r}")
        if name in ("mean_extra_delay", "mean_extra_delay_ba", "span") and v < 0:
            raise ValueError(f"{name} must be >= 0 seconds, got {value!r}")
    # One independent stream per direction and quantity: message i is the same whatever
    # num_messages is, so a larger exchange contains every message of a smaller one.
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    rate = 1.0 + float(drift_ppm) * 1e-6
    n = int(num_messages)
    extra = (
        float(mean_extra_delay),
        float(mean_extra_delay if mean_extra_delay_ba is None else mean_extra_delay_ba),
    )
    out = []
    for direction in (0, 1):
        send = float(start) + float(span) * streams[2 * direction].random(n)
        delay = float(min_delay) + extra[direction] * streams[2 * direction + 1].exponential(1.0, n)
        order = np.argsort(send, kind="stable")
        send, delay = send[order], delay[order]
        if direction == 0:  # A -> B: (S_A, R_B)
            out.append(np.column_stack([offset + rate * send, send + delay]))
        else:  # B -> A: (S_B, R_A)
            out.append(np.column_stack([send, offset + rate * (send + delay)]))
    return out[0], out[1]
