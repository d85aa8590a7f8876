"""TL142: FSDP2 / Megatron-FSDP combined with options Megatron-LM refuses, or the wrong checkpoint format"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class FsdpArguments(MegatronRule):
    """## What it does
    Checks the combinations Megatron-LM refuses with `--use-torch-fsdp2` and `--use-megatron-fsdp`,
    and the checkpoint formats tied to them (`--ckpt-format torch_dcp`, `fsdp_dtensor`).

    ## Why is this bad?
    `validate_args` asserts each of them; the job stops before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --use-torch-fsdp2 --pipeline-model-parallel-size 2
    ```

    ## Fix
    FSDP2 runs without pipeline or expert parallelism, without the distributed optimizer, with
    `--no-gradient-accumulation-fusion`, `--untie-embeddings-and-output-weights`, bf16 or fp32, and
    `--ckpt-format torch_dist|torch_dcp`. Megatron-FSDP needs `--ckpt-format fsdp_dtensor` and the
    sgd or adam optimizer.

    ## References
    * `megatron/training/arguments.py:1031-1049@d98e8a6`: "--use-torch-fsdp2 is not supported with pipeline
      parallelism", "... with expert parallelism", "--use-torch-fsdp2 is not supported with MCore's distributed
      optimizer", "--use-torch-fsdp2 is not supported with gradient accumulation fusion", "--use-torch-fsdp2
      requires --ckpt-format torch_dist or torch_dcp", "--use-torch-fsdp2 requires
      --untie-embeddings-and-output-weights", "--use-torch-fsdp2 not supported with fp16 yet"
    * `megatron/training/arguments.py:1118-1170@d98e8a6`: "--megatron-fsdp-version 2 is not compatible with
      --use-distributed-optimizer", "Megatron-FSDP does not support the {optimizer} optimizer yet.",
      "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format."
    * `megatron/training/arguments.py:1667-1676@d98e8a6`: "--ckpt-format torch_dcp is only tested with FSDP.",
      "--ckpt-format torch_dcp is not tested with megatron tensor parallelism.", "... pipeline parallelism.",
      "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP."
    """

    code = "TL142"
    name = "megatron-fsdp-arguments"
    summary = "FSDP2 / Megatron-FSDP combined with options Megatron-LM refuses, or the wrong checkpoint format"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        pp, ep, tp = a.int_field("parallel.pipeline"), a.int_field("parallel.expert"), a.int_field("parallel.tensor")
        dests = ("use_torch_fsdp2", "use_distributed_optimizer", "gradient_accumulation_fusion", "ckpt_format",
                 "untie_embeddings_and_output_weights", "fp16", "use_megatron_fsdp", "megatron_fsdp_version", "optimizer")
        if not a.known(*dests):
            return
        fmt = a.get("ckpt_format")
        if a.on("use_torch_fsdp2"):
            fsdp = a.flag("use_torch_fsdp2")
            if pp is not None and pp > 1:
                yield Finding(f"{fsdp} with pipeline-model-parallel size {pp}: Megatron-LM stops with "
                              "\"--use-torch-fsdp2 is not supported with pipeline parallelism\"", at="parallel.pipeline",
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if ep is not None and ep > 1:
                yield Finding(f"{fsdp} with expert-model-parallel size {ep}: Megatron-LM stops with "
                              "\"--use-torch-fsdp2 is not supported with expert parallelism\"", at="parallel.expert",
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            for dest, message in (
                    ("use_distributed_optimizer", "--use-torch-fsdp2 is not supported with MCore's distributed optimizer"),
                    ("gradient_accumulation_fusion", "--use-torch-fsdp2 is not supported with gradient accumulation "
                                                     "fusion"),
                    ("fp16", "--use-torch-fsdp2 not supported with fp16 yet")):
                if a.on(dest):
                    hint = " (on by default: add --no-gradient-accumulation-fusion)" \
                        if dest == "gradient_accumulation_fusion" else ""
                    yield Finding(f"{fsdp} with {dest.replace('_', '-')}{hint}: Megatron-LM stops with \"{message}\"",
                                  at=a.at("use_torch_fsdp2") if dest == "gradient_accumulation_fusion" else a.at(dest),
                                  also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if fmt not in ("torch_dist", "torch_dcp"):
                yield Finding(f"{fsdp} with --ckpt-format {fmt}: Megatron-LM stops with \"--use-torch-fsdp2 requires "
                              "--ckpt-format torch_dist or torch_dcp\"", at=a.at_written("ckpt_format", "use_torch_fsdp2"),
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if not a.on("untie_embeddings_and_output_weights"):
                yield Finding(f"{fsdp} with tied embeddings: Megatron-LM stops with \"--use-torch-fsdp2 requires "
                              "--untie-embeddings-and-output-weights\"", at=a.at("use_torch_fsdp2"),
                              fix="add --untie-embeddings-and-output-weights")
        if a.on("use_megatron_fsdp"):
            fsdp = a.flag("use_megatron_fsdp")
            if a.get("megatron_fsdp_version") == 2 and a.on("use_distributed_optimizer"):
                yield Finding("--megatron-fsdp-version 2 with --use-distributed-optimizer: Megatron-LM stops with "
                              "\"--megatron-fsdp-version 2 is not compatible with --use-distributed-optimizer\"",
                              at=a.at("use_distributed_optimizer"))
            if a.get("optimizer") not in ("sgd", "adam"):
                yield Finding(f"{fsdp} with --optimizer {a.get('optimizer')}: Megatron-LM stops with \"Megatron-FSDP "
                              f"does not support the {a.get('optimizer')} optimizer yet.\"", at=a.at("optimizer"))
            if fmt != "fsdp_dtensor":
                yield Finding(f"{fsdp} with --ckpt-format {fmt}: Megatron-LM stops with \"Megatron-FSDP requires the "
                              "`fsdp_dtensor` checkpointing format.\"", at=a.at_written("ckpt_format", "use_megatron_fsdp"),
                              also=((a.at("use_megatron_fsdp"), "Megatron-FSDP enabled here"),),
                              fix="add --ckpt-format fsdp_dtensor")
        if fmt == "torch_dcp":
            if not a.on("use_torch_fsdp2"):
                yield Finding("--ckpt-format torch_dcp without --use-torch-fsdp2: Megatron-LM stops with "
                              "\"--ckpt-format torch_dcp is only tested with FSDP.\"", at=a.at("ckpt_format"))
            for size, field, what in ((tp, "parallel.tensor", "tensor"), (pp, "parallel.pipeline", "pipeline")):
                if size is not None and size > 1:
                    yield Finding(f"--ckpt-format torch_dcp with {what}-model-parallel size {size}: Megatron-LM stops "
                                  f"with \"--ckpt-format torch_dcp is not tested with megatron {what} parallelism.\"",
                                  at=a.at("ckpt_format"), also=((field, f"{what} parallel size"),))
        if fmt == "fsdp_dtensor" and not a.on("use_megatron_fsdp"):
            yield Finding("--ckpt-format fsdp_dtensor without --use-megatron-fsdp: Megatron-LM stops with "
                          "\"--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.\"", at=a.at("ckpt_format"))
