"""TL639: ``--batch-invariant-mode`` against what Megatron-Core's ``TransformerConfig`` runs
batch-invariantly (from the launch-check audit): FlashAttention only, and for MoE models the
all-to-all dispatcher, bf16, the unfused permutation and dropless routing (upstream)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_ON: Cond = ("batch_invariant_mode", "on")
_MOE: Cond = ("num_experts", ">", 0)
_FLASH = "Batch invariant mode only supports FlashAttention (--attention-backend flash)"
_BF16 = "Batch-invariant MoE is bf16-only. Disable fp8/fp4 to use it."
_UNFUSED = "Batch-invariant MoE requires the unfused permute/unpermute path"
_DROPLESS = "Batch-invariant MoE supports dynamic dropless routing only. Disable MoE capacity/expert padding."


class BatchInvariantArguments(CheckTable):
    """## What it does
    Checks `--batch-invariant-mode` against the options Megatron-Core requires with it: the
    FlashAttention backend (`--attention-backend flash`; the default `auto` is refused), and in
    MoE models (upstream) the `alltoall` dispatcher for training, no FP8/FP4, no permute fusion and
    no padding to capacity.

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --batch-invariant-mode        # --attention-backend is auto
    ```

    ## Fix
    Add `--attention-backend flash`; for MoE use `--moe-token-dispatcher-type alltoall` in bf16
    without permute fusion or capacity padding.
    """

    code = "TL639"
    name = "megatron-core-batch-invariant-arguments"
    summary = "batch-invariant mode with an attention backend or MoE options Megatron-Core refuses with it"
    checks = (
        _C(TCFG, 3216, "core_v0.19.0", _ON, ("attention_backend", "!=", "flash"), says=_FLASH),
        _C(TCFG, 2564, "core_v0.16.0", _ON, ("attention_backend", "!=", "flash"),
           says="Batch invariant mode only supports FlashAttention", last="core_v0.18.0"),
        _C(TCFG, 3242, "main", _ON, _MOE, ("transformer_impl", "!=", "inference_optimized"),
           ("moe_token_dispatcher_type", "!=", "alltoall"),
           says="Batch-invariant MoE training requires moe_token_dispatcher_type='alltoall'."),
        _C(TCFG, 3261, "main", _ON, _MOE, ("fp8", "set"), says=_BF16),
        _C(TCFG, 3261, "main", _ON, _MOE, ("fp4", "set"), says=_BF16),
        _C(TCFG, 3264, "main", _ON, _MOE, ("moe_permute_fusion", "on"), says=_UNFUSED),
        _C(TCFG, 3264, "main", _ON, _MOE, ("moe_permute_fusion_into_hybridep", "on"), says=_UNFUSED),
        _C(TCFG, 3268, "main", _ON, _MOE, ("moe_pad_expert_input_to_capacity", "on"), says=_DROPLESS),
        _C(TCFG, 3268, "main", _ON, _MOE, ("moe_pad_experts_for_cuda_graph_inference", "on"), says=_DROPLESS),
    )


BatchInvariantArguments.__doc__ = (BatchInvariantArguments.__doc__ or "").rstrip() + "\n" + \
    references(BatchInvariantArguments.checks)
