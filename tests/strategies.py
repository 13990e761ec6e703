"""Hypothesis strategies shared by the course_lib tests."""

from __future__ import annotations

from hypothesis import strategies as st  # noqa: F401  (used by the strategies below)

# --- cost01: step dependency graphs (course_lib.graph) -------------------------------------

#: Op durations on a grid of exact binary fractions (k/4 s for k = 0..16, zeros included). Sums of
#: such numbers are exact in floating point, so equally long paths tie exactly and the
#: deterministic tie-breaking of graph.critical_path can be checked exactly.
STEP_DURATIONS = st.integers(min_value=0, max_value=16).map(lambda k: k / 4)

STEP_LANES = ("CPU", "compute stream", "comm stream", "data loader")


@st.composite
def step_dags(draw, min_nodes: int = 1, max_nodes: int = 9, durations=STEP_DURATIONS):
    """Random step DAG as (durations, deps, lanes): ops "op0".."opN-1" with edges that respect a
    random topological order (so ops are given in an order unrelated to the dependencies)."""
    n = draw(st.integers(min_value=min_nodes, max_value=max_nodes))
    names = [f"op{i}" for i in range(n)]
    topo = draw(st.permutations(names))
    pairs = [(topo[i], topo[j]) for i in range(n) for j in range(i + 1, n)]
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    deps = [pair for pair, k in zip(pairs, keep, strict=True) if k]
    durs = {name: draw(durations) for name in names}
    lanes = {name: draw(st.sampled_from(STEP_LANES)) for name in names}
    return durs, deps, lanes


# --- pipe02/pipe03: pipeline schedules (course_lib.pipeline) -------------------------------

PIPELINE_STAGES = st.integers(min_value=1, max_value=8)
PIPELINE_MICROBATCHES = st.integers(min_value=1, max_value=16)

#: Stage times in seconds, any finite non-negative float (for closed forms compared with approx).
PIPE_TIMES = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)

#: Stage times on a grid of exact binary fractions (k/8 s, k = 0..32): sums are exact in floating
#: point, so simulated times can be compared exactly with an independent longest-path computation.
PIPE_GRID_TIMES = st.integers(min_value=0, max_value=32).map(lambda k: k / 8)


@st.composite
def pipeline_shapes(draw, max_stages: int = 8, max_microbatches: int = 16):
    """(num_stages, num_microbatches) with both >= 1."""
    p = draw(st.integers(min_value=1, max_value=max_stages))
    m = draw(st.integers(min_value=1, max_value=max_microbatches))
    return p, m


@st.composite
def random_pipeline_schedules(
    draw, max_ranks: int = 3, max_chunks: int = 2, max_microbatches: int = 4, split=None
):
    """A random deadlock-free Schedule: each rank's list is one random topological order of the
    action DAG (F(s-1,j) -> F(s,j); F(s,j), B(s+1,j) -> B(s,j); B(s,j) -> W(s,j)) restricted to
    that rank, with chunks_per_rank >= 1 (stage k on rank k % num_ranks) and, if ``split`` (drawn
    when None), a W action after every B."""
    from course_lib.pipeline import Action, Schedule

    num_ranks = draw(st.integers(min_value=1, max_value=max_ranks))
    chunks = draw(st.integers(min_value=1, max_value=max_chunks))
    m = draw(st.integers(min_value=1, max_value=max_microbatches))
    split = draw(st.booleans()) if split is None else split
    p = num_ranks * chunks

    def deps(a):
        if a.kind == "F":
            return [Action("F", a.stage - 1, a.microbatch)] if a.stage > 0 else []
        if a.kind == "B":
            up = [Action("B", a.stage + 1, a.microbatch)] if a.stage < p - 1 else []
            return [Action("F", a.stage, a.microbatch), *up]
        return [Action("B", a.stage, a.microbatch)]

    kinds = ("F", "B", "W") if split else ("F", "B")
    todo = [Action(k, s, j) for k in kinds for s in range(p) for j in range(m)]
    done: set = set()
    order = []
    while todo:
        ready = [a for a in todo if all(d in done for d in deps(a))]
        pick = ready[draw(st.integers(min_value=0, max_value=len(ready) - 1))]
        todo.remove(pick)
        done.add(pick)
        order.append(pick)
    actions = tuple(tuple(a for a in order if a.stage % num_ranks == r) for r in range(num_ranks))
    return Schedule(p, m, num_ranks, actions, name="random")


