"""Plausible wrong answers to cost04_utilization's exercises; each must lose points when graded.

RIGHT_ANSWERS are other correct ways to the same numbers; they must keep full marks.
"""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: PaLM 540B model FLOPs per token --------------------------------------------------

_PALM = '_p = PALM_540B\n_N, _L, _H, _Q, _T = (_p[k] for k in ("num_params", "num_layers", "num_heads", "head_dim", "seq_len"))\n'


def _palm(expr: str) -> dict[str, str]:
    return {"palm_flops_answer": _PALM + f"palm_flops_per_token = {expr}\n"}


# --- Exercise 2: HFU of Megatron-LM's 1.7B configuration -----------------------------------------

_M = (
    "_m = MEGATRON_1P7B\n"
    '_B, _s, _l, _h, _V = (_m[k] for k in ("batch_size", "seq_len", "num_layers", '
    '"hidden_size", "vocab_size"))\n'
    '_time, _gpus = _m["iteration_time"], _m["num_gpus"]\n'
    '_peak = eligible_peak("A100 SXM 80GB", "bf16")\n'
)
_EXEC = "96 * _B * _s * _l * _h**2 * (1 + _s / (6 * _h) + _V / (16 * _l * _h))"
_MODEL = "72 * _B * _s * _l * _h**2 * (1 + _s / (6 * _h) + _V / (12 * _l * _h))"


def _hfu(flops: str, peak: str = "_peak", scale: str = "") -> dict[str, str]:
    return {"hfu_answer": _M + f"hfu_1p7b = {scale}{flops} / (_time * _gpus * {peak})\n"}


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
        cells=_palm("6 * _N"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="d_model_in_attention",
        why="12·L·d_model·T: takes H·Q = d_model, but PaLM's heads give 12288",
        cells=_palm('6 * _N + 12 * _L * _p["d_model"] * _T'),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="causal_half_attention",
        why="halves the attention term for the causal mask: PaLM counts the full T×T matrix",
        cells=_palm("6 * _N + 6 * _L * _H * _Q * _T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="forward_only",
        why="the forward pass alone, 2N + 4LHQT",
        cells=_palm("2 * _N + 4 * _L * _H * _Q * _T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="eight_n_with_recomputation",
        why="8N + 16LHQT: executed FLOPs with recomputation, not model FLOPs",
        cells=_palm("8 * _N + 16 * _L * _H * _Q * _T"),
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="teraflops_units",
        why="the count in TFLOPs (3.28) instead of FLOPs",
        cells=_palm("(6 * _N + 12 * _L * _H * _Q * _T) / 1e12"),
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
        cells=_hfu("96 * _B * _s * _l * _h**2 * (1 + _V / (16 * _l * _h))"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="eight_n_per_token",
        why="8N per token with N = 12lh² + Vh: no attention FLOPs",
        cells=_hfu("8 * (12 * _l * _h**2 + _V * _h) * _B * _s"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="sparse_a100_peak",
        why="divides by the A100's 2:4-sparse 624 TFLOP/s",
        cells=_hfu(_EXEC, peak='peak("A100 SXM 80GB", "bf16", sparse=True)'),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="peak_in_teraflops",
        why="the peak as 312 (TFLOP/s) against FLOPs: off by 1e12",
        cells=_hfu(_EXEC, peak="312"),
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hfu_percentage",
        why="40.8 instead of 0.408",
        cells=_hfu(_EXEC, scale="100 * "),
        grades=("hfu_tests",),
    ),
    # Exercise 3a.
    Mutant(
        name="sparse_peaks",
        why="every GPU claim against its 2:4-sparse peak (TPU v4 has none)",
        cells=_claims(
            '[peak(a, "bf16", sparse=not a.startswith("TPU")) for a in CLAIMS["accelerator"]]'
        ),
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
        name="tpu_per_tensorcore_peak",
        why="TPU v4 per TensorCore (137.5 TFLOP/s): a chip has two",
        cells=_claims(
            '[eligible_peak(a, "bf16") / (2 if a == "TPU v4" else 1) for a in CLAIMS["accelerator"]]'
        ),
        grades=("claim_mfu_tests",),
    ),
    Mutant(
        name="recomputation_counted",
        why="claim B's FLOPs scaled by 4/3 for its full recomputation: that is an HFU",
        cells=_claims(
            _DENSE,
            flops='CLAIMS["model_flops_per_token"] * np.where(CLAIMS["recompute"] == "full", 4 / 3, 1)',
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
        why="picks A, the only honest quote",
        cells={"sparse_claim_answer": 'sparse_claim = "A"\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="lowercase_letter",
        why="'c' instead of 'C'",
        cells={"sparse_claim_answer": 'sparse_claim = "c"\n'},
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
        name="window_without_downtime",
        why="the window minus the restart downtime",
        cells=_wall(
            f'{_J}["steps_kept"] * _F / (_cluster * ({_J}["window"] - {_J}["restart_downtime"]))'
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
        name="palm_from_course_lib",
        why="course_lib.flops.model_flops_per_token: the same formula",
        cells={
            "palm_flops_answer": (
                "from course_lib.flops import model_flops_per_token\n\n"
                + _PALM
                + "palm_flops_per_token = model_flops_per_token(_N, _L, _H, _Q, _T)\n"
            )
        },
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="hfu_per_token",
        why="executed FLOPs per token: 4/3 of the layers' 72lh² + 12lhs plus the logit layer's 6Vh "
        "(not recomputed), times B·s",
        cells={
            "hfu_answer": _M
            + "_per_token = 4 / 3 * (72 * _l * _h**2 + 12 * _l * _h * _s) + 6 * _V * _h\n"
            + "hfu_1p7b = _per_token * _B * _s / (_time * _gpus * _peak)\n"
        },
        grades=("hfu_tests",),
    ),
    Mutant(
        name="hfu_from_course_lib",
        why="course_lib.flops.megatron_flops_per_iteration(..., recompute=True) and hfu",
        cells={
            "hfu_answer": (
                "from course_lib.flops import hfu, megatron_flops_per_iteration\n\n"
                + _M
                + "_executed = megatron_flops_per_iteration(_B, _s, _l, _h, _V, recompute=True)\n"
                + "hfu_1p7b = hfu(_executed / _time / _gpus, _peak)\n"
            )
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
        name="wall_from_step_mfu",
        why="MFU_wall = MFU_step × S·t_step / T_wall",
        cells=_wall(
            f'_F / (_cluster * {_J}["step_time"]) * {_J}["steps_kept"] * {_J}["step_time"]'
            f' / {_J}["window"]'
        ),
        grades=("mfu_wall_tests",),
    ),
]
