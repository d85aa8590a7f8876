"""Example team plugin: our cluster's jobs must use bf16 (our GPUs have no fp16 loss-scaling budget)."""

from __future__ import annotations

from trainlint.plugin import Finding, Option, Rule, Severity, hookimpl


class RequireBf16(Rule):
    """## What it does
    Flags runs whose compute precision is not bf16.

    ## Why is this bad?
    Our cluster policy: fp16 runs need loss scaling and diverge more often; fp32 runs waste
    the tensor cores we pay for.

    ## Example
    ```json
    {"fp16": {"enabled": true}}
    ```

    ## Fix
    ```json
    {"bf16": {"enabled": true}}
    ```
    """

    code = "EX001"
    name = "require-bf16"
    summary = "Training must run in bf16 on our cluster."
    default_severity = Severity.WARNING
    options = {"allowed": Option(["bf16"], "compute dtypes that are allowed")}

    def check(self, spec, ctx):
        dtype = spec.get("precision.dtype")
        if dtype is not None and dtype.value not in ctx.options["allowed"]:
            yield Finding(f"compute dtype is {dtype.value}; cluster policy allows {', '.join(ctx.options['allowed'])}",
                          at="precision.dtype", fix="enable bf16 and disable fp16")


@hookimpl
def trainlint_rules():
    return [RequireBf16]
