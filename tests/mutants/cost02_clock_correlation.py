"""Plausible wrong answers to cost02_clock_correlation, each of which must lose points.

Every mistake listed per exercise in the lesson's review (clamping negatives to 0, the wrong clock,
µs vs s, the neighbouring quantity, the naive join the lesson warns about, delegating to
course_lib) is one mutant here. ``RIGHT_ANSWERS`` lists right answers written differently from the
reference solution; they must keep full marks.
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

# --- Exercise 2: device time of a forward pass --------------------------------------------------


def _forward(rank: int = 2, step: int = 2, result: str = "") -> str:
    return f"""
_r2 = profiles[{rank}]
_step = _r2[_r2["name"] == "ProfilerStep#{step}"].iloc[0]
_fwd = _r2[(_r2["name"] == "DistributedDataParallel.forward") & (_r2["ts"] >= _step["ts"])].iloc[0]
_links = link_launches(_r2)
_mine = _links[(_links["launch_start"] >= _fwd["ts"])
               & (_links["launch_end"] <= _fwd["ts"] + _fwd["dur"])]
_gpu = _r2[_r2["cat"].isin(GPU_CATEGORIES)]
forward_device_time = {result or 'float(_mine["kernel_end"].max() - _mine["kernel_start"].min())'}
"""


_STARTED_INSIDE = (
    '_gpu[(_gpu["ts"] >= _fwd["ts"]) & (_gpu["ts"] < _fwd["ts"] + _fwd["dur"])]'
    '.pipe(lambda k: float((k["ts"] + k["dur"]).max() - k["ts"].min()))'
)
_OVERLAPPING = (
    '_gpu[(_gpu["ts"] < _fwd["ts"] + _fwd["dur"]) & (_gpu["ts"] + _gpu["dur"] > _fwd["ts"])]'
    '.pipe(lambda k: float((k["ts"] + k["dur"]).max() - k["ts"].min()))'
)

# --- Exercise 3: offset bounds ------------------------------------------------------------------

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


def _verdicts(body: str) -> str:
    return _EVENTS + body


_RAW_TIMESTAMPS = _verdicts(
    'verdicts = tuple("certain" if t_a < t_b else "impossible" for t_a, t_b in _pairs_of_times)\n'
)
_MIDPOINT = _verdicts(
    "_mid = offset_bounds(pairs(1, 0), pairs(0, 1)).midpoint\n"
    'verdicts = tuple("certain" if t_a - _mid < t_b else "impossible"\n'
    "                 for t_a, t_b in _pairs_of_times)\n"
)
_SWAPPED_ROLES = _verdicts(
    "_theta = offset_bounds(pairs(0, 1), pairs(1, 0))  # rank 0 taken as A by mistake\n"
    "verdicts = tuple(str(order_certainty(t_a, t_b, _theta)) for t_a, t_b in _pairs_of_times)\n"
)
_REVERSED_DIFFERENCE = _verdicts(
    "_theta = offset_bounds(pairs(1, 0), pairs(0, 1))\n"
    "# d = t_b - t_a instead of t_a - t_b\n"
    "verdicts = tuple(str(order_certainty(t_b, t_a, _theta)) for t_a, t_b in _pairs_of_times)\n"
)
_WORKED_EXAMPLE_INTERVAL = _verdicts(
    "_theta = offset_bounds(pairs(3, 0), pairs(0, 3))  # section 3's interval, ranks 3 and 0\n"
    "verdicts = tuple(str(order_certainty(t_a, t_b, _theta)) for t_a, t_b in _pairs_of_times)\n"
)

# --- Exercise 5: drift ---------------------------------------------------------------------------

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
        cells={"queue_delays_answer": _queue("ts - launch_start")},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_sign_reversed",
        why="launch end minus kernel start",
        cells={"queue_delays_answer": _queue("launch_end - ts")},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_clamped",
        why="clamps negative queue delays to zero, as HTA's launch delay does",
        cells={"queue_delays_answer": _queue("np.maximum(ts - launch_end, 0.0)")},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_in_microseconds",
        why="returns microseconds (the file's unit) instead of seconds",
        cells={"queue_delays_answer": _queue("(ts - launch_end) * 1e6")},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_sorted_by_start",
        why="returns the delays in kernel-start order, not in df's row order",
        cells={"queue_delays_answer": _SORTED_BY_START},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_kernels_only",
        why="keeps cat == 'kernel' only, dropping memcpys and memsets",
        cells={"queue_delays_answer": _KERNELS_ONLY},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_by_external_id",
        why="joins on External id (the op) instead of the correlation id (the launch)",
        cells={"queue_delays_answer": _BY_EXTERNAL_ID},
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
        name="forward_host_time",
        why="reports the annotation's duration, what the host measured",
        cells={"forward_device_answer": _forward(result='float(_fwd["dur"])')},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_started_inside",
        why="takes the GPU events that started while the annotation was open (a join by time)",
        cells={"forward_device_answer": _forward(result=_STARTED_INSIDE)},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_overlapping",
        why="takes the GPU events that overlap the annotation in time",
        cells={"forward_device_answer": _forward(result=_OVERLAPPING)},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_from_annotation_start",
        why="measures from the annotation's start to the last kernel's end",
        cells={
            "forward_device_answer": _forward(
                result='float(_mine["kernel_end"].max() - _fwd["ts"])'
            )
        },
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_wrong_rank",
        why="reads rank 0 instead of rank 2",
        cells={"forward_device_answer": _forward(rank=0)},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_wrong_step",
        why="reads the forward of ProfilerStep#1 instead of ProfilerStep#2",
        cells={"forward_device_answer": _forward(step=1)},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_first_in_trace",
        why="takes the first forward annotation in the trace (ProfilerStep#0)",
        cells={"forward_device_answer": _forward(step=0)},
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="forward_in_ms",
        why="reports milliseconds instead of seconds",
        cells={
            "forward_device_answer": _forward(
                result='float(_mine["kernel_end"].max() - _mine["kernel_start"].min()) * 1e3'
            )
        },
        grades=("forward_device_tests",),
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
        name="bounds_offset_of_b",
        why="returns the offset of B relative to A, (−upper, −lower): the wrong clock as reference",
        cells={
            "offset_interval_answer": _bounds("The offset of B relative to A.", "-upper, -lower")
        },
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_swapped_order",
        why="returns (upper, lower)",
        cells={"offset_interval_answer": _bounds("Bounds in the wrong order.", "upper, lower")},
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_never_raise",
        why="returns an empty interval instead of raising on contradictory or no messages",
        cells={"offset_interval_answer": _NO_CHECKS},
        grades=("offset_interval_tests",),
    ),
    Mutant(
        name="bounds_no_one_way",
        why="does not handle an empty direction (that side is unbounded)",
        cells={"offset_interval_answer": _NO_ONE_WAY},
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
    Mutant(
        name="verdicts_reversed_difference",
        why="classifies d = t_b − t_a instead of t_a − t_b",
        cells={"verdicts_answer": _REVERSED_DIFFERENCE},
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="verdicts_worked_example_interval",
        why="reuses section 3's interval (ranks 3 and 0) for ranks 1 and 0",
        cells={"verdicts_answer": _WORKED_EXAMPLE_INTERVAL},
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
        name="drift_as_ratio",
        why="reports the drift as a ratio, not in ppm",
        cells={"drift_answer": _AS_RATIO},
        grades=("drift_ppm_tests",),
    ),
    Mutant(
        name="drift_in_ppb",
        why="reports the drift in parts per billion",
        cells={"drift_answer": _IN_PPB},
        grades=("drift_ppm_tests",),
    ),
    Mutant(
        name="drift_to_local",
        why="maps the event with to_local (B's clock to A's), the wrong direction",
        cells={"drift_answer": _TO_LOCAL},
        grades=("event_on_b_tests",),
    ),
    Mutant(
        name="drift_lower_bounds",
        why="fits the drift line through the windows' lower bounds instead of their midpoints",
        cells={"drift_answer": _LOWER_BOUNDS},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
    Mutant(
        name="drift_upper_bounds",
        why="fits the drift line through the windows' upper bounds instead of their midpoints",
        cells={"drift_answer": _UPPER_BOUNDS},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
    Mutant(
        name="drift_one_way_raw",
        why="fits send (A) against receive (B) of the A -> B messages, as if delays were zero",
        cells={"drift_answer": _ONE_WAY_RAW},
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
]

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

RIGHT_ANSWERS = [
    Mutant(
        name="queue_loop",
        why="a loop over rows with a dict of launch ends",
        cells={"queue_delays_answer": _LOOP_JOIN},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="queue_merge",
        why="a pandas left merge on correlation",
        cells={"queue_delays_answer": _MERGE_JOIN},
        grades=("queue_delays_tests",),
    ),
    Mutant(
        name="forward_busy_time",
        why="the sum of the kernels' durations (they run back to back, so it equals the span)",
        cells={
            "forward_device_answer": _forward(
                result='float((_mine["kernel_end"] - _mine["kernel_start"]).sum())'
            )
        },
        grades=("forward_device_tests",),
    ),
    Mutant(
        name="drift_nominal_window_times",
        why="each window's nominal start, 300 s · window, as its time on B's clock",
        cells={
            "drift_answer": _drift(
                "_t = 300.0 * np.arange(len(_mid))\n"
                "_fit = fit_drift(_t + _mid, _t)\n"
                "drift_ppm_fit = _fit.drift_ppm\n"
                "event_on_b = float(_fit.to_reference(3412.0))\n"
            )
        },
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
    Mutant(
        name="drift_polyfit",
        why="np.polyfit of the midpoints against t, then t_B solved from t_B + θ(t_B) = t_A",
        cells={
            "drift_answer": _drift(
                "_slope, _icpt = np.polyfit(_t_b, _mid, 1)\n"
                "drift_ppm_fit = float(_slope * 1e6)\n"
                "event_on_b = float((3412.0 - _icpt) / (1.0 + _slope))\n"
            )
        },
        grades=("drift_ppm_tests", "event_on_b_tests"),
    ),
]
