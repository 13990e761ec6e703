"""Plausible wrong answers to cost02_clock_correlation, each of which must lose points.

Every mistake listed per exercise in the lesson's review (clamping negatives to 0, the wrong clock,
µs vs s, the neighbouring quantity, the naive join the lesson warns about, delegating to
course_lib) is one mutant here. ``RIGHT_ANSWERS`` lists right answers written differently from the
reference solution; they must keep full marks. A few right answers are right for one part only
(right bounds without the error checks, the right drift with a wrong event): they must keep that
part's marks, which shows that one part's mistake never zeroes another.
"""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: queue delays ------------------------------------------------------------------

_RIGHT_JOIN = '''
def queue_delays(df):
    """The reference join, with the final expression replaced by MUTATION."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    end = pd.Series((launches["ts"] + launches["dur"]).to_numpy(),
                    index=launches["correlation"].to_numpy())
    start = pd.Series(launches["ts"].to_numpy(), index=launches["correlation"].to_numpy())
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    ts = gpu["ts"].to_numpy()
    launch_end = end.loc[gpu["correlation"].to_numpy()].to_numpy()
    launch_start = start.loc[gpu["correlation"].to_numpy()].to_numpy()
    return MUTATION
'''


def _queue(expression: str) -> str:
    return _RIGHT_JOIN.replace("MUTATION", expression)


_NEAREST_IN_TIME = '''
def queue_delays(df):
    """Pairs each GPU event with the runtime call that ended last before it started."""
    calls = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    ends = np.sort((calls["ts"] + calls["dur"]).to_numpy())
    starts = df.loc[df["cat"].isin(GPU_CATEGORIES), "ts"].to_numpy()
    return starts - ends[np.searchsorted(ends, starts, side="right") - 1]
'''

_SORTED_BY_START = '''
def queue_delays(df):
    """Right values, but in kernel-start order instead of df's row order."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    end = pd.Series((launches["ts"] + launches["dur"]).to_numpy(),
                    index=launches["correlation"].to_numpy())
    gpu = df[df["cat"].isin(GPU_CATEGORIES)].sort_values("ts")
    return gpu["ts"].to_numpy() - end.loc[gpu["correlation"].to_numpy()].to_numpy()
'''

_KERNELS_ONLY = '''
def queue_delays(df):
    """Right join, but only rows with cat == "kernel": memcpys and memsets are GPU events too."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    end = pd.Series((launches["ts"] + launches["dur"]).to_numpy(),
                    index=launches["correlation"].to_numpy())
    gpu = df[df["cat"] == "kernel"]
    return gpu["ts"].to_numpy() - end.loc[gpu["correlation"].to_numpy()].to_numpy()
'''

_BY_EXTERNAL_ID = '''
def queue_delays(df):
    """Joins on the op's "External id" instead of the correlation id: an op that launches two
    kernels matches both launches."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["external_id"].notna()]
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    side = pd.DataFrame({"external_id": launches["external_id"].to_numpy(),
                         "end": (launches["ts"] + launches["dur"]).to_numpy()})
    joined = pd.DataFrame({"external_id": gpu["external_id"].to_numpy(),
                           "ts": gpu["ts"].to_numpy()}).merge(side, on="external_id", how="left")
    return (joined["ts"] - joined["end"]).to_numpy(dtype=float)
'''

_DELEGATES = '''
def queue_delays(df):
    """Calls the library routine the grade cell disables."""
    return link_launches(df).set_index("kernel_index").loc[
        df.index[df["cat"].isin(GPU_CATEGORIES)], "queue_delay"].to_numpy()
'''

# --- Exercise 2: offset bounds ------------------------------------------------------------------

_BOUNDS = '''
def offset_interval(a_to_b, b_to_a):
    """MUTATION_DOC"""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("no messages")
    lower = float(np.max(ab[:, 0] - ab[:, 1])) if len(ab) else -np.inf
    upper = float(np.min(ba[:, 1] - ba[:, 0])) if len(ba) else np.inf
    if lower > upper:
        raise ValueError("inconsistent messages")
    return MUTATION
'''


