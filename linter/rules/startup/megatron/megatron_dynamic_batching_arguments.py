"""TL603: inference dynamic batching sizes validate_args refuses (core_v0.13.0 to core_v0.17.0)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document


class DynamicBatchingArguments(ReleaseCheckTable):
    """## What it does
    Checks the KV-cache sizes of inference dynamic batching (`--inference-dynamic-batching`): the
    chunk size (core_v0.13.0, core_v0.14.0) and the block size (core_v0.15.0 to core_v0.17.0) must
    be multiples of 256.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.16.0"}
    pretrain_gpt.py ... --inference-dynamic-batching --inference-dynamic-batching-block-size 100
    ```

    ## Fix
    Use a multiple of 256.
    """

    code = "TL603"
    name = "megatron-dynamic-batching-arguments"
    summary = "inference dynamic batching with a KV-cache chunk or block size that is not a multiple of 256"
    checks = (
        R(ARGS, 1047, "core_v0.13.0", "core_v0.14.0", ("inference_dynamic_batching_chunk_size", "not a multiple of", 256),
          ("inference_dynamic_batching", "on"), says="chunk size should be a multiple of 256"),
        R(ARGS, 1448, "core_v0.15.0", "core_v0.17.0", ("inference_dynamic_batching_block_size", "not a multiple of", 256),
          ("inference_dynamic_batching", "on"), says="block size should be a multiple of 256"),
    )


document(DynamicBatchingArguments)
RULES: list[type] = [DynamicBatchingArguments]
