"""Plausible wrong answers to cost04_utilization's exercises; each must lose points when graded."""

from __future__ import annotations

from tests.mutants import Mutant

_PALM = (
    'PALM_540B["num_params"], PALM_540B["num_layers"], PALM_540B["num_heads"], '
    'PALM_540B["head_dim"], PALM_540B["seq_len"]'
)


def _megatron(hfu_expr: str, mfu_expr: str) -> dict[str, str]:
    """The Exercise 3 solution cell with the given HFU and MFU expressions."""
    return {
        "megatron_answer": (
            "_m = MEGATRON_1T\n"
            '_args = (_m["batch_size"], _m["seq_len"], _m["num_layers"], _m["hidden_size"], '
            '_m["vocab_size"])\n'
            "_model = megatron_flops_per_iteration(*_args, recompute=False)\n"
            "_executed = megatron_flops_per_iteration(*_args, recompute=True)\n"
            '_per_gpu = _m["achieved_flops"] / _m["num_gpus"]\n'
            f"megatron_hfu = {hfu_expr}\n"
            f"megatron_mfu = {mfu_expr}\n"
        )
    }


def _claims(flops_per_token: str, peak_expr: str, pick: str = "B") -> dict[str, str]:
    """The Exercise 4 solution cell with a FLOPs-per-token and a peak expression per claim."""
    return {
        "sparse_claim_answer": (
            "_mfus = {}\n"
            "for _claim, _row in CLAIMS.iterrows():\n"
            '    _l, _h, _heads, _q = GPT3_CONFIGS[_row["model"]]\n'
            f"    _fpt = {flops_per_token}\n"
            "    _mfus[_claim] = mfu_from_throughput(\n"
            f'        _row["tokens_per_second"], _fpt, _row["num_devices"], {peak_expr}\n'
            "    )\n"
            f'sparse_claim = "{pick}"\n'
            "corrected_mfu = _mfus[sparse_claim]\n"
        )
    }


_GOOD_FPT = 'model_flops_per_token(_row["num_params"], _l, _heads, _q, _row["seq_len"])'
_GOOD_PEAK = 'eligible_peak(_row["accelerator"], "bf16")'


def _time_bases(recompute: str, step_expr: str, wall_expr: str) -> dict[str, str]:
    """The Exercise 5 solution cell with the given FLOP count and MFU expressions."""
    return {
        "time_bases_answer": (
            "_r = RUN_175B\n"
            "_flops = megatron_flops_per_iteration(\n"
            '    _r["batch_size"], _r["seq_len"], _r["num_layers"], _r["hidden_size"],\n'
            f'    _r["vocab_size"], recompute={recompute},\n'
            ")\n"
            '_cluster = RUN_175B_GPUS * eligible_peak("A100 SXM 80GB", "bf16")\n'
            f"mfu_step_175b = {step_expr}\n"
            f"mfu_wall_175b = {wall_expr}\n"
        )
    }


_STEP = '_flops / (_cluster * JOB_LOG["step_time"])'
_WALL = 'JOB_LOG["steps_kept"] * _flops / (_cluster * JOB_LOG["window"])'