def _bounds(doc: str, result: str) -> str:
    return _BOUNDS.replace("MUTATION_DOC", doc).replace("MUTATION", result)


_LOOSEST = '''
def offset_interval(a_to_b, b_to_a):
    """Takes the loosest bound on each side (min floor, max ceiling)."""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("no messages")
    lower = float(np.min(ab[:, 0] - ab[:, 1])) if len(ab) else -np.inf
    upper = float(np.max(ba[:, 1] - ba[:, 0])) if len(ba) else np.inf
    return lower, upper
'''

_SIGN_FLIPPED = '''
def offset_interval(a_to_b, b_to_a):
    """Receive minus send on both sides: the offset of B relative to A, with the roles mixed."""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("no messages")
    lower = float(np.max(ab[:, 1] - ab[:, 0])) if len(ab) else -np.inf
    upper = float(np.min(ba[:, 0] - ba[:, 1])) if len(ba) else np.inf
    return lower, upper
'''

_NO_CHECKS = '''
def offset_interval(a_to_b, b_to_a):
    """Right bounds, but never raises: an empty input or a contradiction goes unnoticed."""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    lower = float(np.max(ab[:, 0] - ab[:, 1])) if len(ab) else -np.inf
    upper = float(np.min(ba[:, 1] - ba[:, 0])) if len(ba) else np.inf
    return lower, upper
'''

_NO_ONE_WAY = '''
def offset_interval(a_to_b, b_to_a):
    """Right bounds when messages go both ways; an empty side crashes (max of an empty array)."""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    lower = float(np.max(ab[:, 0] - ab[:, 1]))
    upper = float(np.min(ba[:, 1] - ba[:, 0]))
    if lower > upper:
        raise ValueError("inconsistent messages")
    return lower, upper
'''

_NO_CONTRADICTION_CHECK = _bounds(
    "Right bounds and the no-message error, but no check of lower > upper.", "lower, upper"
).replace('    if lower > upper:\n        raise ValueError("inconsistent messages")\n', "")

_ONE_WAY_ZERO = '''
def offset_interval(a_to_b, b_to_a):
    """An empty side gives 0.0 instead of an open bound."""
    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    if len(ab) == 0 and len(ba) == 0:
        raise ValueError("no messages")
    lower = float(np.max(ab[:, 0] - ab[:, 1])) if len(ab) else 0.0
    upper = float(np.min(ba[:, 1] - ba[:, 0])) if len(ba) else 0.0
    if lower > upper:
        raise ValueError("inconsistent messages")
    return lower, upper
'''

_BOUNDS_DELEGATES = '''
def offset_interval(a_to_b, b_to_a):
    """Calls the library routine the grade cell disables."""
    iv = offset_bounds(a_to_b, b_to_a)
    return iv.lower, iv.upper
'''

# --- Exercise 3: verdict(t_a, t_b, lower, upper) ------------------------------------------------

_RIGHT_RULE = """
    if d <= lower:
        return "certain"
    if d >= upper:
        return "impossible"
    return "undetermined"
"""


def _verdict(doc: str, body: str, d: str = "t_a - t_b") -> str:
    return f'\ndef verdict(t_a, t_b, lower, upper):\n    """{doc}"""\n    d = {d}\n' + body


