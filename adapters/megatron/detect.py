"""The Megatron-LM adapter's class and its sniffing, kept apart from the reader.

Every file ``trainlint check`` meets is sniffed by every adapter, but only the files this
adapter claims need the shell evaluator, the flag tables and tree-sitter: those live in
:mod:`.adapter` and are imported the first time a file is loaded.
"""

from __future__ import annotations

import re
from functools import cache

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult
from trainlint.adapters.megatron.markers import FORMAT, model_args_yaml, yaml_flag_key
from trainlint.files.sources import SourceText

# The patterns of a launch script's content are compiled on first use (functools.cache): a check of
# JSON and YAML files never sniffs a script, and compiling them costs ~1 ms of every start.


@cache
def _sniff_flags() -> re.Pattern[str]:
    """Flags only Megatron-LM's launch lines use."""
    return re.compile(
        r"--(?:tensor-model-parallel-size|pipeline-model-parallel-size|num-layers|micro-batch-size|global-batch-size|"
        r"seq-length|max-position-embeddings|num-attention-heads|hidden-size|model-parallel-size|lr-decay-style|"
        r"train-iters|train-samples|tokenizer-type|use-distributed-optimizer|recompute-granularity|"
        r"checkpoint-activations|distributed-backend|make-vocab-size-divisible-by|ffn-hidden-size|"
        r"num-query-groups|context-parallel-size|expert-model-parallel-size|lr-warmup-fraction)\b")


@cache
def _entry_parts() -> tuple[re.Pattern[str], ...]:
    """Megatron-LM's entry points (``pretrain_gpt.py``, ``tasks/.../main.py``, ``train_rl.py``), each
    led by a literal so that a search over megabytes is fast (an alternation led by \\b is ~0.6 s
    over 8 MB); the \\b before the name is checked by hand."""
    return (re.compile(r"pretrain_[A-Za-z0-9_]+\.py\b"), re.compile(r"tasks/(?:[a-z_]+/)?main\.py\b"),
            re.compile(r"train_rl\.py\b"))


_ENTRY_PLAIN = ("multimodal/train.py", "mimo/train.py")


def _has_entry(text: str) -> bool:
    for rx in _entry_parts():
        for m in rx.finditer(text):
            before = text[m.start() - 1] if m.start() else " "
            if not (before.isalnum() or before == "_"):
                return True
    return any(re.search(re.escape(p) + r"\b", text) for p in _ENTRY_PLAIN if p in text)


class MegatronAdapter(Adapter):
    name = FORMAT
    extensions = (".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml")

    def spell_changes(self, spec, changes, base):
        from trainlint.adapters.megatron.spelling import spell_changes

        return spell_changes(spec, changes, base)

    def expressible(self, spec):
        from trainlint.adapters.megatron.spelling import expressible

        return expressible(spec)

    def writer(self, texts, result, spec, changes, index):
        from trainlint.adapters.megatron.writer import MegatronWriter

        return MegatronWriter(texts, result, spec, changes, index)

    def sniff(self, path: str, text: str) -> int:
        head = text[:262144]
        lower = path.lower()
        model_args = model_args_yaml(head)
        if lower.endswith((".yaml", ".yml")) or model_args:
            if model_args and yaml_flag_key().search(head):
                return BY_CONTENT + 10
            return NOT_MINE
        if lower.endswith(".json"):
            return NOT_MINE
        score = _score(head)
        if score == NOT_MINE and len(text) > len(head):
            # A launch line after 256 KB of comments is still a config: the rest is searched too
            # (linear, and bounded by the 8 MB read limit), so a padded script is not skipped.
            score = _score(text)
        return score

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        from trainlint.adapters.megatron.adapter import load_script, load_yaml

        if source.path.lower().endswith((".yaml", ".yml")) or (
                model_args_yaml(source.text[:262144]) and not source.path.lower().endswith((".sh", ".bash"))):
            return load_yaml(source, context)
        return load_script(source, context)


def _score(text: str) -> int:
    flags = set(_sniff_flags().findall(text))
    entry = _has_entry(text)
    if entry and flags:
        return BY_CONTENT + 20
    if len(flags) >= 3:
        return BY_CONTENT + 10
    if entry or len(flags) >= 2:
        return BY_CONTENT
    return NOT_MINE