MUTANTS = [
    # Exercise 1: model FLOPs per token of PaLM 540B.
    Mutant(
        name="six_n_only",
        why="6N: leaves out the attention term 12LHQT",
        cells={"palm_flops_answer": 'palm_flops_per_token = 6 * PALM_540B["num_params"]\n'},
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="d_model_in_attention",
        why="12·L·d_model·T: takes H·Q = d_model, but PaLM's heads give 12288",
        cells={
            "palm_flops_answer": (
                "_p = PALM_540B\n"
                'palm_flops_per_token = 6 * _p["num_params"] + 12 * _p["num_layers"] * '
                '_p["d_model"] * _p["seq_len"]\n'
            )
        },
        grades=("palm_flops_tests",),
    ),
    Mutant(
        name="forward_only",
        why="the forward pass alone, a third of the training FLOPs",
        cells={"palm_flops_answer": f"palm_flops_per_token = model_flops_per_token({_PALM}) / 3\n"},
        grades=("palm_flops_tests",),
    ),
    # Exercise 2: PaLM's MFU.
    Mutant(
        name="mfu_with_six_n",
        why="MFU from 6N FLOPs per token",
        cells={
            "palm_mfu_answer": (
                "palm_mfu = mfu_from_throughput(\n"
                '    PALM_540B["tokens_per_second"], 6 * PALM_540B["num_params"],\n'
                '    PALM_540B["num_chips"], eligible_peak("TPU v4", "bf16"),\n'
                ")\n"
            )
        },
        grades=("palm_mfu_tests",),
    ),
    Mutant(
        name="one_pod",
        why="3072 chips: one pod, though the job ran on two",
        cells={
            "palm_mfu_answer": (
                "palm_mfu = mfu_from_throughput(\n"
                '    PALM_540B["tokens_per_second"], palm_flops_per_token, 3072,\n'
                '    eligible_peak("TPU v4", "bf16"),\n'
                ")\n"
            )
        },
        grades=("palm_mfu_tests",),
    ),
    Mutant(
        name="percentage",
        why="46.2 instead of 0.462",
        cells={
            "palm_mfu_answer": (
                "palm_mfu = 100 * mfu_from_throughput(\n"
                '    PALM_540B["tokens_per_second"], palm_flops_per_token,\n'
                '    PALM_540B["num_chips"], eligible_peak("TPU v4", "bf16"),\n'
                ")\n"
            )
        },
        grades=("palm_mfu_tests",),
    ),
    # Exercise 3: Megatron-LM 1T, HFU as published and MFU.
    Mutant(
        name="quoted_number_is_mfu",
        why="takes the published 52 % for the MFU: Eq. 3 counts recomputation",
        cells=_megatron(
            '_per_gpu / eligible_peak("A100 SXM 80GB", "bf16")',
            '_per_gpu / eligible_peak("A100 SXM 80GB", "bf16")',
        ),
        grades=("megatron_tests",),
    ),
    Mutant(
        name="ratio_inverted",
        why="multiplies by executed/model instead of model/executed",
        cells=_megatron(
            '_per_gpu / eligible_peak("A100 SXM 80GB", "bf16")',
            '_per_gpu * _executed / _model / eligible_peak("A100 SXM 80GB", "bf16")',
        ),
        grades=("megatron_tests",),
    ),
    Mutant(
        name="sparse_a100_peak",
        why="divides by the A100's 2:4-sparse 624 TFLOP/s",
        cells=_megatron(
            '_per_gpu / peak("A100 SXM 80GB", "bf16", sparse=True)',
            '_per_gpu * _model / _executed / peak("A100 SXM 80GB", "bf16", sparse=True)',
        ),
        grades=("megatron_tests",),
    ),
    # Exercise 4: the claim quoted against a sparse peak, and its corrected MFU.
    Mutant(
        name="picks_the_tf32_claim",
        why="picks D, whose ratio is 2 as well, but in the other direction",
        cells=_claims(_GOOD_FPT, _GOOD_PEAK, pick="D"),
        grades=("sparse_claim_tests", "corrected_mfu_tests"),
    ),
    Mutant(
        name="picks_the_hfu_claim",
        why="picks C, the HFU claim",
        cells=_claims(_GOOD_FPT, _GOOD_PEAK, pick="C"),
        grades=("sparse_claim_tests", "corrected_mfu_tests"),
    ),
    Mutant(
        name="lowercase_letter",
        why="'b' instead of 'B'",
        cells={"sparse_claim_answer": 'sparse_claim = "b"\ncorrected_mfu = 0.45201797\n'},
        grades=("sparse_claim_tests",),
    ),
    Mutant(
        name="keeps_the_quote",
        why="the right claim, but its quoted (sparse-peak) number as the correction",
        cells={"sparse_claim_answer": 'sparse_claim = "B"\ncorrected_mfu = 0.226\n'},
        grades=("corrected_mfu_tests",),
    ),
    Mutant(
        name="halves_again",
        why="halves the quote instead of doubling it",
        cells={"sparse_claim_answer": 'sparse_claim = "B"\ncorrected_mfu = 0.226 / 2\n'},
        grades=("corrected_mfu_tests",),
    ),
    Mutant(
        name="claims_with_six_n",
        why="every claim's MFU from 6N: claim B's correction comes out low",
        cells=_claims('6 * _row["num_params"]', _GOOD_PEAK),
        grades=("corrected_mfu_tests",),
    ),
    # Exercise 5: the same run on two time bases.
    Mutant(
        name="hfu_for_mfu",
        why="executed FLOPs (with recomputation) on both time bases",
        cells=_time_bases("True", _STEP, _WALL),
        grades=("time_bases_tests",),
    ),
    Mutant(
        name="redone_steps_count",
        why="the redone steps counted as progress on the wall-clock",
        cells=_time_bases(
            "False",
            _STEP,
            '(JOB_LOG["steps_kept"] + JOB_LOG["steps_redone"]) * _flops / '
            '(_cluster * JOB_LOG["window"])',
        ),
        grades=("time_bases_tests",),
    ),
    Mutant(
        name="kernel_time_as_step",
        why="kernel time as the step-time base",
        cells=_time_bases("False", '_flops / (_cluster * JOB_LOG["kernel_time"])', _WALL),
        grades=("time_bases_tests",),
    ),
    Mutant(
        name="wall_without_downtime",
        why="the window minus the restart downtime",
        cells=_time_bases(
            "False",
            _STEP,
            'JOB_LOG["steps_kept"] * _flops / '
            '(_cluster * (JOB_LOG["window"] - JOB_LOG["restart_downtime"]))',
        ),
        grades=("time_bases_tests",),
    ),
]