_V_RAW = _verdict(
    "Compares the raw timestamps, as if both clocks agreed (θ = 0).",
    '    return "certain" if t_a < t_b else "impossible"\n',
)
_V_MIDPOINT = _verdict(
    "Takes the interval's midpoint as the exact offset: never undetermined.",
    '    return "certain" if d < (lower + upper) / 2 else "impossible"\n',
)
_V_REVERSED = _verdict("Classifies d = t_b − t_a instead of t_a − t_b.", _RIGHT_RULE, "t_b - t_a")
_V_WRONG_WAY = _verdict(
    "Applies the offset the wrong way: a before b iff t_a + θ < t_b.",
    '    if d <= -upper:\n        return "certain"\n'
    '    if d >= -lower:\n        return "impossible"\n'
    '    return "undetermined"\n',
)
_V_SWAPPED_LABELS = _verdict(
    "Reads 'before' as 'after': certain when d is above the interval.",
    '    if d >= upper:\n        return "certain"\n'
    '    if d <= lower:\n        return "impossible"\n'
    '    return "undetermined"\n',
)
_V_STRICT = _verdict(
    "Strict comparisons at both bounds: d equal to a bound is called undetermined.",
    '    if d < lower:\n        return "certain"\n'
    '    if d > upper:\n        return "impossible"\n'
    '    return "undetermined"\n',
)
_V_STRICT_UPPER = _verdict(
    "Right at the lower bound, strict at the upper one.",
    '    if d <= lower:\n        return "certain"\n'
    '    if d > upper:\n        return "impossible"\n'
    '    return "undetermined"\n',
)
_V_POSSIBLE_AS_CERTAIN = _verdict(
    "Calls an order certain as soon as some admissible offset allows it.",
    '    if d < upper:\n        return "certain"\n    return "impossible"\n',
)
_V_DELEGATES = _verdict(
    "Calls clocks.order_certainty, which the grade cell disables.",
    "    return str(order_certainty(t_a, t_b, clocks.OffsetInterval(lower, upper)))\n",
)
_V_DELEGATES_GAP = _verdict(
    "Calls clocks.interval_difference, which the grade cell disables.",
    "    gap = interval_difference(t_a, t_b, clocks.OffsetInterval(lower, upper))\n"
    '    if gap.upper <= 0:\n        return "certain"\n'
    '    if gap.lower >= 0:\n        return "impossible"\n'
    '    return "undetermined"\n',
)

# --- Exercise 4: drift ---------------------------------------------------------------------------

_WINDOWS = """
_t_b, _lo, _hi = [], [], []
for _w, _g in sync_1h.groupby("window"):
    _ab = _g[_g["direction"] == "A->B"][["send_ts", "recv_ts"]].to_numpy()
    _ba = _g[_g["direction"] == "B->A"][["send_ts", "recv_ts"]].to_numpy()
    _iv = offset_bounds(_ab, _ba)
    _t_b.append(_ba[:, 0].mean())
    _lo.append(_iv.lower)
    _hi.append(_iv.upper)
_t_b, _lo, _hi = np.array(_t_b), np.array(_lo), np.array(_hi)
_mid = 0.5 * (_lo + _hi)
"""


def _drift(body: str) -> str:
    return _WINDOWS + body


