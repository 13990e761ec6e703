"""pipe04's explorer: interleaved 1F1B over v chunks per rank — its grid, rank 0's stashes, and
the bubble, crossings and step against the closed forms."""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import fmt_ms, metrics_table
from course_lib.explorers.fill_drain import FillDrainExplorer, _rgb255, pipeline_sliders

MAX_CHUNKS = 8


class InterleavedExplorer(FillDrainExplorer):
    """Interleaved 1F1B grid (a rank's chunks >= 1 darker, as the lesson's figure hatches them),
    rank 0's stashed activations in microbatches,
    and step time, overhead, crossings and peak stash: closed form beside the simulator (pipe04).

    Built on pipe02's explorer (pixel-written grid, cached backgrounds, hand-written PNG): well
    under 100 ms per change at p = 16, m = 64, v = 4 (benchmarks/bench_interleaved_explorer.py).
    A (p, m, v) the schedule refuses (PyTorch 2.13's rule) leaves the grid empty and says why.
    ``last_metrics`` maps each metric to its (closed form, simulator) pair (NaN where no closed
    form holds).
    """

    refused = ""
    """The reason the current (p, m, v) is refused, or "" when it runs."""

    def _build(self) -> None:
        from matplotlib.patches import Rectangle

        from course_lib.figures.pipeline import SCHEDULE_COLOURS

        super()._build()
        fig = self.figure
        _, stash = self.axes
        stash.set_ylabel("stashed on rank 0\n(microbatches)", labelpad=30)
        darker = [_rgb255(_shade(SCHEDULE_COLOURS[k], 0.62)) for k in ("F", "B")]
        self._palette = np.concatenate([self._palette, np.array(darker, dtype=np.uint8)])
        opaque = np.concatenate([self._palette, np.full((len(self._palette), 1), 255)], axis=1)
        self._palette_rgba = opaque.astype(np.uint8).view(np.uint32)[:, 0]
        left = self.GRID_RECT[0] + self.GRID_RECT[2] + 0.02
        top = self.GRID_RECT[1] + self.GRID_RECT[3]
        for i, (rgb, text) in enumerate(zip(darker, ("chunk ≥ 1 F", "chunk ≥ 1 B"), strict=True)):
            y = top - 0.06 * (i + 4)
            colour = tuple(c / 255 for c in rgb)
            fig.patches.append(
                Rectangle((left, y), 0.025, 0.04, transform=fig.transFigure, facecolor=colour)
            )
            fig.text(left + 0.035, y + 0.02, text, va="center", fontsize=10)
        self._canvas.draw()
        self._base = self._canvas.copy_from_bbox(fig.bbox)
        self._backgrounds = {}
        self._stash_title = fig.text(
            self.STASH_RECT[0], self.STASH_RECT[1] + self.STASH_RECT[3] + 0.01, "",
            ha="left", va="bottom", fontsize=10,
        )  # fmt: skip
        self._message = fig.text(
            self.GRID_RECT[0] + self.GRID_RECT[2] / 2, self.GRID_RECT[1] + self.GRID_RECT[3] / 2,
            "", ha="center", va="center", fontsize=11, wrap=True,
        )  # fmt: skip

    def _action_codes(self, run: Any) -> np.ndarray:
        """F 2, B 3 on a rank's chunk 0 (stage < p), 5 and 6 (darker) on its chunks >= 1."""
        codes = super()._action_codes(run)
        later = run.events["stage"].to_numpy() >= run.schedule.num_ranks
        return np.where(later & (codes < 4), codes + 3, codes)

    def _draw_frame(  # type: ignore[override]
        self, *, num_ranks: int, num_microbatches: int, chunks_per_rank: int, latency_ms: float
    ) -> str:
        from course_lib.figures.style import count_label, time_unit
        from course_lib.pipeline import boundary_crossings, interleaved_overhead
        from course_lib.pipeline.interleaving import (
            acceptance,
            crossings_per_microbatch,
            interleaved_makespan,
            peak_rank_stash,
            rank_stash,
            stash_rule_holds,
        )

        p, m, v, delta = num_ranks, num_microbatches, chunks_per_rank, latency_ms * 1e-3
        t_f, t_b = self.forward_time, self.backward_time
        verdict = acceptance(p, m, v)
        canvas, fig = self._canvas, self.figure
        grid, stash = self.axes
        head = (
            f"<b>interleaved 1F1B: {p} rank{'s' * (p != 1)} × {v} chunk{'s' * (v != 1)}, "
            f"{m} microbatch{'es' * (m != 1)}</b> · per rank t_f = {t_f * 1e3:g} ms, "
            f"t_b = {t_b * 1e3:g} ms (a chunk: t_f/v, t_b/v) · δ = {latency_ms:.2f} ms · "
            f"Megatron-LM {'accepts' if verdict.megatron else 'refuses'}, PyTorch 2.13 "
            f"{'accepts' if verdict.pytorch or v == 1 else 'refuses'}"
        )
        if not (verdict.pytorch or v == 1):
            self.refused = verdict.reason
            self.title = (
                f"refused: {count_label(p, 'rank')}, "
                f"{count_label(m, 'microbatch', 'microbatches')}, {count_label(v, 'chunk')}"
            )
            self.last_metrics = {}
            canvas.restore_region(self._background(p, "ms"))
            self._message.set_text(
                f"No schedule: m = {m} is not a multiple of rounds = max(1, m // p) = "
                f"{verdict.rounds}. Try m = {verdict.rounds * (m // verdict.rounds)} or "
                f"{verdict.rounds * (m // verdict.rounds + 1)}."
            )
            fig.draw_artist(self._message)
            self._labels = []
            return head + f"<p><b>Refused.</b> {verdict.reason}</p>"
        self.refused = ""
        run = _cached_run(p, m, v, t_f, t_b, delta)
        span = run.makespan if run.makespan > 0 else 1.0
        scale, unit = time_unit(span)
        canvas.restore_region(self._background(p, unit))
        left, right, top, bottom = self._grid_px
        pixels = np.asarray(canvas.buffer_rgba()).view(np.uint32)[:, :, 0]
        pixels[top:bottom, left:right] = self._palette_rgba[
            self._grid_codes(run, right - left, bottom - top)
        ]
        grid.set_xlim(0.0, span)
        grid.set_ylim(p - 0.5, -0.5)
        times, counts = rank_stash(run, 0)
        peak = counts.max() / v
        stash.set_xlim(0.0, span)
        stash.set_ylim(0, max(peak, 1.0) * 1.35)
        self._draw_time_ticks(span, scale)
        self._draw_stash(times, counts / v, float(f"{peak:.3g}"))
        self._stash_title.set_text(
            f"rank 0 stashes, in microbatches (a chunk's stash is 1/{v}): peak {peak:.3g}"
        )
        fig.draw_artist(self._stash_title)
        self._draw_labels(run, (right - left) / span)

        try:
            closed_step = interleaved_makespan(p, m, v, t_f, t_b, delta)
            step_formula = "max(vm+p−1, m+vp−1)(t_f+t_b)/v" + (" + 2(vp−1)δ" if delta else "")
        except ValueError:
            closed_step, step_formula = float("nan"), "none: δ no longer hides (simulate)"
        ideal = m * (t_f + t_b)
        if v == 1:
            stash_formula = "min(m, p), 1F1B"
        elif stash_rule_holds(p, m, v):
            stash_formula = "p + (p−1)/v (p | m, m ≥ 2p)"
        else:
            stash_formula = "min(v·m, w + 1)/v, w warm-up forwards"
        crossings = crossings_per_microbatch(p, v).between_ranks
        rows_raw = [
            ("step time", closed_step, run.makespan, step_formula, fmt_ms),
            (
                "overhead vs ideal compute",
                interleaved_overhead(p, m, v) if delta == 0 else closed_step / ideal - 1,
                run.overhead,
                "(p−1)/(v·m)" if delta == 0 else "step / (m(t_f+t_b)) − 1",
                _pct,
            ),
            ("forward crossings per microbatch", boundary_crossings(p, v), crossings,
             "v·p − 1 (0 if p = 1)", str),
            ("peak stash on rank 0 (microbatches)", peak_rank_stash(p, m, v), peak,
             stash_formula, lambda x: f"{x:.3g}"),
        ]  # fmt: skip
        self.last_metrics = {
            name: (float(closed), float(simulated)) for name, closed, simulated, *_ in rows_raw
        }
        rows, disagree = [], []
        for name, closed, simulated, formula, fmt in rows_raw:
            if np.isnan(closed):
                rows.append((name, "—", formula, fmt(simulated), ""))
                continue
            same = abs(closed - simulated) <= 1e-9 * max(1.0, abs(closed))
            if not same:
                disagree.append(name)
            rows.append(
                (name, fmt(closed), formula, fmt(simulated), "yes" if same else "<b>no</b>")
            )
        self.title = (
            f"interleaved 1F1B: {count_label(p, 'rank')} × {count_label(v, 'chunk')}, "
            f"{count_label(m, 'microbatch', 'microbatches')} — overhead "
            f"{_pct(run.overhead)} of ideal compute"
        )
        table = metrics_table(rows, ("", "closed form", "formula", "simulate()", "agree"))
        notes = []
        if not verdict.overhead_formula_holds:
            notes.append(
                f"m = {m} &lt; p = {p}: PyTorch accepts it, but the {m} microbatches cannot fill "
                f"the loop round {p} ranks; the step is (m + v·p − 1) chunk slots, not "
                "(p − 1)/(v·m) of overhead."
            )
        if v > 1 and m == p > 1:
            notes.append(
                f"m = p = {p}: rank 0's warm-up covers all {v * m} chunk forwards, so it peaks "
                f"at p = {p} microbatches, not p + (p − 1)/v = {p + (p - 1) / v:.3g} (that needs "
                "m ≥ 2p)."
            )
        if np.isnan(closed_step):
            notes.append(
                "With this δ the latency no longer hides behind other chunks' work (δ &gt; t_f/v, "
                "plain 1F1B, or PyTorch's groups of more than p microbatches): only the "
                "simulator answers."
            )
        if disagree and verdict.overhead_formula_holds:
            notes.append("<b>A closed form and the simulator disagree: please report this.</b>")
        return head + table + "".join(f"<p><i>{n}</i></p>" for n in notes)