# --- cost02: clock offsets (course_lib.clocks) ----------------------------------------------


@st.composite
def message_exchanges(draw, max_messages: int = 8, min_each: int = 1):
    """(theta, a_to_b, b_to_a, delays_ab, delays_ba): messages between clocks with t_A = t_B + θ,
    true send times in [0, 1000] s and strictly positive one-way delays in [1e-6, 0.05] s."""
    theta = draw(st.floats(-500.0, 500.0, allow_nan=False))
    n_ab = draw(st.integers(min_each, max_messages))
    n_ba = draw(st.integers(min_each, max_messages))
    times = st.floats(0.0, 1000.0, allow_nan=False)
    delays = st.floats(1e-6, 0.05, allow_nan=False)
    send_ab = draw(st.lists(times, min_size=n_ab, max_size=n_ab))  # true time (B's timeline)
    d_ab = draw(st.lists(delays, min_size=n_ab, max_size=n_ab))
    send_ba = draw(st.lists(times, min_size=n_ba, max_size=n_ba))
    d_ba = draw(st.lists(delays, min_size=n_ba, max_size=n_ba))
    a_to_b = [(s + theta, s + d) for s, d in zip(send_ab, d_ab, strict=True)]  # (S_A, R_B)
    b_to_a = [(s, s + d + theta) for s, d in zip(send_ba, d_ba, strict=True)]  # (S_B, R_A)
    return theta, a_to_b, b_to_a, d_ab, d_ba


# --- cost03: interval sets (course_lib.overlap) ----------------------------------------------