_RIGHT_FIT = "_fit = fit_drift(_t_b + _mid, _t_b)\n"
_SWAPPED_FIT = _drift(
    "_fit = fit_drift(_t_b, _t_b + _mid)  # reference and local swapped\n"
    "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_FIRST_WINDOW_ONLY = _drift(
    "drift_ppm_fit = 0.0  # one offset, measured in the first window, for the whole hour\n"
    "event_on_b = 3412.0 - _mid[0]\n"
)
_NEAREST_WINDOW = _drift(
    _RIGHT_FIT + "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = 3412.0 - _mid[np.argmin(np.abs(_t_b - 3412.0))]  # the nearest window's offset\n"
)
_AS_RATIO = _drift(
    _RIGHT_FIT + "drift_ppm_fit = _fit.drift_ppm * 1e-6  # a ratio, not ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_IN_PPB = _drift(
    _RIGHT_FIT + "drift_ppm_fit = _fit.drift_ppm * 1e3  # parts per billion\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_TO_LOCAL = _drift(
    _RIGHT_FIT + "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_local(3412.0))  # the wrong direction\n"
)
_LOWER_BOUNDS = _drift(
    "_fit = fit_drift(_t_b + _lo, _t_b)  # a line through the windows' lower bounds\n"
    "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_UPPER_BOUNDS = _drift(
    "_fit = fit_drift(_t_b + _hi, _t_b)  # a line through the windows' upper bounds\n"
    "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_ONE_WAY_RAW = """
_ab = sync_1h[sync_1h["direction"] == "A->B"]
_fit = fit_drift(_ab["send_ts"].to_numpy(), _ab["recv_ts"].to_numpy())  # ignores the delay
drift_ppm_fit = _fit.drift_ppm
event_on_b = float(_fit.to_reference(3412.0))
"""

_POOLED = """
_ab = sync_1h[sync_1h["direction"] == "A->B"]
_ba = sync_1h[sync_1h["direction"] == "B->A"]
_t = np.concatenate([_ab["recv_ts"].to_numpy(), _ba["send_ts"].to_numpy()])  # B's clock
_bound = np.concatenate([(_ab["send_ts"] - _ab["recv_ts"]).to_numpy(),
                         (_ba["recv_ts"] - _ba["send_ts"]).to_numpy()])
_fit = fit_drift(_t + _bound, _t)  # one line through every message's bound, both directions
drift_ppm_fit = _fit.drift_ppm
event_on_b = float(_fit.to_reference(3412.0))
"""
_WINDOW_MEAN = _drift(
    "_mean = []\n"
    "for _w, _g in sync_1h.groupby('window'):\n"
    "    _a, _b = _g[_g['direction'] == 'A->B'], _g[_g['direction'] == 'B->A']\n"
    "    _mean.append(0.5 * ((_a['send_ts'] - _a['recv_ts']).mean()\n"
    "                        + (_b['recv_ts'] - _b['send_ts']).mean()))\n"
    "_fit = fit_drift(_t_b + np.array(_mean), _t_b)  # the mean bound, not the tightest\n"
    "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_LOOSEST_MIDPOINT = _drift(
    "_loose = []\n"
    "for _w, _g in sync_1h.groupby('window'):\n"
    "    _a, _b = _g[_g['direction'] == 'A->B'], _g[_g['direction'] == 'B->A']\n"
    "    _loose.append(0.5 * ((_a['send_ts'] - _a['recv_ts']).min()\n"
    "                         + (_b['recv_ts'] - _b['send_ts']).max()))\n"
    "_fit = fit_drift(_t_b + np.array(_loose), _t_b)\n"
    "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = float(_fit.to_reference(3412.0))\n"
)
_ONE_WAY_RAW_BA = """
_ba = sync_1h[sync_1h["direction"] == "B->A"]
_fit = fit_drift(_ba["recv_ts"].to_numpy(), _ba["send_ts"].to_numpy())  # ignores the delay
drift_ppm_fit = _fit.drift_ppm
event_on_b = float(_fit.to_reference(3412.0))
"""
_INTERCEPT_ONLY = _drift(
    _RIGHT_FIT + "drift_ppm_fit = _fit.drift_ppm\n"
    "event_on_b = 3412.0 - _fit.offset  # the offset at t_B = 0 for the whole hour\n"
)


def _m(name: str, why: str, cell: str, source: str, *grades: str) -> Mutant:
    return Mutant(name=name, why=why, cells={cell: source}, grades=grades)


_Q, _QT = "queue_delays_answer", "queue_delays_tests"
_B, _BT, _BE = "offset_interval_answer", "offset_interval_tests", "offset_interval_edges_tests"
_V, _VT = "verdict_answer", "verdict_tests"
_D, _DP, _DE = "drift_answer", "drift_ppm_tests", "event_on_b_tests"

MUTANTS = [
    # Exercise 1
    _m("queue_nearest_in_time", "joins each GPU event to the call that ended last before it, "
       "not by correlation id", _Q, _NEAREST_IN_TIME, _QT),
    _m("queue_from_launch_start", "measures from the launch's start instead of its end", _Q,
       _queue("ts - launch_start"), _QT),
    _m("queue_sign_reversed", "launch end minus kernel start", _Q, _queue("launch_end - ts"), _QT),
    _m("queue_clamped", "clamps negative queue delays to zero, as HTA 0.5.0's launch delay does",
       _Q, _queue("np.maximum(ts - launch_end, 0.0)"), _QT),
    _m("queue_in_microseconds", "returns microseconds (the file's unit) instead of seconds", _Q,
       _queue("(ts - launch_end) * 1e6"), _QT),
    _m("queue_hta_0_2", "HTA 0.2.0's launch delay: kernel start − launch start + launch duration",
       _Q, _queue("ts - launch_start + (launch_end - launch_start)"), _QT),
    _m("queue_sorted_by_start", "returns the delays in kernel-start order, not in df's row order",
       _Q, _SORTED_BY_START, _QT),
    _m("queue_kernels_only", "keeps cat == 'kernel' only, dropping memcpys and memsets", _Q,
       _KERNELS_ONLY, _QT),
    _m("queue_by_external_id", "joins on External id (the op) instead of the correlation id", _Q,
       _BY_EXTERNAL_ID, _QT),
    _m("queue_delegates", "calls trace.link_launches, which the grade cell disables", _Q,
       _DELEGATES, _QT),
    # Exercise 2: the bounds (offset_interval_tests) and the edge cases (..._edges_tests)
    _m("bounds_loosest", "takes the loosest floor and ceiling instead of the tightest", _B,
       _LOOSEST, _BT),
    _m("bounds_sign_flipped", "uses receive minus send on both sides", _B, _SIGN_FLIPPED, _BT),
    _m("bounds_offset_of_b", "returns the offset of B relative to A, (−upper, −lower)", _B,
       _bounds("The offset of B relative to A.", "-upper, -lower"), _BT),
    _m("bounds_swapped_order", "returns (upper, lower)", _B,
       _bounds("Bounds in the wrong order.", "upper, lower"), _BT, _BE),
    _m("bounds_never_raise", "returns an empty interval instead of raising on contradictory or "
       "no messages", _B, _NO_CHECKS, _BE),
    _m("bounds_no_contradiction_check", "raises for no messages but returns lower > upper", _B,
       _NO_CONTRADICTION_CHECK, _BE),
    _m("bounds_no_one_way", "does not handle an empty direction (that side is unbounded)", _B,
       _NO_ONE_WAY, _BE),
    _m("bounds_one_way_zero", "gives an empty direction the bound 0.0 instead of ±inf", _B,
       _ONE_WAY_ZERO, _BE),
    _m("bounds_delegates", "calls clocks.offset_bounds, which the grade cells disable", _B,
       _BOUNDS_DELEGATES, _BT, _BE),
    # Exercise 3
    _m("verdict_raw_timestamps", "compares raw timestamps, as if both clocks agreed (θ = 0)", _V,
       _V_RAW, _VT),
    _m("verdict_midpoint", "trusts the midpoint offset as exact, so nothing is undetermined", _V,
       _V_MIDPOINT, _VT),
    _m("verdict_reversed_difference", "classifies d = t_b − t_a instead of t_a − t_b", _V,
       _V_REVERSED, _VT),
    _m("verdict_offset_wrong_way", "a before b iff t_a + θ < t_b (or the interval of B "
       "relative to A)", _V, _V_WRONG_WAY, _VT),
    _m("verdict_before_after_swapped", "certain when d is above the interval", _V,
       _V_SWAPPED_LABELS, _VT),
    _m("verdict_strict_bounds", "strict comparisons: d equal to a bound is undetermined", _V,
       _V_STRICT, _VT),
    _m("verdict_strict_upper", "d equal to the upper bound is undetermined", _V, _V_STRICT_UPPER,
       _VT),
    _m("verdict_possible_as_certain", "certain whenever some admissible offset allows it", _V,
       _V_POSSIBLE_AS_CERTAIN, _VT),
    _m("verdict_delegates", "calls clocks.order_certainty, which the grade cell disables", _V,
       _V_DELEGATES, _VT),
    _m("verdict_delegates_interval_difference", "calls clocks.interval_difference, which the "
       "grade cell disables", _V, _V_DELEGATES_GAP, _VT),
    # Exercise 4
    _m("drift_swapped_fit", "passes B's readings as local and A's as reference to fit_drift", _D,
       _SWAPPED_FIT, _DP, _DE),
    _m("drift_first_window_only", "uses the first window's offset for the whole hour", _D,
       _FIRST_WINDOW_ONLY, _DP, _DE),
    _m("drift_nearest_window", "uses the offset of the nearest window instead of the drift line",
       _D, _NEAREST_WINDOW, _DE),
    _m("drift_intercept_only", "subtracts the fit's offset at t_B = 0, ignoring the drift since",
       _D, _INTERCEPT_ONLY, _DE),
    _m("drift_as_ratio", "reports the drift as a ratio, not in ppm", _D, _AS_RATIO, _DP),
    _m("drift_in_ppb", "reports the drift in parts per billion", _D, _IN_PPB, _DP),
    _m("drift_to_local", "maps the event with to_local (B's clock to A's), the wrong direction",
       _D, _TO_LOCAL, _DE),
    _m("drift_lower_bounds", "fits the line through the windows' lower bounds", _D,
       _LOWER_BOUNDS, _DP, _DE),
    _m("drift_upper_bounds", "fits the line through the windows' upper bounds", _D,
       _UPPER_BOUNDS, _DP, _DE),
    _m("drift_pooled_bounds", "one line through every message's bound in both directions, no "
       "windows or minima (biased: the two directions' delays differ)", _D, _POOLED, _DP, _DE),
    _m("drift_window_mean_bounds", "per window, the mean of the bounds instead of the tightest",
       _D, _WINDOW_MEAN, _DP, _DE),
    _m("drift_loosest_midpoint", "per window, the midpoint of the loosest floor and ceiling", _D,
       _LOOSEST_MIDPOINT, _DP, _DE),
    _m("drift_one_way_raw", "fits send (A) against receive (B) of the A -> B messages, as if "
       "delays were zero", _D, _ONE_WAY_RAW, _DP, _DE),
    _m("drift_one_way_raw_ba", "fits receive (A) against send (B) of the B -> A messages, as if "
       "delays were zero", _D, _ONE_WAY_RAW_BA, _DP, _DE),
]  # fmt: skip

# --- Right answers written differently: each must keep full marks on its grade cells ----------

_LOOP_JOIN = '''
def queue_delays(df):
    """A dict from correlation id to launch end, and a loop over the GPU rows."""
    end = {}
    for _, row in df[df["cat"].isin(LAUNCH_CATEGORIES)].iterrows():
        if not pd.isna(row["correlation"]):
            end[int(row["correlation"])] = row["ts"] + row["dur"]
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    return np.array([ts - end[int(c)] for ts, c in zip(gpu["ts"], gpu["correlation"])])
'''

_MERGE_JOIN = '''
def queue_delays(df):
    """A left merge on correlation, keeping df's row order."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    side = pd.DataFrame({"correlation": launches["correlation"],
                         "launch_end": launches["ts"] + launches["dur"]})
    gpu = df.loc[df["cat"].isin(GPU_CATEGORIES), ["ts", "correlation"]]
    joined = gpu.merge(side, on="correlation", how="left")
    return (joined["ts"] - joined["launch_end"]).to_numpy(dtype=float)
