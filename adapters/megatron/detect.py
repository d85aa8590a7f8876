"""The Megatron-LM adapter's class and its sniffing, kept apart from the reader.

Every file ``trainlint check`` meets is sniffed by every adapter, but only the files this
adapter claims need the shell evaluator, the flag tables and tree-sitter: those live in
:mod:`.adapter` and are imported the first time a file is loaded.
"""

from __future__ import annotations

import re

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult
from trainlint.sources import SourceText

FORMAT = "megatron"

_SNIFF_FLAGS = re.compile(
    r"--(?:tensor-model-parallel-size|pipeline-model-parallel-size|num-layers|micro-batch-size|global-batch-size|"
    r"seq-length|max-position-embeddings|num-attention-heads|hidden-size|model-parallel-size|lr-decay-style|"
    r"train-iters|train-samples|tokenizer-type|use-distributed-optimizer|recompute-granularity|"
    r"checkpoint-activations|distributed-backend|make-vocab-size-divisible-by|ffn-hidden-size|"
    r"num-query-groups|context-parallel-size|expert-model-parallel-size|lr-warmup-fraction)\b")
_SNIFF_ENTRY = re.compile(r"\bpretrain_[A-Za-z0-9_]+\.py\b|\btasks/(?:[a-z_]+/)?main\.py\b|\btrain_rl\.py\b|"
                          r"(?:multimodal|mimo)/train\.py\b")
_SNIFF_YAML = re.compile(r"^MODEL_ARGS:[ \t]*(?:#.*)?$", re.M)
_YAML_FLAG_KEY = re.compile(r"^[ \t]+[\"']?--[A-Za-z]", re.M)


class MegatronAdapter(Adapter):
    name = FORMAT
    extensions = (".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml")

    def sniff(self, path: str, text: str) -> int:
        head = text[:262144]
        lower = path.lower()
        if lower.endswith((".yaml", ".yml")) or _SNIFF_YAML.search(head):
            if _SNIFF_YAML.search(head) and _YAML_FLAG_KEY.search(head):
                return BY_CONTENT + 10
            return NOT_MINE
        if lower.endswith(".json"):
            return NOT_MINE
        flags = set(_SNIFF_FLAGS.findall(head))
        entry = _SNIFF_ENTRY.search(head) is not None
        if entry and flags:
            return BY_CONTENT + 20
        if len(flags) >= 3:
            return BY_CONTENT + 10
        if entry or len(flags) >= 2:
            return BY_CONTENT
        return NOT_MINE

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        from trainlint.adapters.megatron.adapter import load_script, load_yaml

        if source.path.lower().endswith((".yaml", ".yml")) or (
                _SNIFF_YAML.search(source.text[:262144]) and not source.path.lower().endswith((".sh", ".bash"))):
            return load_yaml(source, context)
        return load_script(source, context)
