"""TL159: --num-layers with --encoder-num-layers, or --seq-length with --encoder-seq-length"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


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
