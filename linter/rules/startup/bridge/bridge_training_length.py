"""TL670: a Bridge run's length or LR schedule stated two ways, or a schedule shorter than the run"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import CONFIG_PY, BridgeRule, Fields, positive_int


class TrainingLength(BridgeRule):
    """## What it does
    Checks how a Megatron-Bridge run states its length and its learning-rate schedule, as
    `TrainingConfig.finalize`, `SchedulerConfig.finalize` and
    `ConfigContainer._validate_training_scheduler_compatibility` / `_calculate_scheduler_steps` do: exactly
    one of `train.train_iters`, `train.train_samples`, `train.num_epochs`; no iteration-based scheduler
    fields (`lr_decay_iters`, `lr_warmup_iters`, `lr_wsd_decay_iters`) with sample-based ones; not
    `lr_warmup_fraction` together with `lr_warmup_iters` / `lr_warmup_samples`; `scheduler.max_steps`
    positive and at least `train.train_iters`.

    ## Why is this bad?
    Each is an `AssertionError` or `ValueError` inside `pretrain()`, after the job has waited for its GPUs.

    ## Example
    ```yaml
    train:
      train_iters: 1000
      train_samples: 512000
    ```

    ## Fix
    Keep one way of stating the length, and schedule fields of the same kind.
    """

    code = "TL670"
    name = "bridge-training-length"
    summary = "a Bridge run's length or LR schedule stated two ways, or a schedule shorter than the run"

    def findings(self, f: Fields) -> Iterator[Finding]:
        modes = [p for p in ("train.train_iters", "train.train_samples", "train.num_epochs") if f.get(p) is not None]
        if len(modes) > 1:
            yield Finding(f"{' and '.join('`' + m + '`' for m in modes)} are both given: Bridge stops with \"Cannot "
                          f"specify more than one of train_iters, train_samples, or num_epochs\" ({CONFIG_PY}, "
                          "TrainingConfig.finalize)", at=f.at(modes[1]), also=((f.at(modes[0]), "also given here"),))
        elif not modes and f.entry("train.train_iters") is not None:
            yield Finding("none of `train.train_iters`, `train.train_samples`, `train.num_epochs` is set: Bridge stops "
                          "with \"One of train_iters, train_samples, or num_epochs must be provided\"",
                          at=f.at("train.train_iters"))
        for path in ("train.train_iters", "train.train_samples"):
            v = f.get(path)
            if positive_int(v) and v <= 0:
                yield Finding(f"`{path}` is {v}: the run has no steps (\"train_samples must be positive\" / "
                              "\"lr_decay_steps must be > 0\")", at=f.at(path))
        iters = [p for p in ("scheduler.lr_decay_iters", "scheduler.lr_wsd_decay_iters") if f.get(p) is not None] + \
            [p for p in ("scheduler.lr_warmup_iters",) if f.get(p, 0) not in (0, None)]
        samples = [p for p in ("scheduler.lr_decay_samples", "scheduler.lr_wsd_decay_samples") if f.get(p) is not None] + \
            [p for p in ("scheduler.lr_warmup_samples",) if f.get(p, 0) not in (0, None)]
        if iters and samples:
            yield Finding(f"iteration-based `{iters[0]}` and sample-based `{samples[0]}` scheduler fields together: "
                          "Bridge stops with \"Cannot mix iteration-based and sample-based scheduler fields\" "
                          "(SchedulerConfig.finalize)", at=f.at(samples[0]), also=((f.at(iters[0]), "iteration field"),))
        elif f.get("train.train_samples") is not None and iters:
            yield Finding(f"sample-based training (`train.train_samples`) with `{iters[0]}`: Bridge stops with \"Use "
                          "lr_*_samples for sample-based training\" (_validate_training_scheduler_compatibility)",
                          at=f.at(iters[0]), also=((f.at("train.train_samples"), "sample-based here"),))
        elif f.get("train.train_iters") is not None and f.get("train.train_samples") is None and samples:
            yield Finding(f"iteration-based training (`train.train_iters`) with `{samples[0]}`: Bridge stops with \"Use "
                          "lr_*_iters for iteration-based training\" (_validate_training_scheduler_compatibility)",
                          at=f.at(samples[0]), also=((f.at("train.train_iters"), "iteration-based here"),))
        if f.get("scheduler.lr_warmup_fraction") is not None and (iters or samples) and \
                any(p.startswith("scheduler.lr_warmup_") for p in iters + samples):
            warm = next(p for p in iters + samples if p.startswith("scheduler.lr_warmup_"))
            yield Finding(f"`scheduler.lr_warmup_fraction` with `{warm}`: Bridge stops with \"Cannot specify "
                          "lr_warmup_fraction with lr_warmup_iters or lr_warmup_samples\"",
                          at=f.at("scheduler.lr_warmup_fraction"), also=((f.at(warm), "also a warmup"),))
        max_steps, train_iters = f.get("scheduler.max_steps"), f.get("train.train_iters")
        if positive_int(max_steps) and max_steps <= 0:
            yield Finding(f"`scheduler.max_steps` is {max_steps}: Bridge stops with \"scheduler.max_steps must be "
                          "positive\"", at=f.at("scheduler.max_steps"))
        elif positive_int(max_steps) and positive_int(train_iters) and max_steps < train_iters:
            yield Finding(f"`scheduler.max_steps` {max_steps} is below `train.train_iters` {train_iters}: Bridge stops "
                          "with \"scheduler.max_steps ... must be greater than or equal to train.train_iters\"",
                          at=f.at("scheduler.max_steps"), also=((f.at("train.train_iters"), "train_iters here"),))