def _pct(fraction: float) -> str:
    """A percentage to two decimals: 18.75 %, so a closed form and a simulator that agree to
    1e-9 never print different roundings."""
    return f"{fraction:.2%}"


def _shade(colour: str, factor: float) -> tuple[float, float, float]:
    """``colour`` darkened towards black by ``factor`` (1 keeps it)."""
    from matplotlib.colors import to_rgb

    return tuple(c * factor for c in to_rgb(colour))  # type: ignore[return-value]


@functools.lru_cache(maxsize=128)
def _cached_run(p: int, m: int, v: int, t_f: float, t_b: float, delta: float) -> Any:
    """simulate(interleaved_1f1b(p, m, v), t_f/v, t_b/v, δ): a revisited setting is free."""
    from course_lib.pipeline import simulate

    return simulate(_cached_schedule(p, m, v), t_f / v, t_b / v, p2p_latency=delta)


@functools.lru_cache(maxsize=64)
def _cached_schedule(p: int, m: int, v: int) -> Any:
    from course_lib.pipeline import interleaved_1f1b

    return interleaved_1f1b(p, m, v)


def interleaved_explorer(
    num_ranks: int = 4,
    num_microbatches: int = 8,
    chunks_per_rank: int = 2,
    forward_time: float = 1e-3,
    backward_time: float = 2e-3,
    p2p_latency: float = 0.0,
) -> InterleavedExplorer:
    """Explorer: p, m, v and latency δ -> interleaved 1F1B grid, rank 0's stashes, closed forms
    beside simulate() (pipe04).

    Sliders num_ranks p (1-16), num_microbatches m (1-64), chunks_per_rank v (1-8) and the
    point-to-point latency δ in ms (0 to 2·t_f). ``forward_time`` and ``backward_time`` are one
    microbatch over a rank's whole share of the layers; a chunk costs 1/v of them. Refused
    (p, m, v) (PyTorch 2.13's rule; any m at v = 1) show the reason instead of a grid.
    """
    from course_lib.pipeline._validate import check_int

    p = check_int("num_ranks", num_ranks)
    if p > 16:
        raise ValueError(f"the explorer covers num_ranks 1..16, got {p}")
    sliders, t_f, t_b = pipeline_sliders(
        num_ranks, num_microbatches, forward_time, backward_time, p2p_latency
    )
    v = check_int("chunks_per_rank", chunks_per_rank)
    if v > MAX_CHUNKS:
        raise ValueError(f"the explorer covers chunks_per_rank 1..{MAX_CHUNKS}, got {v}")
    ranks = sliders["num_stages"]
    ranks.description = "ranks p"
    wide = {"description_width": "initial"}
    controls = {
        "num_ranks": ranks,
        "num_microbatches": sliders["num_microbatches"],
        "chunks_per_rank": widgets.IntSlider(
            value=v, min=1, max=MAX_CHUNKS, description="chunks v", style=wide
        ),
        "latency_ms": sliders["latency_ms"],
    }
    return InterleavedExplorer(controls, forward_time=t_f, backward_time=t_b)
