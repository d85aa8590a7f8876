"""TL125: optimizer.type is neither a DeepSpeed optimizer nor a torch.optim class name"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DEEPSPEED_OPTIMIZERS, DS, TORCH_OPTIMIZERS, _optimizer


class UnsupportedOptimizer(Rule):
    """## What it does
    Reports an `optimizer.type` DeepSpeed does not know: neither one of its own optimizers
    (compared lower-case: adagrad, adam, adamw, lamb, onebitadam, onebitlamb, zerooneadam,
    muadam, muadamw, musgd, lion, muon) nor a `torch.optim` class name (case-sensitive: `SGD`,
    not `sgd`).

    ## Why is this bad?
    DeepSpeed stops when it configures the optimizer.

    ## Example
    ```json
    {"optimizer": {"type": "sgd", "params": {"lr": 0.1}}}
    ```

    ## Fix
    Use one of DeepSpeed's names or the exact torch.optim class name.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1660-1661, 1692-1694` @ edaa722: "{} is not a
      supported DeepSpeed Optimizer"; names in `deepspeed/runtime/config.py:71-87`.
    """

    code = "TL125"
    release_dependent = False
    name = "ds-unsupported-optimizer"
    default_severity = Severity.ERROR
    summary = "optimizer.type is neither a DeepSpeed optimizer nor a torch.optim class name"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found = _optimizer(spec)
        if found is None:
            return
        name, value = found
        if name in DEEPSPEED_OPTIMIZERS or name in TORCH_OPTIMIZERS:
            return
        close = [t for t in TORCH_OPTIMIZERS if t.lower() == name.lower()]
        hint = f" (torch.optim's is spelled `{close[0]}`)" if close else ""
        yield Finding(f"optimizer type `{name}` is not a DeepSpeed optimizer nor a torch.optim class{hint}; DeepSpeed "
                      f"stops: \"{name} is not a supported DeepSpeed Optimizer\"", at=value,
                      fix=f"use `{close[0]}`" if close else "use a DeepSpeed optimizer name (adam, adamw, lamb, ...)")
