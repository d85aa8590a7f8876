"""TL137: DeepSpeed config batch value that the Hugging Face Trainer's arguments contradict"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_DEEPSPEED_CONFIG
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec


class TrainerDeepSpeedMismatch(Rule):
    """## What it does
    Reports a DeepSpeed config run by the Hugging Face Trainer (``--deepspeed ds.json``, or accelerate's
    DeepSpeed plugin) that states `train_micro_batch_size_per_gpu` or `gradient_accumulation_steps`
    (accelerate's `deepspeed_config.gradient_accumulation_steps`) different from the Trainer's
    `per_device_train_batch_size` / `gradient_accumulation_steps` (as given, or their defaults 8 and 1).
    Only where the Trainer is known to run the config: the script is given the Trainer's `--deepspeed`
    argument, or its TrainingArguments are read from an arguments file (TRL's `--config`, a lone
    `args.yaml`), or a LLaMA-Factory / axolotl YAML names the JSON; DeepSpeed's own `--deepspeed_config`
    and a custom accelerate loop have no such check.

    ## Why is this bad?
    The Trainer fills the config's `"auto"` values from its arguments and checks the values the config
    states against them; when they differ it stops before training: "Please correct the following
    DeepSpeed config values that mismatch TrainingArguments values". A common case is an accelerate
    config written by `accelerate config` with `gradient_accumulation_steps: 1` and a recipe that
    accumulates more.

    ## Example
    ```yaml
    # accelerate config
    distributed_type: DEEPSPEED
    deepspeed_config:
      gradient_accumulation_steps: 1
      zero_stage: 3
    # launched as: accelerate launch --config_file zero3.yaml sft.py --gradient_accumulation_steps 4
    ```

    ## Fix
    Write `"auto"` in the DeepSpeed JSON (or leave `gradient_accumulation_steps` out of the accelerate
    config, or pass the same `--gradient_accumulation_steps N` to `accelerate launch`), or give the
    Trainer the same value.

    ## References
    - transformers `src/transformers/integrations/deepspeed.py`: `HfTrainerDeepSpeedConfig.fill_match`
      (a stated value different from the TrainingArguments one is a mismatch) and
      `trainer_config_process` (`train_micro_batch_size_per_gpu` <- `per_device_train_batch_size`,
      `gradient_accumulation_steps` <- `gradient_accumulation_steps`); `trainer_config_finalize` raises.
    - accelerate `src/accelerate/utils/dataclasses.py` `DeepSpeedPlugin`: an accelerate config's
      `gradient_accumulation_steps` becomes the DeepSpeed config's.
    """

    code = "TL137"
    release_dependent = False
    name = "hf-trainer-deepspeed-mismatch"
    default_severity = Severity.ERROR
    summary = "DeepSpeed config batch value that the Hugging Face Trainer's arguments contradict"
    requires = frozenset({CAP_DEEPSPEED_CONFIG})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        b = spec.batch
        for stated, trainer, ds_name, hf_name in (
                (b.micro_batch, b.trainer_micro_batch, "train_micro_batch_size_per_gpu", "per_device_train_batch_size"),
                (b.grad_accum, b.trainer_grad_accum, "gradient_accumulation_steps", "gradient_accumulation_steps")):
            if stated is None or trainer is None or stated.value == trainer.value:
                continue
            how = "given" if trainer.provenance.origin.value == "file" else "its default"
            yield Finding(
                f"the DeepSpeed config states {ds_name} {stated.value} but the Trainer's {hf_name} is "
                f"{trainer.value} ({how}); the Trainer stops: \"Please correct the following DeepSpeed config "
                "values that mismatch TrainingArguments values\"",
                at=stated, also=((trainer, f"the Trainer's {hf_name}"),),
                fix=f"write \"auto\" for {ds_name} (the Trainer fills it), or make the two agree")
