"""Which Megatron-LM entry points train: what the launch line's script is for.

The Megatron adapter asks it while reading (a size below trainlint's minimum does not apply to a
script that builds no model from it), and the rules ask it through the adapter: the estimate
scope (:mod:`trainlint.rules.estimation.scope`: no training estimate for a generation server),
Megatron's own checks that hold only with gradients on, and the world-size check (a checkpoint
converter sets its own world size).
"""

from __future__ import annotations

import re


class _Lazy:
    """A pattern compiled on its first search: only a Megatron-LM entry point is ever searched, and
    compiling these four costs ~0.5 ms of every start (a DeepSpeed JSON check included)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled.search(text)


# Megatron-LM entry points that do not train: text generation servers and samplers
# (tools/run_text_generation_server.py, generate_samples_gpt.py), inference, checkpoint conversion,
# quantization and pruning (examples/post_training/modelopt), tasks/ (zero-shot evaluation, or
# downstream fine-tuning of classification heads: tasks/main.py --task RACE | MNLI | LAMBADA ...), and
# dataset tools that parse Megatron's arguments only to build the dataset (Megatron-DeepSpeed's
# data_efficiency/analyze_data.py, tools/preprocess_data*.py): no model is built, so no GPU memory.
_NOT_TRAINING_ENTRY = _Lazy(
    r"(^|/)(tasks/(\w+/)?main|\w*text_generation\w*|generate_samples\w*|\w*_inference\w*|\w*inference_server\w*|"
    r"convert\w*|\w*quantize\w*|prune|export\w*|\w*_eval\w*|evaluate\w*|analyze_data|preprocess_data\w*)\.py$")

# The same, by name (main's reading): anything generating, running inference, quantising, exporting,
# converting or evaluating that is not a pretrain_* script.
_NOT_TRAINING_NAME = _Lazy(
    r"(^|[/.])(\w*(generat|inference|text_gen|ptq|quantiz|export|convert|evaluat)\w*)(\.py)?$", re.IGNORECASE)


# Entry points that rewrite checkpoints (convert formats, merge or split model-parallel partitions):
# they set the world size Megatron's checks see themselves ("Arguments do sanity checks on the world
# size, but we don't care, so trick it into thinking we are plenty of processes": WORLD_SIZE or
# margs.world_size = TP x PP in Megatron's tools/checkpoint loaders and savers, WORLD_SIZE=TP in front
# of merge_mp_partitions.py), so the processes launched say nothing about the parallel layout.
_CHECKPOINT_TOOL = _Lazy(
    r"(^|/)(\w*convert\w*|merge_mp\w*|\w*_mp_partitions|split_mp\w*|\w*checkpoint_util\w*|loader_\w+|saver_\w+)\.py$")


def trains(entry: str | None) -> bool:
    """Whether a Megatron entry point trains (None: no entry point named, assumed to)."""
    if not entry:
        return True
    return not (_NOT_TRAINING_ENTRY.search(entry) or _CHECKPOINT_TOOL.search(entry) or (
        _NOT_TRAINING_NAME.search(entry) and "pretrain" not in entry.rsplit("/", 1)[-1]))


def rewrites_checkpoints(entry: str | None) -> bool:
    """A checkpoint conversion tool: it sets its own world size (see _CHECKPOINT_TOOL)."""
    return entry is not None and bool(_CHECKPOINT_TOOL.search(entry.replace("\\", "/")))