'''

_LOOP_BOUNDS = '''
def offset_interval(a_to_b, b_to_a):
    """Plain Python: a loop over the messages, math.inf for an open side."""
    import math
    a_to_b, b_to_a = list(a_to_b), list(b_to_a)
    if not a_to_b and not b_to_a:
        raise ValueError("no messages")
    lower = max((float(s) - float(r) for s, r in a_to_b), default=-math.inf)
    upper = min((float(r) - float(s) for s, r in b_to_a), default=math.inf)
    if lower > upper:
        raise ValueError("lower > upper")
    return (lower, upper)
'''

_V_GAP = _verdict(
    "Through the true gap t(a) − t(b) in (d − upper, d − lower): before iff it is negative.",
    "    gap_lo, gap_hi = d - upper, d - lower\n"
    '    if gap_hi <= 0:\n        return "certain"\n'
    '    if gap_lo >= 0:\n        return "impossible"\n'
    '    return "undetermined"\n',
)
_V_ON_B = _verdict(
    "Compares a's time on B's clock, t_a − θ, with t_b at both bounds.",
    '    if t_a - lower <= t_b:\n        return "certain"\n'
    '    if t_a - upper >= t_b:\n        return "impossible"\n'
    '    return "undetermined"\n',
)

RIGHT_ANSWERS = [
    _m("queue_loop", "a loop over rows with a dict of launch ends", _Q, _LOOP_JOIN, _QT),
    _m("queue_merge", "a pandas left merge on correlation", _Q, _MERGE_JOIN, _QT),
    _m("bounds_loop", "plain Python with max/min(default=±inf)", _B, _LOOP_BOUNDS, _BT, _BE),
    # One part's mistake never zeroes another: right bounds without the error checks keep the
    # bounds cell.
    _m("bounds_right_without_errors", "right bounds, no ValueError: keeps the bounds cell", _B,
       _NO_CHECKS, _BT),
    _m("verdict_true_gap", "classifies the interval of the true gap", _V, _V_GAP, _VT),
    _m("verdict_on_b_clock", "compares t_a − θ with t_b at both bounds", _V, _V_ON_B, _VT),
    _m("drift_nominal_window_times", "each window's nominal start, 300 s · window, as its time on "
       "B's clock", _D, _drift("_t = 300.0 * np.arange(len(_mid))\n"
                               "_fit = fit_drift(_t + _mid, _t)\n"
                               "drift_ppm_fit = _fit.drift_ppm\n"
                               "event_on_b = float(_fit.to_reference(3412.0))\n"), _DP, _DE),
    _m("drift_receive_times", "the mean receive time of the window's A -> B messages (B's clock) "
       "as t", _D, _drift("_t = np.array([g[g['direction'] == 'A->B']['recv_ts'].mean()\n"
                          "               for _, g in sync_1h.groupby('window')])\n"
                          "_fit = fit_drift(_t + _mid, _t)\n"
                          "drift_ppm_fit = _fit.drift_ppm\n"
                          "event_on_b = float(_fit.to_reference(3412.0))\n"), _DP, _DE),
    _m("drift_polyfit", "np.polyfit of the midpoints against t, then t_B solved from "
       "t_B + θ(t_B) = t_A", _D, _drift("_slope, _icpt = np.polyfit(_t_b, _mid, 1)\n"
                                        "drift_ppm_fit = float(_slope * 1e6)\n"
                                        "event_on_b = float((3412.0 - _icpt) / (1.0 + _slope))\n"),
       _DP, _DE),
    _m("drift_offset_at_t_a", "t_A − θ(t_A) with the fitted line: off by ρ·θ, under a "
       "microsecond here, so right to the precision asked", _D,
       _drift("_slope, _icpt = np.polyfit(_t_b, _mid, 1)\n"
              "drift_ppm_fit = float(_slope * 1e6)\n"
              "event_on_b = float(3412.0 - (_icpt + _slope * 3412.0))\n"), _DP, _DE),
    # Independent parts: the right drift with a wrong event keeps the drift cell.
    _m("drift_ppm_right_event_wrong", "right drift, event mapped the wrong way: keeps 4a", _D,
       _TO_LOCAL, _DP),
]  # fmt: skip