@st.composite
def grid_intervals(draw, max_size: int = 25, cells: int = 80, resolution: int = 4):
    """(N, 2) list of [start, end) intervals with endpoints on the grid k / resolution, k in
    0..cells: exact in floating point, so rasterizing on that grid measures lengths exactly.
    Zero-length and touching intervals occur."""
    n = draw(st.integers(0, max_size))
    rows = []
    for _ in range(n):
        a = draw(st.integers(0, cells))
        b = draw(st.integers(a, min(cells, a + cells // 4)))
        rows.append((a / resolution, b / resolution))
    return rows


# --- cost05: allocation events and allocator operations (course_lib.memory) ------------------


@st.composite
def alloc_events(draw, max_tensors: int = 12):
    """Events DataFrame (time, tensor, bytes, kind, category) of random lifetimes on an integer
    time grid, rows shuffled, index labels 100, 101, ...; some tensors are never freed, some live
    zero time, and frees often share a timestamp with allocations."""
    import pandas as pd

    n = draw(st.integers(1, max_tensors))
    rows = []
    for i in range(n):
        start = draw(st.integers(0, 20))
        nbytes = draw(st.integers(0, 4096))
        cat = draw(st.sampled_from(["activation", "weight", "workspace"]))
        rows.append((float(start), f"t{i}", nbytes, "alloc", cat))
        if draw(st.booleans()) or draw(st.booleans()):
            end = start + draw(st.integers(0, 10))
            rows.append((float(end), f"t{i}", nbytes, "free", cat))
    rows = draw(st.permutations(rows))
    df = pd.DataFrame(rows, columns=["time", "tensor", "bytes", "kind", "category"])
    df.index = range(100, 100 + len(df))
    return df


#: Request sizes spanning the allocator's regimes: < 512 B, small pool (<= 1 MiB), 1-10 MiB
#: (20 MiB segments) and >= 10 MiB (own segment rounded to 2 MiB).
ALLOC_SIZES = st.one_of(
    st.integers(0, 600),
    st.integers(1, 1 << 20),
    st.integers((1 << 20) + 1, 10 << 20),
    st.integers(10 << 20, 24 << 20),
)


@st.composite
def allocator_ops(draw, max_ops: int = 40):
    """Sequence of ("malloc", tensor, nbytes) / ("free", tensor, None) operations that is always
    valid: only live tensors are freed."""
    ops, live, next_id = [], [], 0
    for _ in range(draw(st.integers(1, max_ops))):
        if live and draw(st.booleans()):
            t = live.pop(draw(st.integers(0, len(live) - 1)))
            ops.append(("free", t, None))
        else:
            ops.append(("malloc", next_id, draw(ALLOC_SIZES)))
            live.append(next_id)
            next_id += 1
    return ops


# --- cost02: trace events (course_lib.trace) and generated profiles (course_lib.tracegen) -------

#: Kineto-ish names, categories (including ones the loader has never heard of) and ids.
TRACE_CATS = st.sampled_from(
    ["cpu_op", "kernel", "cuda_runtime", "user_annotation", "gpu_memcpy", "my_custom_cat"]
)
TRACE_IDS = st.one_of(st.integers(0, 2**31 - 1), st.sampled_from(["Spans", "Traces", ""]))


@st.composite
def trace_events(draw, max_events: int = 12):
    """List of event dicts in SECONDS (what write_trace takes): complete ("X") events on a 1 ns
    grid with optional args (correlation, unknown keys), instants ("i") without dur, metadata
    ("M") without ts, and unknown top-level fields."""
    events = []
    for _ in range(draw(st.integers(0, max_events))):
        ph = draw(st.sampled_from(["X", "X", "X", "i", "M"]))
        ev = {
            "ph": ph,
            "name": draw(st.text(min_size=0, max_size=8)),
            "pid": draw(TRACE_IDS),
            "tid": draw(TRACE_IDS),
        }
        if ph != "M":
            ev["ts"] = draw(st.integers(0, 10**13)) * 1e-9
            ev["cat"] = draw(TRACE_CATS)
        if ph == "X":
            ev["dur"] = draw(st.integers(0, 10**10)) * 1e-9
        if draw(st.booleans()):
            args = {"note": draw(st.text(max_size=5))}
            if draw(st.booleans()):
                args["correlation"] = draw(st.integers(0, 2**40))
            ev["args"] = args
        if draw(st.booleans()):
            ev["extra_field"] = draw(st.one_of(st.integers(-5, 5), st.text(max_size=4)))
        events.append(ev)
    return events


@st.composite
def dp_profile_kwargs(draw):
    """Small generate_dp_profile configurations (1-4 ranks, 1-5 layers, 1-2 steps)."""
    num_layers = draw(st.integers(1, 5))
    return {
        "num_ranks": draw(st.integers(1, 4)),
        "num_layers": num_layers,
        "num_buckets": draw(st.integers(1, num_layers)),
        "num_steps": draw(st.integers(1, 2)),
        "bandwidth": draw(st.sampled_from([5e9, 20e9, 100e9])),
        "jitter": draw(st.sampled_from([0.0, 0.05, 0.3])),
        "clock_offset": draw(st.sampled_from([0.0, 1e-3, 5e-3])),
        "clock_drift": draw(st.sampled_from([0.0, 20.0, 200.0])),
        "seed": draw(st.integers(0, 2**16)),
    }


# --- course home: a learner's saved check cells (course_lib.machinery.home) --------------------------

#: The state in which a learner saved one autograded check cell: never run, run and passed
#: (no error output), run and failed (an error output).
CHECK_CELL_STATES = st.lists(st.sampled_from(("not run", "passed", "failed")), max_size=12)


# --- pipe01: model specs and partitions (course_lib.pipeline.partition) ----------------------


@st.composite
def model_specs(draw, max_layers: int = 8):
    """A random ModelSpec of 1..max_layers layers on exact grids: times k/4 s, integer parameter
    counts, stashed bytes and cut bytes (zeros included), so sums, transfers 2A/β for β a power
    of two, and memory totals are exact in floating point."""
    from course_lib.pipeline.partition import ModelSpec

    n = draw(st.integers(1, max_layers))
    quarters = st.integers(0, 12).map(lambda k: k / 4)
    counts = st.integers(0, 64).map(float)

    def column(values):
        return draw(st.lists(values, min_size=n, max_size=n))

    cuts = draw(st.lists(st.integers(0, 8).map(float), min_size=n - 1, max_size=n - 1))
    return ModelSpec.from_arrays(
        column(quarters), column(quarters), column(counts), column(counts), cuts
    )
