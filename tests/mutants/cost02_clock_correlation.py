"""Plausible wrong answers to cost02_clock_correlation, each of which must lose points."""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: queue delays ------------------------------------------------------------------

_NEAREST_IN_TIME = '''
def queue_delays(df):
    """Pairs each GPU event with the runtime call that ended last before it started."""
    calls = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    ends = np.sort((calls["ts"] + calls["dur"]).to_numpy())
    starts = df.loc[df["cat"].isin(GPU_CATEGORIES), "ts"].to_numpy()
    return starts - ends[np.searchsorted(ends, starts, side="right") - 1]
'''

_FROM_LAUNCH_START = '''
def queue_delays(df):
    """Right join, but counts from the launch's start instead of its end."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    start = pd.Series(launches["ts"].to_numpy(), index=launches["correlation"].to_numpy())
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    return gpu["ts"].to_numpy() - start.loc[gpu["correlation"].to_numpy()].to_numpy()
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

_CLAMPED = '''
def queue_delays(df):
    """Right join, but clamps negative delays to zero."""
    launches = df[df["cat"].isin(LAUNCH_CATEGORIES) & df["correlation"].notna()]
    end = pd.Series((launches["ts"] + launches["dur"]).to_numpy(),
                    index=launches["correlation"].to_numpy())
    gpu = df[df["cat"].isin(GPU_CATEGORIES)]
    q = gpu["ts"].to_numpy() - end.loc[gpu["correlation"].to_numpy()].to_numpy()
    return np.maximum(q, 0.0)
'''

_DELEGATES = '''
def queue_delays(df):
    """Calls the library routine the grade cell disables."""
    return link_launches(df).set_index("kernel_index").loc[
        df.index[df["cat"].isin(GPU_CATEGORIES)], "queue_delay"].to_numpy()
'''

# --- Exercise 2: host vs device forward time ----------------------------------------------------

_FORWARD = """
_r2 = profiles[2]
_step = _r2[_r2["name"] == "ProfilerStep#2"].iloc[0]
_fwd = _r2[(_r2["name"] == "DistributedDataParallel.forward") & (_r2["ts"] >= _step["ts"])].iloc[0]
_links = link_launches(_r2)
forward_host_time = float(_fwd["dur"])
"""

_TIME_WINDOW = (
    _FORWARD
    + """
_gpu = _r2[_r2["cat"].isin(GPU_CATEGORIES)]
_inside = _gpu[(_gpu["ts"] >= _fwd["ts"]) & (_gpu["ts"] < _fwd["ts"] + _fwd["dur"])]
forward_device_time = float((_inside["ts"] + _inside["dur"]).max() - _inside["ts"].min())
"""
)

_FROM_ANNOTATION_START = (
    _FORWARD
    + """
_mine = _links[(_links["launch_start"] >= _fwd["ts"])
               & (_links["launch_end"] <= _fwd["ts"] + _fwd["dur"])]
forward_device_time = float(_mine["kernel_end"].max() - _fwd["ts"])
"""
)

_RANK0 = """
_r0 = profiles[0]
_step = _r0[_r0["name"] == "ProfilerStep#2"].iloc[0]
_fwd = _r0[(_r0["name"] == "DistributedDataParallel.forward") & (_r0["ts"] >= _step["ts"])].iloc[0]
_links = link_launches(_r0)
_mine = _links[(_links["launch_start"] >= _fwd["ts"])
               & (_links["launch_end"] <= _fwd["ts"] + _fwd["dur"])]
forward_host_time = float(_fwd["dur"])
forward_device_time = float(_mine["kernel_end"].max() - _mine["kernel_start"].min())
"""

# --- Exercise 3: offset bounds ------------------------------------------------------------------

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

_BOUNDS_DELEGATES = '''
def offset_interval(a_to_b, b_to_a):
    """Calls the library routine the grade cell disables."""
    iv = offset_bounds(a_to_b, b_to_a)
    return iv.lower, iv.upper
