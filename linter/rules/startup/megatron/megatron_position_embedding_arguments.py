"""TL160: --no-position-embedding without rope, or mrope without --mrope-section"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


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
