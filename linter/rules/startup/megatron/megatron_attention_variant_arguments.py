"""TL158: --multi-latent-attention with GQA, or --num-query-groups without --group-query-attention"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class AttentionVariantArguments(MegatronRule):
    """## What it does
    Checks the attention variant flags: `--multi-latent-attention` excludes
    `--group-query-attention`; `--num-query-groups` without `--group-query-attention` is ignored.

    ## Why is this bad?
    MLA with GQA stops Megatron-LM. `--num-query-groups` only takes effect with
    `--group-query-attention`; without it Megatron builds plain multi-head attention (one KV head per
    query head), with more KV memory and a different checkpoint layout than the script intends.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-attention-heads 32 --num-query-groups 8
    ```

    ## Fix
    Add `--group-query-attention` next to `--num-query-groups`; do not combine GQA with MLA.

    ## References
    * `megatron/training/arguments.py:1973-1974@d98e8a6`: "Group query attention is mutually exclusive with
      multi latent attention."
    * `megatron/training/argument_utils.py:330-333@d98e8a6`: `if args.group_query_attention:
      kw_args['num_query_groups'] = args.num_query_groups else: kw_args['num_query_groups'] = None`
    """

    code = "TL158"
    name = "megatron-attention-variant-arguments"
    summary = "--multi-latent-attention with GQA, or --num-query-groups without --group-query-attention"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("multi_latent_attention", "group_query_attention"):
            return
        if a.on("multi_latent_attention") and a.on("group_query_attention"):
            yield Finding("--multi-latent-attention with --group-query-attention: Megatron-LM stops with \"Group query "
                          "attention is mutually exclusive with multi latent attention.\"",
                          at=a.at("group_query_attention"), also=((a.at("multi_latent_attention"), "MLA"),))
        elif a.given("num_query_groups") and not a.on("group_query_attention") and not a.on("multi_latent_attention"):
            yield Finding(f"--num-query-groups {a.get('num_query_groups')} without --group-query-attention is ignored: "
                          "Megatron-LM builds multi-head attention with one KV head per attention head",
                          at=a.at("num_query_groups"), severity=Severity.WARNING, fix="add --group-query-attention")
