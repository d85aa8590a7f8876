"""TL140: --overlap-param-gather without the distributed optimizer or --overlap-grad-reduce"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.rules.startup.releases import Releases

# core_v0.4.0 asserts only the distributed optimizer; the --overlap-grad-reduce assertion came with
# core_v0.5.0 (megatron/training/arguments.py:174@0acc240e)
GRAD_REDUCE_REQUIRED = Releases("megatron", first="core_v0.5.0")


class OverlapParamGather(MegatronRule):
    """## What it does
    Checks the prerequisites of `--overlap-param-gather` and
    `--overlap-param-gather-with-optimizer-step`.

    ## Why is this bad?
    Megatron-LM asserts them in `validate_args` and the job stops before the first step:

    * `--overlap-param-gather` needs the distributed optimizer (or Megatron-FSDP, or
      `--optimizer dist_muon`) and `--overlap-grad-reduce`;
    * `--overlap-param-gather-with-optimizer-step` needs the distributed optimizer,
      `--overlap-param-gather`, the interleaved schedule (virtual pipeline stages) and the legacy
      `torch` checkpoint format (`use_dist_ckpt = ckpt_format != "torch"`, and the default
      format is `torch_dist`).

    ## Example
    ```bash
    pretrain_gpt.py ... --overlap-param-gather
    ```

    ## Fix
    Add `--use-distributed-optimizer --overlap-grad-reduce`, or drop `--overlap-param-gather`.

    ## References
    * `megatron/training/arguments.py:1024-1029@d98e8a6`: `assert args.use_distributed_optimizer or
      args.use_megatron_fsdp or args.optimizer == 'dist_muon'`, "--overlap-param-gather only supported
      with distributed optimizer, megatron fsdp, or dist_muon"; `assert args.overlap_grad_reduce`,
      "Must use --overlap-param-gather with --overlap-grad-reduce"
    * `megatron/training/arguments.py:174@0acc240e` (core_v0.5.0): the `--overlap-grad-reduce`
      assertion's first release; core_v0.4.0 asserts only the distributed optimizer
    * `megatron/training/arguments.py:1066-1074@d98e8a6`: "--overlap-param-gather-with-optimizer-step only
      supported with distributed optimizer", "Must use --overlap-param-gather-with-optimizer-step with
      --overlap-param-gather", "--overlap-param-gather-with-optimizer-step only supported with interleaved
      pipeline parallelism", "--overlap-param-gather-with-optimizer-step not supported with distributed
      checkpointing yet"
    """

    code = "TL140"
    name = "megatron-overlap-param-gather"
    summary = "--overlap-param-gather without the distributed optimizer or --overlap-grad-reduce"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        needs = ("overlap_param_gather", "use_distributed_optimizer", "use_megatron_fsdp", "optimizer",
                 "overlap_grad_reduce")
        if a.known(*needs) and a.on("overlap_param_gather"):
            if not (a.on("use_distributed_optimizer") or a.on("use_megatron_fsdp") or a.get("optimizer") == "dist_muon"):
                yield Finding(
                    f"{a.flag('overlap_param_gather')} without --use-distributed-optimizer: Megatron-LM stops with "
                    "\"--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon\"",
                    at=a.at("overlap_param_gather"), fix="add --use-distributed-optimizer")
            if not a.on("overlap_grad_reduce") and GRAD_REDUCE_REQUIRED.includes(a.spec.target):
                yield Finding(
                    f"{a.flag('overlap_param_gather')} without --overlap-grad-reduce: Megatron-LM stops with "
                    "\"Must use --overlap-param-gather with --overlap-grad-reduce\"",
                    at=a.at("overlap_param_gather"), fix="add --overlap-grad-reduce")
        dest = "overlap_param_gather_with_optimizer_step"
        if not (a.known(dest, *needs, "ckpt_format") and a.on(dest)):
            return
        if not a.on("use_distributed_optimizer"):
            yield Finding(f"{a.flag(dest)} without --use-distributed-optimizer: Megatron-LM stops with "
                          f"\"{a.flag(dest)} only supported with distributed optimizer\"", at=a.at(dest))
        if not a.on("overlap_param_gather"):
            yield Finding(f"{a.flag(dest)} without --overlap-param-gather: Megatron-LM stops with "
                          "\"Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather\"",
                          at=a.at(dest))
        known, vpp = a.vpp()
        if known and vpp is None:
            yield Finding(f"{a.flag(dest)} without virtual pipeline stages: Megatron-LM stops with "
                          "\"--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline "
                          "parallelism\"", at=a.at(dest),
                          also=(("parallel.pipeline", "pipeline size"),))
        if a.get("ckpt_format") != "torch":
            yield Finding(f"{a.flag(dest)} with --ckpt-format {a.get('ckpt_format')} (distributed checkpointing): "
                          "Megatron-LM stops with \"--overlap-param-gather-with-optimizer-step not supported with "
                          "distributed checkpointing yet\"", at=a.at(dest),
                          also=((a.at("ckpt_format"), "checkpoint format"),), fix="add --ckpt-format torch")
