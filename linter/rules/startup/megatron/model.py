"""TL158-TL160: model arguments (attention variants, encoder, position embeddings)."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
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


class EncoderArgumentsTwice(MegatronRule):
    """## What it does
    Checks that the layer count and the sequence length are each given once: `--num-layers` or
    `--encoder-num-layers`, `--seq-length` or `--encoder-seq-length`.

    ## Why is this bad?
    `validate_args` refuses both spellings together (they are the same setting for GPT models).

    ## Example
    ```bash
    pretrain_gpt.py ... --num-layers 24 --encoder-num-layers 24
    ```

    ## Fix
    Keep one of each pair.

    ## References
    * `megatron/training/arguments.py:1304-1306@d98e8a6`: "cannot have both num-layers and encoder-num-layers
      specified"
    * `megatron/training/arguments.py:1346-1347@d98e8a6`: `assert args.encoder_seq_length is None` when
      `--seq-length` is given
    """

    code = "TL159"
    name = "megatron-encoder-arguments-twice"
    summary = "--num-layers with --encoder-num-layers, or --seq-length with --encoder-seq-length"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.given("num_layers") and a.given("encoder_num_layers"):
            yield Finding("--num-layers and --encoder-num-layers are both given: Megatron-LM stops with \"cannot have "
                          "both num-layers and encoder-num-layers specified\"", at=a.at("encoder_num_layers"),
                          also=((a.at("num_layers"), "--num-layers"),))
        if a.given("seq_length") and a.given("encoder_seq_length"):
            yield Finding("--seq-length and --encoder-seq-length are both given: Megatron-LM's assertion "
                          "`args.encoder_seq_length is None` fails", at=a.at("encoder_seq_length"),
                          also=((a.at("seq_length"), "--seq-length"),))


class PositionEmbeddingArguments(MegatronRule):
    """## What it does
    Checks position-embedding flags: `--no-position-embedding` is only accepted with rotary
    embeddings; `--position-embedding-type mrope` needs `--mrope-section`.

    ## Why is this bad?
    Megatron-LM raises a RuntimeError for `--no-position-embedding` unless the position embedding
    type is `rope` (also set by `--use-rotary-position-embeddings`), and asserts the mrope section.

    ## Example
    ```bash
    pretrain_gpt.py ... --no-position-embedding
    ```

    ## Fix
    Use `--position-embedding-type rope` (or `none`) instead of `--no-position-embedding`.

    ## References
    * `megatron/training/arguments.py:1626-1634@d98e8a6`: `if not args.add_position_embedding and
      args.position_embedding_type != 'rope': raise RuntimeError('--no-position-embedding is deprecated, use
      --position-embedding-type')`
    * `megatron/training/arguments.py:1643-1645@d98e8a6`: "--mrope-section should be set when using
      --position-embedding-type mrope."
    """

    code = "TL160"
    name = "megatron-position-embedding-arguments"
    summary = "--no-position-embedding without rope, or mrope without --mrope-section"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("add_position_embedding", "position_embedding_type", "use_rotary_position_embeddings",
                       "mrope_section"):
            return
        kind = "rope" if a.on("use_rotary_position_embeddings") else a.get("position_embedding_type")
        if not a.on("add_position_embedding") and kind != "rope":
            yield Finding(f"--no-position-embedding with position embedding type {kind}: Megatron-LM raises "
                          "\"--no-position-embedding is deprecated, use --position-embedding-type\"",
                          at=a.at("add_position_embedding"),
                          fix="replace --no-position-embedding with --position-embedding-type rope (or none)")
        if kind == "mrope" and not a.get("mrope_section"):
            yield Finding("--position-embedding-type mrope without --mrope-section: Megatron-LM stops with "
                          "\"--mrope-section should be set when using --position-embedding-type mrope.\"",
                          at=a.at("position_embedding_type"))


RULES: list[type] = [
    AttentionVariantArguments,
    EncoderArgumentsTwice,
    PositionEmbeddingArguments,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