'''

# --- Exercise 4: verdicts -----------------------------------------------------------------------

_EVENTS = """
_k1, _k0 = nccl_kernels(1).iloc[4], nccl_kernels(0).iloc[4]


def _start(rank, name):
    df = profiles[rank]
    return df.loc[df["name"] == name, "ts"].iloc[0]


_pairs_of_times = (
    (_k1["ts"], _k0["ts"]),
    (_start(1, "ProfilerStep#2"), _start(0, "ProfilerStep#2")),
    (_k1["ts"] + _k1["dur"], _k0["ts"] + _k0["dur"]),
    (_start(1, "DataLoader"), _start(0, "DataLoader")),
)
"""

_RAW_TIMESTAMPS = (
    _EVENTS
    + """
verdicts = tuple("certain" if t_a < t_b else "impossible" for t_a, t_b in _pairs_of_times)
"""
)

_MIDPOINT = (
    _EVENTS
    + """
_mid = offset_bounds(pairs(1, 0), pairs(0, 1)).midpoint
verdicts = tuple("certain" if t_a - _mid < t_b else "impossible" for t_a, t_b in _pairs_of_times)
"""
)

_SWAPPED_ROLES = (
    _EVENTS
    + """
_theta = offset_bounds(pairs(0, 1), pairs(1, 0))  # rank 0 taken as A by mistake
verdicts = tuple(str(order_certainty(t_a, t_b, _theta)) for t_a, t_b in _pairs_of_times)
"""
)

# --- Exercise 5: drift ---------------------------------------------------------------------------

_WINDOWS = """
_t_b, _mid = [], []
for _w, _g in sync_1h.groupby("window"):
    _ab = _g[_g["direction"] == "A->B"][["send_ts", "recv_ts"]].to_numpy()
    _ba = _g[_g["direction"] == "B->A"][["send_ts", "recv_ts"]].to_numpy()
    _t_b.append(_ba[:, 0].mean())
    _mid.append(offset_bounds(_ab, _ba).midpoint)
_t_b, _mid = np.array(_t_b), np.array(_mid)
"""

_SWAPPED_FIT = (
    _WINDOWS
    + """
_fit = fit_drift(_t_b, _t_b + _mid)  # reference and local swapped
drift_ppm_fit = _fit.drift_ppm
event_on_b = float(_fit.to_reference(3412.0))
"""
)

_FIRST_WINDOW_ONLY = (
    _WINDOWS
    + """
drift_ppm_fit = 0.0  # one offset, measured in the first window, for the whole hour
event_on_b = 3412.0 - _mid[0]
"""
)

_NEAREST_WINDOW = (
    _WINDOWS
    + """
_fit = fit_drift(_t_b + _mid, _t_b)
drift_ppm_fit = _fit.drift_ppm
event_on_b = 3412.0 - _mid[np.argmin(np.abs(_t_b - 3412.0))]  # offset of the nearest window
"""
)

_TO_LOCAL = (
    _WINDOWS
    + """
_fit = fit_drift(_t_b + _mid, _t_b)
drift_ppm_fit = _fit.drift_ppm * 1e-6  # a ratio, not ppm
event_on_b = float(_fit.to_local(3412.0))  # the wrong direction
"""
)

MUTANTS = [
    # Exercise 1
    Mutant(
        name="queue_nearest_in_time",
        why="joins each GPU event to the call that ended last before it, not by correlation id",
        cells={"queue_delays_answer": _NEAREST_IN_TIME},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_from_launch_start",
        why="measures from the launch's start instead of its end",
        cells={"queue_delays_answer": _FROM_LAUNCH_START},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_sorted_by_start",
        why="returns the delays in kernel-start order, not in df's row order",
        cells={"queue_delays_answer": _SORTED_BY_START},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_clamped",
        why="clamps negative queue delays to zero",
        cells={"queue_delays_answer": _CLAMPED},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_delegates",
        why="calls trace.link_launches, which the grade cell disables",
        cells={"queue_delays_answer": _DELEGATES},
        grades=("queue_delays_tests",),
    ),
    # Exercise 2
    Mutant(
        name="forward_device_by_time_window",
        why="takes the GPU events that started while the annotation was open",
        cells={"forward_times_answer": _TIME_WINDOW},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_device_from_annotation_start",
        why="measures from the annotation's start to the last kernel's end",
        cells={"forward_times_answer": _FROM_ANNOTATION_START},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_wrong_rank",
        why="reads rank 0 instead of rank 2",
        cells={"forward_times_answer": _RANK0},
        grades=("forward_host_tests", "forward_device_tests"),
    ),
    Mutant(
        name="forward_host_is_device",
        why="reports the device time as the host time",
        cells={
            "forward_times_answer": _FROM_ANNOTATION_START.replace(
                'forward_host_time = float(_fwd["dur"])', "forward_host_time = 0.013031184"
            )
        },
        grades=("forward_host_tests",),
    ),
    # Exercise 3
    Mutant(
        name="bounds_loosest",
        why="takes the loosest floor and ceiling instead of the tightest",
        cells={"offset_interval_answer": _LOOSEST},
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_sign_flipped",
        why="uses receive minus send on both sides",
        cells={"offset_interval_answer": _SIGN_FLIPPED},
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_never_raise",
        why="returns an empty interval instead of raising on contradictory or no messages",
        cells={"offset_interval_answer": _NO_CHECKS},
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_delegates",
        why="calls clocks.offset_bounds, which the grade cell disables",
        cells={"offset_interval_answer": _BOUNDS_DELEGATES},
        grades=("offset_interval_tests",),
    ),
    # Exercise 4
    Mutant(
        name="verdicts_raw_timestamps",
        why="compares raw timestamps, as if both clocks agreed (θ = 0)",
        cells={"verdicts_answer": _RAW_TIMESTAMPS},
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="verdicts_midpoint",
        why="trusts the midpoint offset as exact, so nothing is undetermined",
        cells={"verdicts_answer": _MIDPOINT},
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="verdicts_swapped_roles",
        why="computes the interval with rank 0 as A, then applies it to rank 1's timestamps",
        cells={"verdicts_answer": _SWAPPED_ROLES},
        grades=("verdicts_tests",),
    ),
    # Exercise 5
    Mutant(
        name="drift_swapped_fit",
        why="passes B's readings as local and A's as reference to fit_drift",
        cells={"drift_answer": _SWAPPED_FIT},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
    Mutant(
        name="drift_first_window_only",
        why="uses the first window's offset for the whole hour",
        cells={"drift_answer": _FIRST_WINDOW_ONLY},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
    Mutant(
        name="drift_nearest_window",
        why="uses the offset of the nearest window instead of the drift line",
        cells={"drift_answer": _NEAREST_WINDOW},
        grades=("event_on_b_tests",),
    ),
    Mutant(
        name="drift_ratio_and_to_local",
        why="reports the drift as a ratio and maps the event with to_local",
        cells={"drift_answer": _TO_LOCAL},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
]
