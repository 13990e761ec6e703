"""Plausible wrong answers to cost04_utilization's exercises; each must lose points when graded.

RIGHT_ANSWERS are other correct ways to the same numbers; they must keep full marks.
"""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: flops_per_token(model), PaLM's 6N + 12LHQT ---------------------------------------

_PALM = (
    "def flops_per_token(model: dict) -> float:\n"
    '    """PaLM\'s model FLOPs per token of training."""\n'
    '    N, L, H, Q, T = (model[k] for k in ("num_params", "num_layers", "num_heads", "head_dim", '
    '"seq_len"))\n'
)


def _palm(expr: str, prelude: str = "") -> dict[str, str]:
    return {"palm_flops_answer": prelude + _PALM + f"    return {expr}\n"}


# --- Exercise 2: hfu_full_recompute(run, peak) ----------------------------------------------------

_M = (
    "def hfu_full_recompute(run: dict, peak: float) -> float:\n"
    '    """HFU of a GPT run with full recomputation."""\n'
    '    B, s, L, h, V = (run[k] for k in ("batch_size", "seq_len", "num_layers", "hidden_size", '
    '"vocab_size"))\n'
    '    time, gpus = run["iteration_time"], run["num_gpus"]\n'
)
_EXEC = "96 * B * s * L * h**2 * (1 + s / (6 * h) + V / (16 * L * h))"
_MODEL = "72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * L * h))"


def _hfu(flops: str, peak: str = "peak", scale: str = "", prelude: str = "") -> dict[str, str]:
    return {"hfu_answer": prelude + _M + f"    return {scale}{flops} / (time * gpus * {peak})\n"}


# --- Exercise 3: the claims ----------------------------------------------------------------------


def _claims(peaks: str, flops: str = 'CLAIMS["model_flops_per_token"]') -> dict[str, str]:
    return {
        "claim_mfu_answer": (
            f"_peaks = np.array({peaks})\n"
            f'claim_mfu = (CLAIMS["tokens_per_second"] * {flops}).to_numpy() / '
            '(CLAIMS["num_devices"].to_numpy() * _peaks)\n'
        )
    }


_DENSE = '[eligible_peak(a, "bf16") for a in CLAIMS["accelerator"]]'

# --- Exercise 4: one run, two time bases ---------------------------------------------------------

_RUN = (
    '_cluster = RUN_175B["num_gpus"] * eligible_peak("A100 SXM 80GB", "bf16")\n'
    '_F = RUN_175B["model_flops_per_step"]\n'
)


def _step(expr: str) -> dict[str, str]:
    return {"mfu_step_answer": _RUN + f"mfu_step_175b = {expr}\n"}


def _wall(expr: str) -> dict[str, str]:
    return {"mfu_wall_answer": _RUN + f"mfu_wall_175b = {expr}\n"}


_J = "JOB_LOG"

