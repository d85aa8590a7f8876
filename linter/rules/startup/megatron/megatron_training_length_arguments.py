"""TL162: iteration-based and sample-based training/LR options mixed"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class TrainingLengthArguments(MegatronRule):
    """## What it does
    Checks that iteration-based and sample-based training options are not mixed: `--train-iters`
    excludes `--train-samples`, `--lr-decay-samples` and `--lr-warmup-samples`; `--train-samples`
    excludes `--train-iters`, `--lr-decay-iters` and `--lr-warmup-iters`; `--lr-warmup-fraction`
    excludes the explicit warmup of the same kind.

    ## Why is this bad?
    `validate_args` asserts each of these (unless `--skip-train`).

    ## Example
    ```bash
    pretrain_gpt.py ... --train-iters 10000 --lr-decay-samples 1000000
    ```

    ## Fix
    Use one unit for the run length, the decay and the warmup.

    ## References
    * `megatron/training/arguments.py:1274-1302@d98e8a6`: "expected iteration-based training", "expected
      iteration-based learning rate decay", "expected iteration-based learning rate warmup", "can only specify
      one of lr-warmup-fraction and lr-warmup-iters", "expected sample-based training", "expected sample-based
      learning rate decay", "expected sample-based learnig rate warmup", "can only specify one of
      lr-warmup-fraction and lr-warmup-samples"
    """

    code = "TL162"
    name = "megatron-training-length-arguments"
    summary = "iteration-based and sample-based training/LR options mixed"

    _ITER = (("train_samples", "expected iteration-based training"),
             ("lr_decay_samples", "expected iteration-based learning rate decay"),
             ("lr_warmup_samples", "expected iteration-based learning rate warmup"))
    _SAMPLE = (("train_iters", "expected sample-based training"),
               ("lr_decay_iters", "expected sample-based learning rate decay"),
               ("lr_warmup_iters", "expected sample-based learnig rate warmup"))

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("train_iters", "train_samples", "lr_decay_samples", "lr_warmup_samples", "lr_decay_iters",
                 "lr_warmup_iters", "lr_warmup_fraction", "skip_train")
        if not a.known(*dests) or a.on("skip_train"):
            return
        for main, others, warmup in (("train_iters", self._ITER, "lr_warmup_iters"),
                                     ("train_samples", self._SAMPLE, "lr_warmup_samples")):
            if not a.get(main):
                continue
            for dest, message in others:
                value = a.get(dest)
                if (value is not None and value != 0) if dest.startswith("lr_warmup") else value is not None:
                    yield Finding(f"{a.flag(main)} {a.get(main)} with {a.flag(dest)} {value}: Megatron-LM stops with "
                                  f"\"{message}\"", at=a.at(dest), also=((a.at(main), "training length"),))
            if a.get("lr_warmup_fraction") is not None and a.get(warmup):
                yield Finding(f"--lr-warmup-fraction with {a.flag(warmup)}: Megatron-LM stops with \"can only specify one "
                              f"of lr-warmup-fraction and {warmup.replace('_', '-')}\"", at=a.at(warmup),
                              also=((a.at("lr_warmup_fraction"), "warmup fraction"),))
            return  # Megatron checks the iteration branch first; a run with both fails there
