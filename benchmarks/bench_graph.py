"""Timings of course_lib.graph and gantt (cost01): explorer calls must answer in < 100 ms.

Run: .venv/bin/python benchmarks/bench_graph.py   (prints figures; asserts nothing)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_lib import graph as G  # noqa: E402
from course_lib.figures.graph import gantt  # noqa: E402
from tests.test_graph import example_step  # noqa: E402


def best_ms(fn, repeat: int = 7) -> float:
    """Best wall time of fn() over `repeat` runs, in milliseconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * min(times)


def random_step(num_ops: int, seed: int) -> G.nx.DiGraph:
    """Random layered DAG with about 3 edges per op, durations 0..5 ms."""
    rng = np.random.default_rng(seed)
    names = [f"op{i}" for i in range(num_ops)]
    durations = dict(zip(names, rng.uniform(0, 5e-3, num_ops).tolist(), strict=True))
    deps = []
    for j in range(1, num_ops):
        for i in rng.integers(max(0, j - 20), j, size=min(3, j)):
            deps.append((names[int(i)], names[j]))
    return G.step_graph(durations, deps)


def main() -> None:
    g = example_step()
    ds = np.linspace(0, 10e-3, 201)
    print("example data-parallel step (15 ops):")
    print(f"  step_graph        {best_ms(example_step):7.3f} ms")
    print(f"  step_time         {best_ms(lambda: G.step_time(g)):7.3f} ms")
    print(f"  schedule          {best_ms(lambda: G.schedule(g)):7.3f} ms")
    print(f"  critical_path     {best_ms(lambda: G.critical_path(g)):7.3f} ms")
    print(
        f"  step_time_curve   {best_ms(lambda: G.step_time_curve(g, 'bwd_2', ds)):7.3f} ms (201 d)"
    )
    print(f"  useful_reduction  {best_ms(lambda: G.useful_reduction(g, 'bwd_2')):7.3f} ms")
    sched = G.schedule(g)

    def draw():
        ax = gantt(sched)
        ax.figure.canvas.draw()
        plt.close(ax.figure)

    print(f"  gantt + draw      {best_ms(draw, 3):7.3f} ms")
    for n in (1_000, 10_000):
        big = random_step(n, seed=0)
        e = big.number_of_edges()
        print(f"random DAG, {n} ops, {e} edges:")
        print(f"  step_time         {best_ms(lambda b=big: G.step_time(b), 3):7.3f} ms")
        print(f"  schedule          {best_ms(lambda b=big: G.schedule(b), 3):7.3f} ms")
        print(f"  path_bounds       {best_ms(lambda b=big: G.path_bounds(b, 'op7'), 3):7.3f} ms")


if __name__ == "__main__":
    main()