MUTANTS = [
    # Exercise 1.
    Mutant(
        name="six_n_only",
        why="6N: leaves out the attention term 12LHQT",
        cells=_palm("6 * N"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="d_model_in_attention",
        why="12·L·d_model·T: takes H·Q = d_model, but PaLM 540B's heads give 12288",
        cells=_palm('6 * N + 12 * L * model["d_model"] * T'),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="causal_half_attention",
        why="halves the attention term for the causal mask: PaLM counts the full T×T matrix",
        cells=_palm("6 * N + 6 * L * H * Q * T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="forward_only",
        why="the forward pass alone, 2N + 4LHQT",
        cells=_palm("2 * N + 4 * L * H * Q * T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="eight_n_with_recomputation",
        why="8N + 16LHQT: executed FLOPs with recomputation, not model FLOPs",
        cells=_palm("8 * N + 16 * L * H * Q * T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="teraflops_units",
        why="the count in TFLOPs (3.28) instead of FLOPs",
        cells=_palm("(6 * N + 12 * L * H * Q * T) / 1e12"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="hardcodes_palm_540b",
        why="returns PaLM 540B's value whatever the model: passes the visible check only",
        cells=_palm("3.277734806784e12"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="delegates_to_model_flops_per_token",
        why="course_lib.flops.model_flops_per_token: the routine the exercise asks you to write",
        cells=_palm(
            "model_flops_per_token(N, L, H, Q, T)",
            prelude="from course_lib.flops import model_flops_per_token\n\n\n",
        ),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="delegates_via_megatron_count",
        why="course_lib.flops.megatron_flops_per_iteration per token with B = 1 (and s = T)",
        cells=_palm(
            "megatron_flops_per_iteration(1, T, L, H * Q, 1, recompute=False) / T + 6 * (N - 12 * L * (H * Q) ** 2)",
            prelude="from course_lib.flops import megatron_flops_per_iteration\n\n\n",
        ),
        grades=("palm_flops_tests",),
    ),
    # Exercise 2.
    Mutant(
        name="mfu_not_hfu",
        why="the 72-form model FLOPs: that is the MFU, HFU counts the recomputed forward",
        cells=_hfu(_MODEL),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="four_thirds_of_model_flops",
        why="4/3 × model FLOPs (8N + 16LHQT per token): recomputes the logit layer too",
        cells=_hfu(_MODEL, scale="4 / 3 * "),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="attention_left_out",
        why="the 96-form without its s/6h attention term",
        cells=_hfu("96 * B * s * L * h**2 * (1 + V / (16 * L * h))"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="eight_n_per_token",
        why="8N per token with N = 12lh² + Vh: no attention FLOPs",
        cells=_hfu("8 * (12 * L * h**2 + V * h) * B * s"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="a100_peak_hardcoded",
        why="divides by the A100's 312 TFLOP/s instead of the peak passed in (the H100 case)",
        cells=_hfu(_EXEC, peak="312e12"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="not_per_gpu",
        why="the whole job's executed FLOP/s over one GPU's peak",
        cells={"hfu_answer": _M + f"    return {_EXEC} / (time * peak)\n"},
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hardcodes_1p7b",
        why="returns the 1.7B run's HFU whatever the run: passes the visible check only",
        cells={"hfu_answer": _M + "    return 0.407674122488745\n"},
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hfu_percentage",
        why="40.8 instead of 0.408",
        cells=_hfu(_EXEC, scale="100 * "),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="delegates_to_megatron_flops",
        why="course_lib.flops.megatron_flops_per_iteration(..., recompute=True): the routine the "
        "exercise asks you to write",
        cells=_hfu(
            "megatron_flops_per_iteration(B, s, L, h, V, recompute=True)",
            prelude="from course_lib.flops import megatron_flops_per_iteration\n\n\n",
        ),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="delegates_through_module_attribute",
        why="course_lib.flops.megatron_flops_per_iteration reached through a module alias bound "
        "before the grade cell",
        cells=_hfu(
            "_counters.megatron_flops_per_iteration(B, s, L, h, V, True)",
            prelude="import course_lib.flops as _counters\n\n\n",
        ),
        grades=("hfu_tests",),
    ),
    # Exercise 3a.
    Mutant(
        name="sparse_peaks",
        why="every claim against its 2:4-sparse peak",
        cells=_claims('[peak(a, "bf16", sparse=True) for a in CLAIMS["accelerator"]]'),
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="a100_tf32_peak",
        why="A100 against its TF32 peak (156 TFLOP/s), the dtype many tables list first",
        cells=_claims(
            '[peak(a, "tf32" if a.startswith("A100") else "bf16") for a in CLAIMS["accelerator"]]'
        ),
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="h100_peak_for_every_claim",
        why="the worked example's 989 TFLOP/s for every claim, the A100s included",
        cells=_claims('[eligible_peak("H100 SXM", "bf16")] * 4'),
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="recomputation_counted_for_175b",
        why="claim B's FLOPs scaled by 4/3 as if MFU counted its recomputation: that is an HFU",
        cells=_claims(
            _DENSE,
            flops='CLAIMS["model_flops_per_token"] * np.where(CLAIMS["model"] == "GPT-3 175B", 4 / 3, 1)',
        ),
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="quotes_copied",
        why="the quoted utilizations themselves",
        cells={"claim_mfu_answer": 'claim_mfu = CLAIMS["quoted_utilization"].to_numpy()\n'},
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="tokens_per_device",
        why="reads the whole job's tokens/s as per device: forgets to divide by the devices",
        cells={
            "claim_mfu_answer": (
                f"_peaks = np.array({_DENSE})\n"
                'claim_mfu = (CLAIMS["tokens_per_second"] * CLAIMS["model_flops_per_token"])'
                ".to_numpy() / _peaks\n"
            )
        },
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="claim_mfu_as_series",
        why="a pandas Series, not the numpy array asked for",
        cells={
            "claim_mfu_answer": (
                f"_peaks = np.array({_DENSE})\n"
                'claim_mfu = CLAIMS["tokens_per_second"] * CLAIMS["model_flops_per_token"] / '
                '(CLAIMS["num_devices"] * _peaks)\n'
            )
        },
        grades=("claim_mfu_tests",),
    ),
    # Exercise 3b.
    Mutant(
        name="picks_the_tf32_claim",
        why="picks D: its ratio is 2 as well, but the quote is inflated, not halved",
        cells={"sparse_claim_answer": 'sparse_claim = "D"\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="picks_the_hfu_claim",
        why="picks B, the HFU claim",
        cells={"sparse_claim_answer": 'sparse_claim = "B"\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="picks_the_honest_claim",
        why="picks A, the honest quote",
        cells={"sparse_claim_answer": 'sparse_claim = "A"\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="lowercase_letter",
        why="'c' instead of 'C' (the visible check now says so)",
        cells={"sparse_claim_answer": 'sparse_claim = "c"\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="letter_with_space",
        why="'C ' with a trailing space (the visible check now says so)",
        cells={"sparse_claim_answer": 'sparse_claim = "C "\n'},
        grades=("sparse_claim_tests",),
    ),
    # Exercise 4a.
    Mutant(
        name="compute_kernel_time_as_step",
        why="the compute-stream kernel time as the time base",
        cells=_step(f'_F / (_cluster * {_J}["compute_kernel_time"])'),
        grades=("mfu_step_tests",),
    ),
    Mutant(
        name="all_kernel_time_as_step",
        why="the union of all kernels, NCCL collectives included, as the time base",
        cells=_step(f'_F / (_cluster * {_J}["all_kernel_time"])'),
        grades=("mfu_step_tests",),
    ),
    Mutant(
        name="hfu_as_step_mfu",
        why="4/3 × the model FLOPs for the run's full recomputation: an HFU, not the MFU asked",
        cells=_step(f'4 / 3 * _F / (_cluster * {_J}["step_time"])'),
        grades=("mfu_step_tests",),
    ),
    Mutant(
        name="sparse_peak_step",
        why="against the A100's 2:4-sparse peak",
        cells={
            "mfu_step_answer": (
                '_cluster = RUN_175B["num_gpus"] * peak("A100 SXM 80GB", "bf16", sparse=True)\n'
                f'mfu_step_175b = RUN_175B["model_flops_per_step"] / (_cluster * {_J}["step_time"])\n'
            )
        },
        grades=("mfu_step_tests",),
    ),
    Mutant(
        name="per_gpu_flops_over_cluster",
        why="divides by one GPU's peak: forgets the 1024 GPUs",
        cells={
            "mfu_step_answer": (
                f'mfu_step_175b = RUN_175B["model_flops_per_step"] / '
                f'(eligible_peak("A100 SXM 80GB", "bf16") * {_J}["step_time"])\n'
            )
        },
        grades=("mfu_step_tests",),
    ),
    # Exercise 4b.
    Mutant(
        name="redone_steps_count",
        why="the redone steps counted as progress on the wall-clock",
        cells=_wall(
            f'({_J}["steps_kept"] + {_J}["steps_redone"]) * _F / (_cluster * {_J}["window"])'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="redone_steps_subtracted",
        why="subtracts the redone steps from the kept ones: they are already not in steps_kept",
        cells=_wall(
            f'({_J}["steps_kept"] - {_J}["steps_redone"]) * _F / (_cluster * {_J}["window"])'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="window_without_downtime",
        why="the window minus the restart downtime",
        cells=_wall(
            f'{_J}["steps_kept"] * _F / (_cluster * ({_J}["window"] - {_J}["restart_downtime"]))'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="window_without_planned_work",
        why="the window minus checkpoints and evaluation, as if planned pauses were not time",
        cells=_wall(
            f'{_J}["steps_kept"] * _F / (_cluster * ({_J}["window"] - {_J}["checkpoint_time"]'
            f' - {_J}["eval_time"]))'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="time_of_steps_run",
        why="the time of the steps run (kept + redone) × step time, not the window",
        cells=_wall(
            f'{_J}["steps_kept"] * _F / (_cluster * ({_J}["steps_kept"] + {_J}["steps_redone"])'
            f' * {_J}["step_time"])'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="step_mfu_as_wall",
        why="the step-time MFU reported as the wall-clock one",
        cells=_wall(f'_F / (_cluster * {_J}["step_time"])'),
        grades=("mfu_wall_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="palm_in_two_terms",
        why="the parameter term and the attention term computed apart, in ints, then added",
        cells=_palm(
            "float(6 * int(N)) + 12 * int(L) * int(H) * int(Q) * int(T)",
        ),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="palm_with_numpy",
        why="numpy's prod over the attention factors, a numpy float returned",
        cells=_palm("np.float64(6) * N + np.prod([12, L, H, Q, T], dtype=np.float64)"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="hfu_per_token",
        why="executed FLOPs per token: 4/3 of the layers' 72lh² + 12lhs plus the logit layer's 6Vh "
        "(not recomputed), times B·s",
        cells={
            "hfu_answer": _M
            + "    per_token = 4 / 3 * (72 * L * h**2 + 12 * L * h * s) + 6 * V * h\n"
            + "    return per_token * B * s / (time * gpus * peak)\n"
        },
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hfu_model_plus_recomputed_forward",
        why="the 72-form model FLOPs plus one more forward of every layer (24Bsh² + 4Bs²h each)",
        cells=_hfu(f"({_MODEL} + L * (24 * B * s * h**2 + 4 * B * s**2 * h))"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hfu_with_course_lib_division",
        why="the learner's own 96-form, divided by course_lib.flops.hfu (not a FLOP counter)",
        cells={
            "hfu_answer": "from course_lib.flops import hfu\n\n\n"
            + _M
            + f"    return hfu({_EXEC} / time / gpus, peak)\n"
        },
        grades=("hfu_tests",),
    ),
    Mutant(
        name="claims_row_by_row",
        why="a loop over the rows with the table's peak() (dense by default) into a list, then an array",
        cells={
            "claim_mfu_answer": (
                "_out = []\n"
                "for _claim, _row in CLAIMS.iterrows():\n"
                '    _rate = _row["tokens_per_second"] * _row["model_flops_per_token"]\n'
                '    _out.append(_rate / _row["num_devices"] / peak(_row["accelerator"], "bf16"))\n'
                "claim_mfu = np.array(_out)\n"
            )
        },
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="claims_with_mfu_from_throughput",
        why="course_lib.flops.mfu_from_throughput per claim: the learner still chooses the peak",
        cells={
            "claim_mfu_answer": (
                "from course_lib.flops import mfu_from_throughput\n\n"
                "claim_mfu = np.array([\n"
                '    mfu_from_throughput(r["tokens_per_second"], r["model_flops_per_token"],\n'
                '                        r["num_devices"], eligible_peak(r["accelerator"], "bf16"))\n'
                "    for _, r in CLAIMS.iterrows()\n"
                "])\n"
            )
        },
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="step_from_recomputed_72_form",
        why="the model FLOPs per step recomputed from the 175B shape with the 72-form",
        cells=_step(
            "72 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))"
            f' / (_cluster * {_J}["step_time"])'
        ),
        grades=("mfu_step_tests",),
    ),
    Mutant(
        name="wall_from_step_mfu",
        why="MFU_wall = MFU_step × S·t_step / T_wall",
        cells=_wall(
            f'_F / (_cluster * {_J}["step_time"]) * {_J}["steps_kept"] * {_J}["step_time"]'
            f' / {_J}["window"]'
        ),
        grades=("mfu_wall_tests",),
    ),
    Mutant(
        name="wall_from_sum_of_parts",
        why="the window rebuilt from its parts: steps run, checkpoints, evaluation, restarts, stalls",
        cells=_wall(
            f'{_J}["steps_kept"] * _F / (_cluster * (({_J}["steps_kept"] + {_J}["steps_redone"])'
            f' * {_J}["step_time"] + {_J}["checkpoint_time"] + {_J}["eval_time"]'
            f' + {_J}["restart_downtime"] + {_J}["input_stall_time"]))'
        ),
        grades=("mfu_wall_tests",),
    ),
]
